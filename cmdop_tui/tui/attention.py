"""The app's base for what concerns the person's attention: the permission mode they change with
Shift+Tab (tui/mode_keys.py), and the desktop notifications when the app waits for them while
the terminal is not focused (tui/notify.py): a turn ended, an approval or a question waits, a
long command finished.

A base class, so the app itself (tui/app.py) holds none of it: Textual merges the bindings of
every class of the app and calls each class's message handlers in turn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from textual import events, on
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.worker import Worker, WorkerState

from cmdop_tui.config.model import NotifySettings
from cmdop_tui.config.settings import Settings
from cmdop_tui.support.secrets import mask
from cmdop_tui.support.text import inert_line
from cmdop_tui.tui.frames import MirroredApp
from cmdop_tui.tui.job_notices import GATHER_S, JobEnds
from cmdop_tui.tui.mode_keys import switch_mode
from cmdop_tui.tui.notify import Notifier
from cmdop_tui.tui.vocabulary.messages import Agent
from cmdop_tui.tui.widgets.chat_log import ChatLog

if TYPE_CHECKING:  # types only: the app draws before the session (and its SDK) is imported
    from cmdop_tui.session.session import Session
    from cmdop_tui.tools.jobs import JobChange

ENDED_KEPT = 64  # tool calls remembered as told of
ENDED = (WorkerState.SUCCESS, WorkerState.ERROR)  # a turn that ended by itself (a Stop is the person's)


class AttentiveApp(MirroredApp):
    """The app's mode key and its notifications; `notifier` is made when the app is mounted."""

    BINDINGS: ClassVar[list[BindingType]] = [
        # priority: Shift+Tab changes the mode wherever focus is (it would move focus back)
        Binding(
            "shift+tab",
            "cycle_mode",
            "Mode",
            priority=True,
            show=False,
            tooltip="permission mode: default, accept edits, plan",
        ),
        Binding(
            "ctrl+b",
            "background_command",
            "Background",
            priority=True,
            show=False,
            tooltip="move the running command (the focused one, else the newest) to the background",
        ),
    ]

    settings: Settings  # the app's, set in its own __init__ (after this one's)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.notifier = Notifier(NotifySettings(enabled=False), self._write_raw, lambda: self.app_focus)
        self._ended: dict[str, None] = {}  # the tool calls whose end was weighed, newest last
        self._job_ends = JobEnds(self._say_job_ends)

    @on(events.Mount)
    def _attend(self) -> None:
        """The notifier of the app's settings; the dialogs watched as they open."""
        self.notifier = Notifier(self.settings.notify, self._write_raw, lambda: self.app_focus)
        self.screen_change_signal.subscribe(self, self._screen_changed)
        self.watch(self, "session_state", self._follow_jobs, init=False)

    def _follow_jobs(self) -> None:
        """Told of the open session's background jobs, to say when one ends."""
        jobs = self.session.jobs if self.session is not None else None
        if jobs is not None and self._job_changed not in jobs.listeners:
            jobs.listeners.append(self._job_changed)

    def _job_changed(self, change: JobChange) -> None:
        """A job's end is told with the others of the same moment (tui/job_notices.py)."""
        if change.kind == "end" and self._job_ends.add(change.job):
            self.set_timer(GATHER_S, self._job_ends.flush)

    def _say_job_ends(self, said: str, failed: bool) -> None:
        self.notify(f"{said} (/jobs)", severity="error" if failed else "information")
        self.notifier.tell(said)

    def _write_raw(self, sequence: str) -> None:
        """To the terminal as it is (as Textual writes OSC 52 for the clipboard)."""
        if self._driver is not None and not self.is_headless:
            self._driver.write(sequence)

    def action_background_command(self) -> None:
        """The focused running command (a tool card's), else the newest, goes on as a background
        job and its call returns to the model (tools/job_move.py)."""
        jobs = self.session.jobs if self.session is not None else None
        record = getattr(self.focused, "record", None)
        call_id = getattr(record, "call_id", None) if getattr(record, "status", "") == "running" else None
        if jobs is None or not jobs.move(call_id):
            self.notify("No running command to move to the background.", severity="warning", timeout=3)

    async def action_cycle_mode(self) -> None:
        """The next permission mode; in a dialog, Shift+Tab moves focus back as it always did."""
        if len(self.screen_stack) > 1:
            self.screen.focus_previous()
            return
        await switch_mode(self, None)

    @property
    def session(self) -> Session | None:
        """The open session (the app's own property says which)."""
        return None

    @property
    def chat(self) -> ChatLog:
        return self.query_one(ChatLog)

    # --- what is told while the person is away -------------------------------------------------

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group == "agent" and event.state in ENDED:
            self.notifier.tell("The turn is over: the operator waits for you.")

    def on_agent_tool_ended(self, message: Agent.ToolEnded) -> None:
        record, event = message.record, message.event
        if record.call_id in self._ended:  # the copies posted to the chat and the panel bubble up too
            return
        self._ended[record.call_id] = None
        while len(self._ended) > ENDED_KEPT:
            del self._ended[next(iter(self._ended))]
        command = record.arguments.get("command")
        shown = mask(command) if isinstance(command, str) else None  # a desktop's list keeps it
        self.notifier.tool_finished(event.name, shown, event.duration_s, not event.outcome.ok)

    def _screen_changed(self, screen: Screen[Any]) -> None:
        # Imported here, not before the first paint: the dialogs' code comes with the session.
        from cmdop_tui.tui.screens.approval import ApprovalScreen
        from cmdop_tui.tui.screens.elicitation import ElicitationScreen

        if isinstance(screen, ApprovalScreen):
            self.notifier.tell(f"Approval needed: {screen.tool} on {screen.machine}")
        elif isinstance(screen, ElicitationScreen):
            self.notifier.tell(f"The MCP server {inert_line(screen.request.server)} asks a question")
