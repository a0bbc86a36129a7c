"""What hooks are configured, as data: read from the settings' `[[hooks.EVENT]]` tables and from
a project's `.cmdop/hooks.json`, which has Claude Code's shape so that its users' scripts and
files work here as they are::

    {"hooks": {"PreToolUse": [{"matcher": "Bash|execute_command", "machines": "tag:prod",
                               "hooks": [{"type": "command", "command": "~/bin/check", "timeout": 30}]}]}}

A settings table is one group of one command (several commands: several tables)::

    [[hooks.PreToolUse]]
    matcher = "execute_command"
    machines = "tag:prod"
    command = "~/bin/check"
    on_failure = "block"

`machines` is our extension beside `matcher`: the hook runs only for calls placed on a machine
those selectors name (a machine, `tag:T`, a group; `*` or none: any). Anything wrong is a
`HookShapeError` naming where: a hook that cannot be read must never be skipped in silence.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

HookEvent = Literal[
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PermissionRequest",
    "PostToolUse",
    "Notification",
    "Stop",
    "PreCompact",
]
EVENTS: tuple[HookEvent, ...] = get_args(HookEvent)  # in the order they come in a session
OnFailure = Literal["continue", "block"]
ON_FAILURE: tuple[OnFailure, ...] = ("continue", "block")
DEFAULT_TIMEOUT_S = 60.0
PROJECT_FILE = ".cmdop/hooks.json"
_HOOK_KEYS = frozenset({"type", "command", "timeout", "on_failure", "onFailure"})
_GROUP_KEYS = frozenset({"matcher", "machines", "hooks"})


class HookShapeError(ValueError):
    """A hook that cannot be read as written (the message names where and why)."""


@dataclass(frozen=True)
class HookCommand:
    """One command hook: a shell command line, its timeout, and what a failure of it means
    (it crashed, timed out or printed invalid JSON): `continue` says so and goes on, `block`
    blocks what it was asked about (fail-closed checks)."""

    command: str
    timeout_s: float = DEFAULT_TIMEOUT_S
    on_failure: OnFailure = "continue"
    source: str = "settings"  # where it was written: "settings" or the project file's path


@dataclass(frozen=True)
class HookGroup:
    """Hooks that run when an event's tool name matches `matcher` (a regular expression matched
    whole, as Claude Code's; empty or `*`: every tool) on a machine `machines` names."""

    matcher: str = ""
    machines: tuple[str, ...] = ()
    hooks: tuple[HookCommand, ...] = ()
    pattern: re.Pattern[str] | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class HookTable:
    """Every configured hook group, event by event."""

    groups: Mapping[str, tuple[HookGroup, ...]] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return any(self.groups.values())

    def for_event(self, event: str) -> tuple[HookGroup, ...]:
        return self.groups.get(event, ())

    def joined(self, other: HookTable) -> HookTable:
        """These hooks, then `other`'s: every one runs."""
        events = dict.fromkeys([*self.groups, *other.groups])
        return HookTable({e: (*self.for_event(e), *other.for_event(e)) for e in events})


def from_settings(table: Mapping[str, Any], where: str) -> HookTable:
    """The `[[hooks.EVENT]]` tables of the settings file (`table` is its `hooks` table)."""
    groups: dict[str, tuple[HookGroup, ...]] = {}
    for event, entries in table.items():
        place = f"{where}: [[hooks.{event}]]"
        _check_event(event, place)
        if not isinstance(entries, list):
            raise HookShapeError(f"{place} must be an array of tables ([[hooks.{event}]])")
        groups[event] = tuple(_settings_group(entry, place) for entry in entries)
    return HookTable(groups)


def _settings_group(entry: Any, place: str) -> HookGroup:
    """One `[[hooks.EVENT]]` table: a group of one command (several: several tables)."""
    if not isinstance(entry, dict):
        raise HookShapeError(f"{place} must be a table")
    unknown = set(entry) - (_HOOK_KEYS - {"type"}) - (_GROUP_KEYS - {"hooks"})
    if unknown:
        known = "command, machines, matcher, on_failure, timeout"
        raise HookShapeError(f"{place}: unknown key {sorted(unknown)[0]!r} (known: {known})")
    hook = {key: entry[key] for key in _HOOK_KEYS if key in entry}
    group = {key: entry[key] for key in ("matcher", "machines") if key in entry}
    return _group({**group, "hooks": [hook]}, place, "settings")


