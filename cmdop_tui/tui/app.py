"""The full-screen app: chat, tool activity, machines, prompt and a Stop that always works.

A host of small parts: the session's life (tui/session_life.py, held as `session_state`), approvals
(tui/approvals.py), the frame writer (tui/frames.py), the slash commands built and handed in. The
loop runs in an async worker; its events reach the widgets through the `EventRouter` as Textual
messages. Stop fires the loop's UI cancel signal, which cancels the worker's task at its next await
(mid-stream, in a backoff, at an approval, in a command, which is killed). `running` drives Stop.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from functools import cached_property, partial
from typing import TYPE_CHECKING, ClassVar

from textual import constants as textual_constants
from textual import work
from textual.app import App, ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal
from textual.reactive import reactive
from textual.widgets import Button
from textual.worker import Worker, WorkerState

from cmdop_tui.agent.cancel import UICancel
from cmdop_tui.config.settings import Settings
from cmdop_tui.machines.spec import LOCAL
from cmdop_tui.support.heap import settle_heap
from cmdop_tui.tui.approvals import Questions, ask_approval
from cmdop_tui.tui.attention import AttentiveApp
from cmdop_tui.tui.clipboard import ClipboardActions
from cmdop_tui.tui.commands import CmdopCommands, CommandRegistry
from cmdop_tui.tui.driver import PromptEscapeDriver
from cmdop_tui.tui.first_frame import FirstScreen, style_before_first_frame
from cmdop_tui.tui.keys import APP_BINDINGS
from cmdop_tui.tui.prompt_focus import PromptFocusApp
from cmdop_tui.tui.session_life import NO_KEY_HELP, Opening, SessionOpener, SessionState
from cmdop_tui.tui.slash_commands import NOTHING_TO_STOP, build_registry
from cmdop_tui.tui.submission import submit
from cmdop_tui.tui.target_choice import choose_target
from cmdop_tui.tui.themes import apply_theme, keep_theme_choices
from cmdop_tui.tui.type_ahead import TypeAhead, TypeAheadKeys
from cmdop_tui.tui.vocabulary.messages import ToolOutputRequested
from cmdop_tui.tui.widgets.chat_log import LOW_BANDWIDTH_PACE, STOPPED, ChatLog
from cmdop_tui.tui.widgets.fitting_footer import FittingFooter
from cmdop_tui.tui.widgets.machines_panel import MachineInfo, MachinesPanel
from cmdop_tui.tui.widgets.mcp_panel import McpPanel
from cmdop_tui.tui.widgets.prompt_input import PromptInput
from cmdop_tui.tui.widgets.queued_messages import QueuedMessages
from cmdop_tui.tui.widgets.side_column import SideColumn
from cmdop_tui.tui.widgets.status_line import StatusLine
from cmdop_tui.tui.widgets.stop_button import StopButton
from cmdop_tui.tui.widgets.tool_panel import ToolPanel

if TYPE_CHECKING:
    import anthropic

    from cmdop_tui.agent.context import SessionFacts
    from cmdop_tui.agent.policies import RetryPolicy
    from cmdop_tui.session.session import Session
    from cmdop_tui.tui.events import EventRouter
    from cmdop_tui.tui.vocabulary.tool_records import ToolRecord

NARROW_WIDTH = 100  # below this the side column folds away, until the user chooses (F2, F3)
GC_AFTER_TURN_S = 0.5  # after a turn, once the last frames are painted
WELCOME = (
    "cmdop-tui, an operator on local (this machine, {host}). Ask for something and press Enter; "
    "Esc stops a turn; /help lists commands and keys."
)


class CmdopApp(TypeAheadKeys, ClipboardActions, PromptFocusApp, AttentiveApp):
    TITLE = "cmdop-tui"
    CSS_PATH = "app.tcss"
    COMMANDS = App.COMMANDS | {CmdopCommands}
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (NARROW_WIDTH, "-wide")]
    BINDINGS: ClassVar[list[BindingType]] = APP_BINDINGS  # tui/keys.py: each with its line in /help

    session_state: reactive[SessionState] = reactive(SessionState, init=False)
    running: reactive[bool] = reactive(False, init=False)  # an agent turn (or a compaction) is under way

    def __init__(
        self,
        settings: Settings,
        *,
        client: anthropic.AsyncAnthropic | None = None,
        retry: RetryPolicy | None = None,
        facts: SessionFacts | None = None,
        machine: MachineInfo | None = None,
        offer_local_model: bool = True,
        commands: CommandRegistry | None = None,
    ) -> None:
        """`client`, `retry`, `facts` and `machine` replace what the app would find itself
        (tests pin them so that screenshots are the same on every machine)."""
        # Our Linux driver only for a real terminal: textual-serve (`serve`) chooses its web driver
        # through TEXTUAL_DRIVER, which a driver named here would override.
        terminal = sys.platform != "win32" and not textual_constants.DRIVER
        super().__init__(driver_class=PromptEscapeDriver if terminal else None)
        self.settings = settings
        self.theme_problems = apply_theme(self, settings.theme)  # before the first style pass, not after it
        self.commands = commands or build_registry()
        self.commands.palette_action("Toggle the tool-activity panel", "F2", self.action_toggle_tools)
        self.commands.palette_action("Toggle the machines panel", "F3", self.action_toggle_machines)
        self.commands.palette_action("Copy the last reply", "F4", self.action_copy_reply)
        self.commands.palette_action("Copy the selected tool output", "F4 in the tool panel", self.copy_tool_output)
        self._machine = machine
        self.ui_cancel = UICancel()
        opening = Opening(self.ui_cancel, client, retry, facts, offer_local_model)
        self.opener = SessionOpener(self, partial(ask_approval, self), opening, Questions(self))
        self.session_ready = self.opener.ready  # set once the first opening has ended, either way

    def get_default_screen(self) -> FirstScreen:
        return FirstScreen()  # styled once before the first frame (tui/first_frame.py)

    def compose(self) -> ComposeResult:
        style_before_first_frame(self)  # the breakpoints' classes (Textual sets them after the frame)
        with Horizontal(id="body"):
            yield ChatLog(id="chat")
            yield SideColumn(id="side", machine=self._machine, narrow_below=NARROW_WIDTH)
        yield StatusLine(id="status")
        yield QueuedMessages(id="queued")
        with Horizontal(id="input-bar"):
            yield PromptInput(id="prompt", placeholder="Ask the operator…  (Enter sends, ctrl+j newline, /help)")
            yield StopButton(id="stop", action="app.stop")
        yield FittingFooter()

    async def on_mount(self) -> None:
        self.app_resume_signal.subscribe(self, lambda _app: self.action_redraw())
        keep_theme_choices(self, self.settings.theme)
        if self.settings.low_bandwidth_mode():
            self.chat.pace = LOW_BANDWIDTH_PACE
        self.query_one(PromptInput).focus()
        await self.chat.add_notice(WELCOME.format(host=self.query_one(MachinesPanel).machine.name))
        for problem in [*self.theme_problems, *self.commands.notices]:  # said once, at start
            await self.chat.add_notice(problem, "warning")
        self.call_after_refresh(self.opener.start)  # the first frame is not kept waiting by the SDK's import

    def watch_session_state(self, state: SessionState) -> None:
        """The session opened (or failed): the status line, the panels and the window follow it."""
        settle_heap(whole=False)
        self.refresh_status()
        if state.session is not None:
            state.session.status_listeners.append(self.refresh_status)
            self.query_one(MachinesPanel).follow(state.session.fleet)
        self.query_one(McpPanel).follow(state.session.mcp if state.session else None)

    async def on_machines_panel_target_chosen(self, message: MachinesPanel.TargetChosen) -> None:
        await choose_target(self.session, self.chat, message.name)

    async def show_history(self) -> None:
        """Draw the session's conversation (a resumed one, or after /sessions) in place of the chat."""
        assert self.session is not None
        await self.event_router.show_conversation(self.session.runner.conversation.messages)

    async def reset_display(self) -> None:
        await self.event_router.reset()

    async def on_unmount(self) -> None:
        await self.opener.close()

    @property
    def session(self) -> Session | None:
        return self.session_state.session

    @cached_property
    def event_router(self) -> EventRouter:
        """The loop's events to the widgets; made on first use, with the events (not before the first paint)."""
        from cmdop_tui.tui.events import EventRouter

        return EventRouter(self, chat=self.chat, status=self.status, tool_panel=self.query_one(ToolPanel))

    @property
    def tool_records(self) -> dict[str, ToolRecord]:
        """Every tool call of the conversation shown, by call id."""
        return self.event_router.records

    @property
    def chat(self) -> ChatLog:
        return self.query_one(ChatLog)

    @property
    def status(self) -> StatusLine:
        return self.query_one(StatusLine)

    def watch_running(self, running: bool) -> None:
        self.query_one("#stop", Button).disabled = not running
        self.query_one(PromptInput).turn_running = running  # Esc Esc opens /rewind only between turns
        self.status.update_facts(running=running)
        TypeAhead(self).running_changed(running)

    def refresh_status(self) -> None:
        """The status line after the session changed: its model, budget, machine, loop mode."""
        self.status.show_session(self.session.status() if self.session else None)
        self.query_one(MachinesPanel).set_target(self.session.status().machine if self.session else LOCAL)
        if self.session is not None:
            self.status.learn_window(self.session)  # the model may have changed

    # --- layout --------------------------------------------------------------------------------

    def on_resize(self) -> None:
        self.action_redraw()  # a terminal may lose cells in a resize, even one back to the same size

    def action_toggle_tools(self) -> None:
        self.query_one(SideColumn).toggle_tools()

    def action_toggle_machines(self) -> None:
        self.query_one(SideColumn).toggle_machines()

    # --- input ---------------------------------------------------------------------------------

    async def on_prompt_input_submitted(self, message: PromptInput.Submitted) -> None:
        await submit(self, message.text)  # `!command`, `/command`, or a prompt for the model

    async def send(self, text: str) -> None:
        if self.running:  # queued: sent when the turn ends
            TypeAhead(self).hold(text)
            return
        await self.chat.add_user_message(text)
        if self.session_ready.is_set() and await self.ready_session() is None:
            return
        self.run_agent(text)

    async def ready_session(self) -> Session | None:
        """The open session; None (after saying why) when there is none: no key, a broken setting."""
        if self.session is not None:
            return self.session
        await self.chat.add_notice(self.session_state.error or NO_KEY_HELP, "error")
        return None

    def on_tool_output_requested(self, message: ToolOutputRequested) -> None:
        from cmdop_tui.tui.screens.output_view import OutputScreen  # not before the first paint

        self.push_screen(OutputScreen.of_session(message.record, self.session, self.opener.previewed_outputs))

    # --- the agent -----------------------------------------------------------------------------

    def run_agent(self, prompt: str, tools: frozenset[str] | None = None) -> None:
        self.start_turn(lambda session: session.run(prompt, self.event_router.deliver, tools=tools))

    def run_compaction(self, instructions: str) -> None:
        """/compact: like a turn (Esc stops it); its events show how it went, a failure too."""
        self.start_turn(lambda session: session.compact(self.event_router.deliver, instructions))

    def start_turn(self, step: Callable[[Session], Awaitable[object]]) -> None:
        self.running = True  # at once: a second Enter in the same write is refused, not a new turn
        self.ui_cancel.reset()  # a Stop from now on is for this turn, even before it reaches the session
        self._turn(step)

    @work(exclusive=True, group="agent", exit_on_error=False)
    async def _turn(self, step: Callable[[Session], Awaitable[object]]) -> None:
        await self.session_ready.wait()
        if self.ui_cancel.fired:  # Stopped as the session opened, before this went on
            await self.chat.add_notice(STOPPED, "stopped")
        elif (session := await self.ready_session()) is not None:
            await step(session)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group != "agent":
            return
        active = (WorkerState.PENDING, WorkerState.RUNNING)
        self.running = any(w.group == "agent" and w.state in active for w in self.workers)
        if event.state == WorkerState.ERROR:
            error = event.worker.error
            self.call_later(self.chat.add_notice, f"Internal error: {type(error).__name__}: {error}", "error")
        if event.state in (WorkerState.SUCCESS, WorkerState.ERROR, WorkerState.CANCELLED):
            self.set_timer(GC_AFTER_TURN_S, settle_heap)

    def action_stop(self) -> None:
        if not self.running:  # Esc between turns: back to the prompt
            self.focus_prompt()
            return
        if self.session_ready.is_set():
            self.ui_cancel.fire()
        else:  # still waiting for the SDK to load: nothing has started yet
            self.workers.cancel_group(self, "agent")
            self.call_later(self.chat.add_notice, STOPPED, "stopped")

    def action_interrupt(self) -> None:
        """ctrl+c: stops a running turn (as terminal users expect), else says how to quit."""
        if self.running:
            self.action_stop()
        else:
            self.call_later(self.chat.add_notice, f"{NOTHING_TO_STOP} ctrl+q quits.")

    async def action_request_quit(self) -> None:
        if (question := TypeAhead(self).quit_question()) is None:
            self.exit()
            return

        def answered(quit_now: bool | None) -> None:
            if quit_now:
                self.ui_cancel.fire()
                self.exit()

        from cmdop_tui.tui.screens.confirm import ConfirmScreen  # not before the first paint

        self.push_screen(ConfirmScreen(question, yes="Quit", no="Stay"), answered)
