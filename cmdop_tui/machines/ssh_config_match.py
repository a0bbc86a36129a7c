"""A `Match` line's criteria, judged as OpenSSH's match_cfg_line judges them.

`all`, `canonical`, `final`, `host`, `originalhost`, `user` and `localuser` are judged here;
`exec` (a command ssh runs), `localnetwork` (the interfaces) and the newer ones are not: a
block that hangs on one of them does not apply in our reading, and the reading is marked
uncertain (ssh -G then says what applies).
"""

from __future__ import annotations

from dataclasses import dataclass

from cmdop_tui.machines.ssh_config_syntax import match_pattern_list

NO_ARGUMENT = frozenset({"all", "canonical", "final"})
UNKNOWABLE = frozenset({"exec", "localnetwork", "tagged", "command", "version", "sessiontype"})


@dataclass(frozen=True)
class Conditions:
    """What a Match line is judged against at that point of the reading."""

    host: str  # the HostName so far (%h expanded), else the name given
    original: str  # the name given on the command line
    user: str  # the remote user so far, else the local one
    local_user: str
    final: bool  # the final pass (after canonicalisation, or asked for by `Match final`)


@dataclass(frozen=True)
class Verdict:
    matches: bool
    certain: bool = True
    wants_final: bool = False


def match_block(args: tuple[str, ...], conditions: Conditions) -> Verdict:
    """Whether a `Match` block applies: every criterion must hold (`!` negates one)."""
    result, certain, wants_final = True, True, False
    words = list(args)
    while words:
        criterion = words.pop(0)
        negated = criterion.startswith("!")
        name = (criterion[1:] if negated else criterion).lower()
        if name in NO_ARGUMENT:
            wants_final |= name == "final"
            held = True if name == "all" else conditions.final
        elif not words:
            return Verdict(False, certain, wants_final)  # ssh refuses it: "Missing Match criteria"
        elif name in UNKNOWABLE:
            words.pop(0)
            if result:  # ssh skips a command once an earlier criterion failed
                certain = False
            result = False
            continue
        else:
            held = _holds(name, words.pop(0), conditions)
        if held == negated:
            result = False
    return Verdict(result, certain, wants_final)


def _holds(name: str, patterns: str, conditions: Conditions) -> bool:
    if name == "host":
        return match_pattern_list(conditions.host, patterns, fold_case=True) == 1
    if name == "originalhost":
        return match_pattern_list(conditions.original, patterns, fold_case=True) == 1
    if name == "user":
        return match_pattern_list(conditions.user, patterns) == 1
    if name == "localuser":
        return match_pattern_list(conditions.local_user, patterns) == 1
    return False  # an attribute ssh does not know: it refuses the file