def from_json(text: str, where: str) -> HookTable:
    """A `hooks.json` (Claude Code's shape: `{"hooks": {EVENT: [group, ...]}}`)."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise HookShapeError(f"{where} is not valid JSON ({exc})") from None
    hooks = data.get("hooks") if isinstance(data, dict) else None
    if not isinstance(hooks, dict):
        raise HookShapeError(f'{where} must hold {{"hooks": {{"PreToolUse": [...], ...}}}}')
    groups: dict[str, tuple[HookGroup, ...]] = {}
    for event, entries in hooks.items():
        place = f"{where}: hooks.{event}"
        _check_event(event, place)
        if not isinstance(entries, list):
            raise HookShapeError(f"{place} must be a list of matcher groups")
        groups[event] = tuple(_group(entry, place, where) for entry in entries)
    return HookTable(groups)


def _check_event(event: str, place: str) -> None:
    if event not in EVENTS:
        raise HookShapeError(f"{place}: unknown event {event!r} (known: {', '.join(EVENTS)})")


def _group(entry: Any, place: str, source: str) -> HookGroup:
    if not isinstance(entry, dict):
        raise HookShapeError(f"{place}: a group must be an object with matcher and hooks")
    unknown = set(entry) - _GROUP_KEYS
    if unknown:
        raise HookShapeError(f"{place}: unknown key {sorted(unknown)[0]!r} (known: hooks, machines, matcher)")
    matcher = entry.get("matcher", "")
    if not isinstance(matcher, str):
        raise HookShapeError(f"{place}: matcher must be text (a tool name or a regular expression)")
    hooks = entry.get("hooks")
    if not isinstance(hooks, list) or not hooks:
        raise HookShapeError(f"{place}: hooks must be a non-empty list of command hooks")
    return HookGroup(
        matcher=matcher,
        machines=_selectors(entry.get("machines"), place),
        hooks=tuple(_command(hook, place, source) for hook in hooks),
        pattern=_pattern(matcher, place),
    )


def _pattern(matcher: str, place: str) -> re.Pattern[str] | None:
    if matcher.strip() in ("", "*"):
        return None
    try:
        return re.compile(matcher)
    except re.error as exc:
        raise HookShapeError(f"{place}: matcher {matcher!r} is no regular expression ({exc})") from None


def _selectors(value: Any, place: str) -> tuple[str, ...]:
    if value is None:
        return ()
    items: Sequence[Any] = [value] if isinstance(value, str) else value if isinstance(value, list) else [None]
    if not all(isinstance(item, str) and item.strip() for item in items):
        raise HookShapeError(f"{place}: machines must be a selector or a list of them (web1, tag:prod, a group)")
    selectors = tuple(item.strip() for item in items)
    return () if "*" in selectors else selectors


def _command(hook: Any, place: str, source: str) -> HookCommand:
    if not isinstance(hook, dict):
        raise HookShapeError(f"{place}: a hook must be an object with a command")
    unknown = set(hook) - _HOOK_KEYS
    if unknown:
        raise HookShapeError(
            f"{place}: unknown hook key {sorted(unknown)[0]!r} (known: command, on_failure, timeout, type)"
        )
    if hook.get("type", "command") != "command":
        raise HookShapeError(f"{place}: only command hooks are supported (type = {hook.get('type')!r})")
    command = hook.get("command")
    if not isinstance(command, str) or not command.strip():
        raise HookShapeError(f"{place}: a hook needs a command (a shell command line)")
    timeout = hook.get("timeout", DEFAULT_TIMEOUT_S)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
        raise HookShapeError(f"{place}: timeout must be a positive number of seconds")
    on_failure = hook.get("on_failure", hook.get("onFailure", "continue"))
    if on_failure not in ON_FAILURE:
        raise HookShapeError(f"{place}: on_failure must be continue or block")
    return HookCommand(command.strip(), float(timeout), on_failure, source)
