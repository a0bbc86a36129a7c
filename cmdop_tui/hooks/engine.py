"""The session's hooks: which run for an event, with what on their stdin, and their word.

`Hooks.fire(event, ...)` runs every matching command hook of `event` at once (the same command
line once), each told the event as Claude Code's JSON (`session_id`, `transcript_path`, `cwd`,
`hook_event_name`, `permission_mode` and the event's own fields: `tool_name`, `tool_input`,
`tool_use_id`, `tool_response`, `prompt`, ...) with ours beside them: `machine`, `host` and
`tags` of the machine the call runs on, and `placement`, every host of a fan-out. Each run is
told to `on_record` (the audit log, the screen) as a `HookRecord`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cmdop_tui.hooks.decisions import HookVerdict, HookWord, combined, read_run
from cmdop_tui.hooks.matching import Scopes, matching, no_scopes
from cmdop_tui.hooks.running import hook_environment, run_hook
from cmdop_tui.hooks.shape import HookCommand, HookTable
from cmdop_tui.machines.fleet import Fleet
from cmdop_tui.tools.placement import Placement


@dataclass(frozen=True)
class HookRecord:
    """One hook's run, for the audit log and the screen."""

    event: str
    command: str
    decision: str  # HookWord.summary: ok, allowed, ask, blocked, changed input, failed...
    reason: str
    duration_s: float
    call_id: str | None = None
    tool: str | None = None
    machine: str | None = None


@dataclass
class SessionFacts:
    """What every hook's input says of the session (read when an event fires)."""

    session_id: Callable[[], str] = lambda: ""
    transcript_path: Callable[[], str] = lambda: ""
    permission_mode: Callable[[], str] = lambda: "default"


@dataclass
class Hooks:
    """The hooks a session runs (`table`), in `cwd`, and who hears of each run (`on_record`)."""

    table: HookTable
    cwd: Path
    fleet: Fleet | None = None
    scopes: Scopes = no_scopes
    facts: SessionFacts = field(default_factory=SessionFacts)
    on_record: list[Callable[[HookRecord], None]] = field(default_factory=list)
    environment: dict[str, str] | None = None  # made at the first run: ours, without credentials

    def wants(self, event: str) -> bool:
        """Whether any hook is configured for `event` (else firing it costs nothing)."""
        return bool(self.table.for_event(event))

    async def fire(
        self,
        event: str,
        fields: Mapping[str, Any] | None = None,
        *,
        tool: str | None = None,
        placement: Placement | None = None,
        call_id: str | None = None,
    ) -> HookVerdict:
        """Run `event`'s matching hooks at once; their combined word (nothing ran: no word)."""
        groups = matching(self.table.for_event(event), tool, placement, self.scopes)
        commands = list(dict.fromkeys(hook for group in groups for hook in group.hooks))
        if not commands:
            return HookVerdict()
        payload = {**self._common(event), **self._where(placement), **(fields or {})}
        words = await asyncio.gather(*(self._one(hook, event, payload, tool, placement, call_id) for hook in commands))
        return combined(words)

    async def _one(
        self,
        hook: HookCommand,
        event: str,
        payload: Mapping[str, Any],
        tool: str | None,
        placement: Placement | None,
        call_id: str | None,
    ) -> HookWord:
        if self.environment is None:
            self.environment = hook_environment(self.cwd)
        run = await run_hook(hook, payload, self.cwd, self.environment)
        word = read_run(run, event)
        why = word.failure or word.reason
        machine = placement.label if placement is not None else None
        duration = round(run.duration_s, 4)
        record = HookRecord(event, hook.command, word.summary, why, duration, call_id, tool, machine)
        for listener in self.on_record:
            listener(record)
        return word

    def _common(self, event: str) -> dict[str, Any]:
        return {
            "session_id": self.facts.session_id(),
            "transcript_path": self.facts.transcript_path(),
            "cwd": str(self.cwd),
            "permission_mode": self.facts.permission_mode(),
            "hook_event_name": event,
        }

    def _where(self, placement: Placement | None) -> dict[str, Any]:
        """Where the call runs: the machine (for a fan-out, the first), its host and tags, and
        every host of the placement."""
        if placement is None:
            placement = Placement.one(self.fleet.target_name or "local") if self.fleet else None
        if placement is None:
            return {}
        hosts = [self._machine(name) for name in placement.machines]
        first = hosts[0] if hosts else {"machine": "local", "host": "localhost", "tags": []}
        return {**first, "fans_out": placement.fans_out, "placement": hosts}

    def _machine(self, name: str) -> dict[str, Any]:
        spec = None
        if self.fleet is not None:
            spec = next((m for m in self.fleet.inventory if m.name == name), None)
        if spec is None:
            return {"machine": name, "host": "localhost" if name == "local" else name, "tags": []}
        host = "localhost" if spec.is_local else spec.host
        groups = [scope for scope in self.scopes(name) if not scope.startswith("tag:")]
        return {"machine": spec.name, "host": host, "tags": list(spec.tags), "groups": groups}
