"""Killing every process, and fork bombs, however they are written.

Mass kills: ``kill -1`` however the signal and ``--`` are spelled (``kill -KILL -- -1``, a pid
the line computes: ``kill -9 $((0-1))``), ``kill`` of a list naming every process (``kill
$(ps -e -o pid=)``, ``kill $(pgrep -u $USER)``), ``pkill``/``skill``/``killall`` of every
process of a user, group or terminal (``pkill -9 -u $USER``) or with a pattern every name
matches (``pkill .``, ``killall -r .``), ``killall5``, ``fuser -k`` on ``/`` or a home, and
``loginctl terminate-user``/``kill-user``. A pid the command computes in a way not followed is
a doubt.

Fork bombs: a function, whatever its name, that runs itself in a pipe or in the background,
directly, through other functions of the line, or as ``$FUNCNAME``; and a loop that never ends
and only starts commands in the background (``while true; do $0 & done``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from .context import Arg, Ctx, doubt, refuse
from .parsing import iter_nodes
from .paths import OPAQUE, critical, resolve
from .scanning import substitutions, words

# process names a pattern must spare not to mean "every process"
_NAMES = ("systemd", "sshd", "bash", "python3", "cmdop-tui", "init", "kworker/0:1", "node")
# pkill/pgrep/skill options that choose processes by who or where, and take a value
_SELECTORS = frozenset(
    {
        "-u",
        "-U",
        "-G",
        "-g",
        "-P",
        "-s",
        "-t",
        "--euid",
        "--uid",
        "--group",
        "--pgroup",
        "--parent",
        "--session",
        "--terminal",
    }
)
_VALUED = _SELECTORS | {"-F", "--pidfile", "--signal", "--ns", "--nslist", "-c", "--cgroup"}
_SELF_NAMES = ("$FUNCNAME", "${FUNCNAME}", "${FUNCNAME[0]}", '"$FUNCNAME"', '"${FUNCNAME[0]}"')
_LOGINCTL_KILLS = words("terminate-user kill-user terminate-seat terminate-session kill-session")
_TRUE_WORDS = frozenset({"true", ":", "/bin/true", "/usr/bin/true"})
_FALSE_WORDS = frozenset({"false", "/bin/false", "/usr/bin/false"})


def _kill_operands(argv: list[Arg]) -> list[Arg]:
    """What `kill` is told to signal: after the signal (`-9`, `-KILL`, `-s KILL`) and `--`."""
    args = argv[1:]
    i = 0
    if i < len(args) and args[i].text in ("-s", "-n", "--signal"):
        i += 2
    elif i < len(args) and args[i].text in ("-l", "-L", "--list", "--table"):
        return []
    elif i < len(args) and args[i].text.startswith("-") and args[i].text != "--" and len(args) > 1:
        i += 1
    if i < len(args) and args[i].text == "--":
        i += 1
    return args[i:]


def check_kill(argv: list[Arg], ctx: Ctx, snippet: str) -> None:
    for arg in _kill_operands(argv):
        if "-1" in arg.values:
            raise refuse(snippet, "would kill every process on the machine (kill -1)")
        if any(_lists_every_process(inner) for inner in substitutions(arg.raw)):
            raise refuse(snippet, "would kill every process it lists, which is every process of the machine or a user")
        if any(OPAQUE in value for value in arg.values):
            doubt(ctx, snippet, "kills processes the command computes in a way that cannot be checked (it could be -1)")


def _lists_every_process(inner: str) -> bool:
    """Does the command `inner` (a substitution) print the pid of every process (of a user)?"""
    stages = [stage.split() for stage in inner.split("|")]
    first = stages[0] if stages and stages[0] else [""]
    if first[0] == "sudo":
        first = first[1:] or [""]
    if any(stage and stage[0] in ("grep", "egrep", "rg", "head", "tail") for stage in stages[1:]):
        return False
    if first[0] == "ps":
        return not any(word in ("-p", "--pid", "-C", "-q", "--quick-pid") or word.startswith("-p") for word in first)
    if first[0] in ("pgrep", "pidof"):
        return first[0] == "pgrep" and _mass_selection(first[1:], regex=True)
    return first[0] == "ls" and any(word.rstrip("/") == "/proc" for word in first)


def _everything(pattern: str, *, regex: bool, exact: bool) -> bool:
    """Does `pattern` (a regex, or a process name) match most process names?"""
    if not regex:
        return False
    try:
        compiled = re.compile(pattern)
    except re.error:
        return False
    matches = compiled.fullmatch if exact else compiled.search
    return sum(matches(name) is not None for name in _NAMES) >= len(_NAMES) - 2


def _mass_selection(args: list[str], *, regex: bool) -> bool:
    """pkill/pgrep/skill's words: no pattern but a selector (-u USER), or a pattern that
    matches every name."""
    selected = False
    patterns: list[str] = []
    exact = False
    i = 0
    while i < len(args):
        word = args[i]
        if word in _VALUED or (word.startswith("--") and "=" in word):
            selected = selected or word.split("=", 1)[0] in _SELECTORS
            i += 1 if "=" in word else 2
            continue
        if word.startswith("-") and len(word) > 1:
            selected = selected or word[:2] in _SELECTORS
            exact = exact or "x" in word[1:]
        else:
            patterns.append(word)
        i += 1
    if not patterns:
        return selected
    return any(_everything(pattern, regex=regex, exact=exact) for pattern in patterns)


def check_pkill(argv: list[Arg], ctx: Ctx, snippet: str) -> None:
    """pkill, skill: every process of a user (or group, session, terminal), or of every name."""
    texts = [a.text for a in argv[1:]]
    if texts and re.fullmatch(r"-\d+|-(?:SIG)?[A-Z]{3,}\d*", texts[0]):
        texts = texts[1:]  # the signal
    if _mass_selection(texts, regex=True):
        raise refuse(snippet, "would kill every process of a user, or every process")


def check_killall(argv: list[Arg], ctx: Ctx, snippet: str) -> None:
    """killall -u USER with no name, killall -r PATTERN matching every name."""
    texts = [a.text for a in argv[1:]]
    regex = any(t in ("-r", "--regexp") for t in texts)
    names: list[str] = []
    user = False
    i = 0
    while i < len(texts):
        if texts[i] in ("-u", "--user", "-o", "--older-than", "-y", "--younger-than", "-s", "--signal", "-n", "--ns"):
            user = user or texts[i] in ("-u", "--user")
            i += 2
            continue
        if not texts[i].startswith("-"):
            names.append(texts[i])
        i += 1
    if (user and not names) or any(_everything(n, regex=regex, exact=not regex) for n in names):
        raise refuse(snippet, "would kill every process of a user, or every process")


def check_killall5(argv: list[Arg], ctx: Ctx, snippet: str) -> None:
    raise refuse(snippet, "would kill every process on the machine (killall5)")


def check_fuser(argv: list[Arg], ctx: Ctx, snippet: str) -> None:
    """fuser -k on / or a home: every process using that file system."""
    texts = [a.text for a in argv[1:]]
    if not any(t == "--kill" or re.fullmatch(r"-[a-zA-Z]*k[a-zA-Z]*", t) for t in texts):
        return
    for arg in argv[1:]:
        for value in arg.values:
            if not value.startswith("-") and critical(resolve(value, ctx.cwd)):
                raise refuse(snippet, f"would kill every process using {value}")


def check_loginctl(argv: list[Arg], ctx: Ctx, snippet: str) -> None:
    if any(a.text in _LOGINCTL_KILLS for a in argv[1:]):
        raise refuse(snippet, "would end every process of a user's sessions")


# --- fork bombs -----------------------------------------------------------------------------------


def _command_name(node: Any) -> str | None:
    first = next((p for p in node.parts if p.kind == "word"), None)
    return getattr(first, "word", None) if first is not None else None


def _called(node: Any, funcs: Mapping[str, Any], seen: frozenset[str] = frozenset()) -> set[str]:
    """The functions `node` runs, through the functions of the line it calls too."""
    found: set[str] = set()
    for current in iter_nodes(node):
        if current.kind != "command":
            continue
        name = _command_name(current)
        if name is None:
            continue
        found.add("$FUNCNAME" if name in _SELF_NAMES else name)
        if name in funcs and name not in seen:
            found |= _called(funcs[name][0], funcs, seen | {name})
    return found


def _spawned(body: Any) -> Iterable[Any]:
    """The parts of `body` that run beside it: stages of a pipe, commands sent to the background."""
    for node in iter_nodes(body):
        if node.kind == "pipeline":
            stages = [p for p in node.parts if p.kind not in ("pipe", "reservedword")]
            if len(stages) > 1:
                yield from stages
        elif node.kind == "list":
            for part, following in zip(node.parts, node.parts[1:], strict=False):
                if following.kind == "operator" and following.op == "&":
                    yield part


def is_fork_bomb(name: str, body: Any, funcs: Mapping[str, Any]) -> bool:
    """Does the function `name` run itself (or, through other functions, make them run it) in
    a pipe or in the background?"""
    for part in _spawned(body):
        calls = _called(part, funcs)
        if name in calls or "$FUNCNAME" in calls:
            return True
    return False


def endless_spawner(node: Any) -> bool:
    """A `while true` (`until false`) loop whose body only starts commands in the background."""
    parts = list(node.parts)
    words_of = [getattr(p, "word", None) for p in parts]
    if "do" not in words_of:
        return False
    condition = [p for p in parts[1 : words_of.index("do")] if p.kind != "reservedword"]
    body = [p for p in parts[words_of.index("do") + 1 :] if p.kind != "reservedword"]
    endless = _TRUE_WORDS if node.kind == "while" else _FALSE_WORDS
    if len(condition) != 1 or not _single_word_in(condition[0], endless):
        return False
    if len(body) != 1:
        return False
    items = body[0].parts if body[0].kind == "list" else [body[0]]
    commands = [p for p in items if p.kind != "operator"]
    operators = [p.op for p in items if p.kind == "operator"]
    return bool(commands) and operators.count("&") >= len(commands)


def _single_word_in(node: Any, wanted: frozenset[str]) -> bool:
    if node.kind == "list":
        inner = [p for p in node.parts if p.kind != "operator"]
        return len(inner) == 1 and _single_word_in(inner[0], wanted)
    if node.kind != "command":
        return False
    command_words = [p.word for p in node.parts if p.kind == "word"]
    return len(command_words) == 1 and command_words[0] in wanted
