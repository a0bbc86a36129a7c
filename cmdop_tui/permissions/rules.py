"""Rules: ``[machine:]tool(argument glob)`` with a verdict ``allow``, ``ask`` or ``deny``, and how
an argument glob matches a command, a path or a host name (see :class:`Rule`).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeGuard

from cmdop_tui.tools.base import Tool

from .arguments import subject_kind
from .scanning import match_close

Verdict = Literal["allow", "ask", "deny"]
VERDICTS: tuple[str, ...] = ("allow", "ask", "deny")
MCP_PREFIX = "mcp__"  # the tools of MCP servers: mcp__SERVER__TOOL

_RULE_TEXT = re.compile(
    # the machine glob may hold an escaped `\:` (`tag\:web:run_on_machines(...)`, what "Allow always"
    # saves for a call over a tag)
    r"^\s*(?:(?P<machine>(?:\\.|[^:()\s\\])(?:\\.|[^:()\\])*):)?(?P<tool>[A-Za-z_*?][\w*?-]*)(?:\((?P<arg>.*)\))?\s*$",
    re.DOTALL,
)


def is_verdict(value: object) -> TypeGuard[Verdict]:
    return value in VERDICTS


@dataclass(frozen=True)
class Rule:
    """One permission rule: ``[machine:]tool(argument)`` with a verdict.

    Syntax: ``execute_command(git status *)``, ``read_file(/etc/**)``, ``write_file(~/projects/**)``,
    ``execute_command(!rm *)`` (a leading ``!`` negates the argument match: the rule applies when
    the argument does *not* match), ``web1:execute_command(systemctl status *)`` (only on
    machine web1; the machine is a glob too, ``web*:``; no prefix: every machine, ``local:``
    this one). The tool is a name or a glob (``*``): ``mcp__github__*`` is every tool of the MCP
    server github, and so is ``mcp__github``. ``tool`` alone, or ``tool(*)``, matches any
    argument. The argument matched is the tool's main argument (``Tool.subject``; see
    :func:`.arguments.main_argument`).

    Glob semantics, by what the tool's subject names:
      * commands (execute_command): the command line as a string, whitespace collapsed; ``*``
        matches any characters (spaces and ``/`` included), ``?`` one character, ``\\`` escapes
        the next character; a trailing `` *`` also matches nothing, so ``git status *`` matches
        ``git status`` and ``git status -s``. Each simple command of a line is matched on its
        own (see :mod:`.decisions`), so ``*`` never reaches across ``;``, ``&&``, ``|`` or into
        ``$( )``; an allow rule never covers a command with an output redirection to a file,
        nor one that could not be parsed.
      * paths (read_file, write_file, list_dir, grep, glob): ``*`` and ``?`` stay within one path
        segment, ``**`` spans any number of segments (``/etc/**`` matches ``/etc`` and everything
        below it), ``[abc]`` is a character class and ``{a,b}`` alternatives. ``~`` is the home
        directory (on the local machine); ``..`` is resolved before matching, so
        ``~/projects/**`` does not match ``~/projects/../.bashrc``. Relative paths are resolved
        against the session's directory when a decision is given ``cwd``.
      * machine names (ask_machine, ask_machines; rule prefixes) and anything else: like paths.
    """

    tool: str
    pattern: str = "*"
    verdict: Verdict = "allow"
    machine: str | None = None
    negate: bool = False
    source: str = "session"  # "session" or "global"
    note: str | None = None

    @classmethod
    def parse(cls, text: str, verdict: str = "allow", *, source: str = "session", note: str | None = None) -> Rule:
        """A rule from its text; ValueError says what is wrong."""
        if not isinstance(text, str) or not text.strip():
            raise ValueError("empty rule")
        if not is_verdict(verdict):
            raise ValueError(f"verdict must be one of {', '.join(VERDICTS)}, not {verdict!r}")
        match = _RULE_TEXT.match(text)
        if not match:
            raise ValueError(f"cannot read rule {text!r}: expected tool(argument), e.g. execute_command(git status *)")
        arg = match.group("arg")
        negate = False
        if arg is None:
            arg = "*"
        elif arg.startswith("!"):
            negate, arg = True, arg[1:]
        machine = match.group("machine")
        return cls(
            tool=match.group("tool"),
            pattern=arg,
            verdict=verdict,
            machine=machine.strip() if machine else None,
            negate=negate,
            source=source,
            note=note,
        )

    @property
    def text(self) -> str:
        """The rule as written in the file, e.g. ``web1:execute_command(!rm *)``."""
        prefix = f"{self.machine}:" if self.machine else ""
        return f"{prefix}{self.tool}({'!' if self.negate else ''}{self.pattern})"

    def __str__(self) -> str:
        return self.text

    def applies_to(self, tool: str, machine: str) -> bool:
        """Does the rule concern this tool on this machine (whatever the argument)?"""
        if not (_glob_name(self.tool, tool) or _mcp_server_rule(self.tool, tool)):
            return False
        return self.machine is None or _glob_name(self.machine, machine)

    def scoped_to(self, machine: str) -> bool:
        """Is the rule scoped to machines, `machine` among them (by its own name)?"""
        return self.machine is not None and _glob_name(self.machine, machine)

    def matches_argument(
        self, tool: str, argument: str, *, machine: str = "local", cwd: str | None = None, spec: Tool | None = None
    ) -> bool:
        """Does the rule's argument glob match `argument` (a command or a path or a host)?

        `spec` is the tool's declaration (None: the built-in tool called `tool`); its subject
        says whether the argument is matched as a command, a path or a name.
        """
        kind = subject_kind(tool, spec)
        if kind == "command":
            hit = _command_match(self.pattern, argument)
        elif kind == "path":
            hit = _path_rule_match(self.pattern, argument, machine=machine, cwd=cwd)
        else:
            hit = _name_glob_regex(self.pattern).fullmatch(argument) is not None
        return hit != self.negate

    def matches(
        self, tool: str, argument: str, *, machine: str = "local", cwd: str | None = None, spec: Tool | None = None
    ) -> bool:
        """Does the rule concern this tool on this machine and match this argument?"""
        return self.applies_to(tool, machine) and self.matches_argument(
            tool, argument, machine=machine, cwd=cwd, spec=spec
        )

    @property
    def has_wildcards(self) -> bool:
        """Does the rule match more than one exact argument?"""
        return self.negate or re.search(r"(?<!\\)[*?]", self.pattern) is not None


def _glob_name(pattern: str, name: str) -> bool:
    return _name_glob_regex(pattern).fullmatch(name) is not None


def _mcp_server_rule(pattern: str, name: str) -> bool:
    """`mcp__SERVER` alone (Claude Code's spelling) covers every tool of that MCP server, as
    `mcp__SERVER__*` does (see cmdop_tui/mcp/names.py: a server's part has no `__`)."""
    server = pattern[len(MCP_PREFIX) :] if pattern.startswith(MCP_PREFIX) else ""
    return bool(server) and "__" not in server and name.startswith(f"{pattern}__")


_REGEX_CACHE: dict[tuple[str, str], re.Pattern[str]] = {}


def _cached(kind: str, pattern: str, build: Callable[[str], str]) -> re.Pattern[str]:
    key = (kind, pattern)
    compiled = _REGEX_CACHE.get(key)
    if compiled is None:
        if len(_REGEX_CACHE) > 2048:
            _REGEX_CACHE.clear()
        compiled = _REGEX_CACHE[key] = re.compile(build(pattern), re.DOTALL)
    return compiled


def _command_regex(pattern: str) -> str:
    pattern = " ".join(pattern.split())
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "\\" and i + 1 < n:
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        if ch == " " and pattern[i:] == " *":
            out.append(r"(?: .*)?")
            break
        if ch == "*":
            out.append(".*")
        elif ch == "?":
            out.append(".")
        else:
            out.append(re.escape(ch))
        i += 1
    return "".join(out)


def _command_match(pattern: str, command: str) -> bool:
    return _cached("cmd", pattern, _command_regex).fullmatch(" ".join(command.split())) is not None


def _path_glob_regex(pattern: str) -> str:
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        if pattern.startswith("/**", i) and (i + 3 == n or pattern[i + 3] == "/"):
            if i + 3 == n:
                out.append(r"(?:/.*)?")
                i += 3
            else:
                out.append(r"(?:/.*)?/")
                i += 4
            continue
        if i == 0 and pattern.startswith("**/"):
            out.append(r"(?:.*/)?")
            i += 3
            continue
        ch = pattern[i]
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif ch == "*":
            out.append("[^/]*")
            i += 1
        elif ch == "?":
            out.append("[^/]")
            i += 1
        elif ch == "[":
            i = _character_class(pattern, i, out)
        elif ch == "{":
            i = _alternatives(pattern, i, out)
        elif ch == "\\" and i + 1 < n:
            out.append(re.escape(pattern[i + 1]))
            i += 2
        else:
            out.append(re.escape(ch))
            i += 1
    return "".join(out)


def _character_class(pattern: str, i: int, out: list[str]) -> int:
    """`[abc]` or `[!abc]` at `i`, as a regex; a lone `[` is itself."""
    end = pattern.find("]", i + 2)
    if end < 0:
        out.append(re.escape("["))
        return i + 1
    body = pattern[i + 1 : end]
    body = "^" + body[1:] if body.startswith("!") else body
    out.append("[" + body.replace("\\", "\\\\") + "]")
    return end + 1


def _alternatives(pattern: str, i: int, out: list[str]) -> int:
    """`{a,b}` at `i`, as a regex; a `{` with fewer than two alternatives is itself."""
    end = match_close(pattern, i, "{", "}")
    options = _split_alternatives(pattern[i + 1 : end - 1])
    if len(options) < 2 or end > len(pattern) or pattern[end - 1] != "}":
        out.append(re.escape("{"))
        return i + 1
    out.append("(?:" + "|".join(_path_glob_regex(option) for option in options) + ")")
    return end


def _split_alternatives(text: str) -> list[str]:
    """`a,{b,c},d` -> ["a", "{b,c}", "d"]; an escaped `\\,` `\\{` `\\}` is a character of its
    alternative (what "Allow always" writes for a machine name such as `web1,db1`)."""
    parts: list[str] = []
    start, depth, i = 0, 0, 0
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if ch in "{}":
            depth += 1 if ch == "{" else -1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
        i += 1
    parts.append(text[start:])
    return parts


def _name_glob_regex(pattern: str) -> re.Pattern[str]:
    return _cached("path", pattern, _path_glob_regex)


def local_home() -> str:
    """This machine's home directory, or `~` when it cannot be known."""
    try:
        return str(Path.home())
    except (RuntimeError, KeyError):
        return "~"


def normalise_rule_path(path: str, *, machine: str, cwd: str | None) -> str:
    """A path (or a path pattern) as rules compare it: ~ expanded locally, made absolute, normalised."""
    if machine == "local" and (path == "~" or path.startswith("~/")):
        path = local_home() + path[1:]
    if not path.startswith(("/", "~")) and cwd and machine == "local":
        path = cwd.rstrip("/") + "/" + path
    trailing = path.endswith("/**")
    path = re.sub(r"/{2,}", "/", path)
    normal = posixpath.normpath(path) if path else path
    if trailing and not normal.endswith("/**"):
        normal += "/**"
    return normal


def _path_rule_match(pattern: str, path: str, *, machine: str, cwd: str | None) -> bool:
    if pattern in ("*", "**"):
        return True
    want = normalise_rule_path(pattern, machine=machine, cwd=cwd)
    have = normalise_rule_path(path, machine=machine, cwd=cwd)
    return _name_glob_regex(want).fullmatch(have) is not None
