"""What rules judge in a call: the tool's main argument, as the tool declares it
(``Tool.subject``), cut into the parts each rule must cover.

For ``execute_command`` a command line is split into its simple commands (``a && b | c $(d)``
has four); each is matched on its own. A part written with an output redirection to a file, or
a line that could not be parsed, is *untrusted*: no allow rule covers it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from cmdop_tui.tools.base import SubjectKind, Tool
from cmdop_tui.tools.registry import declared_tool

from .parsing import WRITE_REDIRECTS, parse_full
from .scanning import substitutions

# the arguments an undeclared tool's rules match, the first that is a string
_GUESSED_ARGUMENTS = ("command", "path", "pattern", "hostname")
# the argument naming the machines of a call that runs on many (run_on_machines)
FANOUT_ARGUMENT = "machines"
# redirections that write nowhere that matters
_SAFE_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"})


def declaration(tool: str, spec: Tool | None) -> Tool | None:
    """`spec`, or else the built-in tool called `tool` (None for a tool nobody declared)."""
    return spec if spec is not None else declared_tool(tool)


def subject_kind(tool: str, spec: Tool | None = None) -> SubjectKind | None:
    """What the tool's main argument names: a command, a path, a host, or nothing declared."""
    declared = declaration(tool, spec)
    return declared.subject.kind if declared is not None and declared.subject is not None else None


def main_argument(tool: str, args: Mapping[str, Any], *, spec: Tool | None = None) -> str | list[str]:
    """The argument rules match for this call (a list for ask_machines' hostnames).

    `spec` is the tool's declaration (None: the built-in tool called `tool`). A tool that
    declares no subject (or a subject without a main argument) is matched on the first of its
    command, path, pattern or hostname arguments that is a string.
    """
    declared = declaration(tool, spec)
    if declared is None or declared.subject is None or not declared.subject.argument:
        for key in _GUESSED_ARGUMENTS:
            value = args.get(key)
            if isinstance(value, str):
                return value
        return ""
    return declared.subject.value(args)


def fanout_hosts(args: Mapping[str, Any]) -> list[str]:
    """The machines a call that runs on many names (its `machines`: names, `tag:T`, groups),
    each once, in order; [] for a call that runs on one machine."""
    raw = args.get(FANOUT_ARGUMENT)
    if not isinstance(raw, list):
        return []
    return list(dict.fromkeys(str(item).strip() for item in raw if str(item).strip()))


@dataclass(frozen=True)
class Part:
    """One piece of a call that rules judge: a simple command, a path, a host."""

    text: str
    trusted: bool = True  # False: allow rules do not apply (output redirection, unparseable)


def call_parts(tool: str, args: Mapping[str, Any], spec: Tool | None = None) -> list[Part]:
    """The parts of this call: each simple command of a command line, each host of a list."""
    argument = main_argument(tool, args, spec=spec)
    if subject_kind(tool, spec) == "command":
        return command_parts(argument if isinstance(argument, str) else "")
    if isinstance(argument, list):
        return [Part(host) for host in argument] or [Part("")]
    return [Part(argument)]


def command_parts(command: str) -> list[Part]:
    """The simple commands of a command line, each as its own text, for rule matching."""
    nodes, src, exact = parse_full(command)
    if nodes is None or not exact:
        return [Part(" ".join(command.split()), trusted=False)]
    parts: list[Part] = []
    for node in nodes:
        _collect_parts(node, src, parts)
    return parts or [Part("", trusted=True)]


def _collect_parts(node: Any, src: str, out: list[Part]) -> None:
    for current in _iter_nodes_ordered(node):
        if current.kind != "command":
            continue
        pieces: list[str] = []
        trusted = True
        for part in current.parts:
            raw = src[part.pos[0] : part.pos[1]]
            if part.kind in ("word", "assignment"):
                pieces.append(raw)
                for inner in substitutions(raw):
                    out.extend(command_parts(inner))
            elif part.kind == "redirect":
                target = part.output
                if (
                    part.type in WRITE_REDIRECTS
                    and hasattr(target, "pos")
                    and src[target.pos[0] : target.pos[1]] not in _SAFE_TARGETS
                ):
                    trusted = False
        out.append(Part(" ".join(" ".join(pieces).split()), trusted))


def _iter_nodes_ordered(node: Any) -> Iterable[Any]:
    """The nodes under `node` in the order they are written (the words of commands left out)."""
    yield node
    for attr in ("parts", "list"):
        children = getattr(node, attr, None)
        if isinstance(children, list):
            for child in children:
                if child.kind in ("word", "assignment", "redirect"):
                    continue
                yield from _iter_nodes_ordered(child)
    body = getattr(node, "body", None)
    if body is not None and hasattr(body, "kind"):
        yield from _iter_nodes_ordered(body)
    yield from getattr(node, "redirects", None) or ()
