"""Which hook groups an event runs: by tool name (the matcher, a regular expression matched whole
as Claude Code's; a Claude Code tool name matches ours too, so `Bash` is `execute_command`) and
by where the call runs (`machines`: a machine, `tag:T` or a group naming one of its machines)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from cmdop_tui.hooks.shape import HookGroup
from cmdop_tui.tools.placement import Placement

# Claude Code's names of the tools we have, so that a script written for it matches here.
CLAUDE_CODE_NAMES = {
    "execute_command": "Bash",
    "read_file": "Read",
    "write_file": "Write",
    "edit_file": "Edit",
    "grep": "Grep",
    "glob": "Glob",
    "list_dir": "LS",
    "todo": "TodoWrite",
    "job_output": "BashOutput",
    "job_kill": "KillShell",
}

# The names besides its own a machine is known by (its tags as `tag:T`, its groups).
Scopes = Callable[[str], Sequence[str]]


def no_scopes(machine: str) -> Sequence[str]:
    return ()


def tool_matches(group: HookGroup, tool_name: str | None) -> bool:
    """Whether the group's matcher takes this tool (an event with no tool: only a catch-all)."""
    if group.pattern is None:
        return True
    if tool_name is None:
        return False
    names = (tool_name, CLAUDE_CODE_NAMES.get(tool_name))
    return any(name is not None and group.pattern.fullmatch(name) for name in names)


def machine_matches(group: HookGroup, placement: Placement | None, scopes: Scopes = no_scopes) -> bool:
    """Whether a machine the call runs on is one the group's selectors name (none: any)."""
    if not group.machines:
        return True
    if placement is None:
        return False
    wanted = set(group.machines)
    for machine in placement.machines:
        names = {machine, *placement.selectors.get(machine, ()), *scopes(machine)}
        if names & wanted:
            return True
    return False


def matching(
    groups: Iterable[HookGroup], tool_name: str | None, placement: Placement | None, scopes: Scopes = no_scopes
) -> list[HookGroup]:
    """The groups that run for this tool on this placement, in order."""
    return [g for g in groups if tool_matches(g, tool_name) and machine_matches(g, placement, scopes)]
