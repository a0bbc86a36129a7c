"""The session's hooks (cmdop_tui/hooks/): the settings' `[[hooks.EVENT]]`, then a project's
trusted `.cmdop/hooks.json`, built once with what their input says of the session; each run told
to the audit log and, as a `HookRan` event, to the running turn. Beside the loop's own points
(agent/hook_points.py, the gate's PermissionRequest), the session's: SessionStart (at the first
prompt), UserPromptSubmit (each prompt: block it, or add context) and Notification (a person
is asked to approve a call)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from cmdop_tui.agent.approval import Approval, Approver, ToolCall
from cmdop_tui.agent.events import Error, Event, HookRan
from cmdop_tui.agent.outcome import RunResult
from cmdop_tui.config.settings import Settings, data_dir
from cmdop_tui.hooks import HookRecord, Hooks
from cmdop_tui.hooks.project import project_hooks
from cmdop_tui.hooks.trust import TRUST_FILE
from cmdop_tui.machines.fleet import Fleet
from cmdop_tui.permissions import Permissions
from cmdop_tui.session.gate import machine_scopes
from cmdop_tui.session.recorder import SessionRecorder
from cmdop_tui.support.secrets import configured_secrets, redact_json


def trust_store() -> Path:
    """Where the trusted projects' hooks files are kept (beside the `.mcp.json` trust)."""
    return data_dir() / TRUST_FILE


def build_hooks(
    settings: Settings, cwd: Path, fleet: Fleet, permissions: Permissions, sink: Callable[[Event], None]
) -> tuple[Hooks, list[str]]:
    """The session's hooks and notes for the user (a project's hooks to trust, a broken file)."""
    project, notes = project_hooks(cwd, trust_store())
    hooks = Hooks(settings.hooks.joined(project), cwd, fleet, scopes=lambda name: machine_scopes(name, fleet))
    hooks.facts.permission_mode = lambda: permissions.mode
    hooks.on_record.append(lambda record: _audit(permissions, record))
    hooks.on_record.append(lambda record: sink(HookRan(**asdict(record))))
    return hooks, notes


def _audit(permissions: Permissions, record: HookRecord) -> None:
    entry = {"hook": record.event, **{k: v for k, v in asdict(record).items() if k != "event"}}
    permissions.record_hook(redact_json(entry, configured_secrets()))


@dataclass
class SessionHookPoints:
    """The session's own hook points (see the module's docstring)."""

    hooks: Hooks
    source: str = "startup"  # SessionStart's: startup, or resume
    _started: bool = False
    _notices: set[asyncio.Task[object]] = field(default_factory=set)

    async def prompt(self, prompt: str) -> tuple[str, str | None]:
        """The prompt as the hooks leave it (their context after it), and why it must not be
        sent (a UserPromptSubmit hook blocked it), or None."""
        context: list[str] = []
        if not self._started:
            self._started = True
            if self.hooks.wants("SessionStart"):
                context.append((await self.hooks.fire("SessionStart", {"source": self.source})).context)
        if self.hooks.wants("UserPromptSubmit"):
            verdict = await self.hooks.fire("UserPromptSubmit", {"prompt": prompt})
            if verdict.blocked:
                return prompt, verdict.reason or "a UserPromptSubmit hook blocked the prompt"
            context.append(verdict.context)
        added = "\n".join(text for text in context if text)
        return (f"{prompt}\n\n{added}" if added else prompt), None

    def asking(self, ask: Approver | None) -> Approver | None:
        """`ask`, telling the Notification hooks first that a person is asked (without waiting)."""
        if ask is None or not self.hooks.wants("Notification"):
            return ask

        async def notify_then_ask(call: ToolCall) -> Approval:
            message = f"cmdop-tui needs your permission to use {call.name} on {call.machine}"
            fields = {"message": message, "title": "cmdop-tui", "notification_type": "permission_prompt"}
            task: asyncio.Task[object] = asyncio.ensure_future(self.hooks.fire("Notification", fields))
            self._notices.add(task)
            task.add_done_callback(self._notices.discard)
            return await ask(call)

        return notify_then_ask

    def close(self) -> None:
        """Kill the Notification hooks still running."""
        for task in list(self._notices):
            task.cancel()


def name_the_session(hooks: Hooks, recorder: SessionRecorder) -> None:
    """The hooks' input names the session's transcript (empty when none is written)."""
    hooks.facts.session_id = lambda: recorder.session_id or ""
    hooks.facts.transcript_path = lambda: str(recorder.transcript.path) if recorder.transcript else ""


def hook_blocked(reason: str, emit: Callable[[Event], None]) -> RunResult:
    """A prompt a UserPromptSubmit hook blocked: it is not sent, and the user reads why."""
    message = f"a hook blocked the prompt: {reason}"
    emit(Error(code="hook_blocked", message=message))
    return RunResult(status="error", code="hook_blocked", message=message)
