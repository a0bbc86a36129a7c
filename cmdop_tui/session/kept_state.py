"""A session's own settings kept in its transcript, and restored when it is resumed: the model,
the agent profile, the permission mode and what it has spent (so a budget goes on counting).

The state is written as a `session_state` event whenever it changes (a /model, /agent or /mode,
a reply's cost); resuming reads the last one. What cannot come back is said: a profile no longer
in the settings, a model of the other kind of endpoint (the local one, or an API's), and `auto`
mode, which lets every tool call through and is only ever given by this run's `--yes`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Protocol

from cmdop_tui.agent.agent_config import AgentConfig
from cmdop_tui.agent.budget import format_usd
from cmdop_tui.agent.events import Event
from cmdop_tui.agent.runner import Runner
from cmdop_tui.config.model import PERMISSION_MODES, Settings, SettingsError
from cmdop_tui.permissions import Permissions
from cmdop_tui.session.local_model import LOCAL_MODEL_PREFIX
from cmdop_tui.session.recorder import SessionRecorder
from cmdop_tui.transcripts import LoadedSession

STATE_EVENT = "session_state"
KEPT_AFTER = frozenset({"usage", "final", "error", "cancelled"})  # events after which the spend may differ
NEVER_RESTORED_MODES = frozenset({"auto"})  # every call allowed: only this run's --yes gives it


@dataclass(frozen=True)
class KeptState:
    """What a resumed session gets back."""

    model: str
    agent: str
    mode: str
    spent_usd: float

    @classmethod
    def read(cls, record: Mapping[str, object]) -> KeptState | None:
        """The state a `session_state` record holds; None for one of the wrong shape."""
        model, agent, mode, spent = (record.get(key) for key in ("model", "agent", "mode", "spent_usd"))
        if not (isinstance(model, str) and isinstance(agent, str) and isinstance(mode, str)):
            return None
        if isinstance(spent, bool) or not isinstance(spent, int | float) or spent < 0:
            return None
        return cls(model, agent, mode, float(spent))


def last_state(events: Sequence[Mapping[str, object]]) -> KeptState | None:
    """The last state a transcript's events kept (None: none, or none readable)."""
    for record in reversed(events):
        if record.get("kind") == STATE_EVENT and (state := KeptState.read(record)) is not None:
            return state
    return None


class Keeper(Protocol):
    """What the state is read from and restored through (the `Session`)."""

    settings: Settings
    permissions: Permissions | None
    status_listeners: list[Callable[[], None]]

    @property
    def runner(self) -> Runner: ...
    @property
    def recorder(self) -> SessionRecorder: ...
    def use_agent(self, name: str) -> AgentConfig: ...
    def use_model(self, name: str) -> str: ...
    def set_mode(self, name: str) -> str: ...


class StateKeeper:
    """Writes the session's state to its transcript when it changes; restores it on resume."""

    def __init__(self, session: Keeper) -> None:
        self.session = session
        self._written: KeptState | None = None
        self._restoring = False  # the steps of a restore are not states of their own
        session.status_listeners.append(self.keep)
        session.runner.event_listeners.append(self._on_event)
        session.recorder.resume_listeners.append(self.restore)

    def current(self) -> KeptState:
        session = self.session
        mode = session.permissions.mode if session.permissions else "default"
        return KeptState(session.runner.config.model, session.settings.agent.name, mode, session.runner.spent_usd)

    def keep(self) -> None:
        """Write the state, if it changed since it was last written."""
        state = self.current()
        if not self._restoring and state != self._written and self.session.recorder.transcript is not None:
            self.session.recorder.event(STATE_EVENT, **asdict(state))
            self._written = state

    def _on_event(self, event: Event) -> None:
        if event.kind in KEPT_AFTER:
            self.keep()

    def restore(self, loaded: LoadedSession) -> list[str]:
        """Take back the state `loaded` kept; what was restored and what could not be, for the user."""
        state = last_state(loaded.events)
        if state is None:
            return []
        self._restoring = True
        try:
            notes = self._take_back(state)
        finally:
            self._restoring = False
        self._written = self.current()  # opening writes nothing: what differs is kept with the next change
        for listener in self.session.status_listeners:  # the spend too
            listener()
        now = self.current()
        restored = f"restored: model {now.model}, agent {now.agent}, mode {now.mode}, {format_usd(now.spent_usd)} spent"
        return [restored, *notes]

    def _take_back(self, state: KeptState) -> list[str]:
        session, notes = self.session, []
        if state.agent != session.settings.agent.name:
            try:
                session.use_agent(state.agent)
            except SettingsError:
                notes.append(
                    f"its agent profile {state.agent!r} is not in the settings; {session.settings.agent.name} it is"
                )
        if _same_kind(state.model, session.runner.config.model):
            session.use_model(state.model)
        if state.mode in NEVER_RESTORED_MODES and self.current().mode != state.mode:
            notes.append(f"it was in {state.mode} mode, which only --yes gives: the mode is {self.current().mode}")
        elif state.mode in PERMISSION_MODES:
            session.set_mode(state.mode)
        session.runner.ledger.spent_usd = state.spent_usd
        return notes


def _same_kind(saved: str, current: str) -> bool:
    """Whether a kept model can serve this run: both the local model's, or both an API's."""
    return saved.startswith(LOCAL_MODEL_PREFIX) == current.startswith(LOCAL_MODEL_PREFIX)
