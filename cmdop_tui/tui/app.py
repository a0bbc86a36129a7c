"""The full-screen app: chat, tool activity, machines, prompt and a Stop that always works.

The session opens after the first paint (it loads the model SDK); the agent loop runs in an async
worker, and its events reach the widgets through the `EventRouter` (tui/events.py) as Textual
messages. Stop fires the loop's UI cancel signal, which cancels the worker's task at its next
await: mid-stream, in a retry backoff, while waiting for approval, or while a command runs (the
command is killed).
"""

from __future__ import annotations

import asyncio
import gc
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, ClassVar

from textual import constants as textual_constants
from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Footer
from textual.worker import Worker, WorkerState

from cmdop_tui import transcripts
from cmdop_tui.agent.cancel import UICancel
from cmdop_tui.agent.context import SessionFacts
from cmdop_tui.agent.policies import RetryPolicy
from cmdop_tui.config.settings import Settings, SettingsError
from cmdop_tui.machines.spec import LOCAL, MachineError
from cmdop_tui.permissions import PermissionsError
from cmdop_tui.session import load_session_class
from cmdop_tui.session.errors import MissingKeyError
from cmdop_tui.session.local_model import LocalModelError, LocalModelServer, local_model_available
from cmdop_tui.support.secrets import mask
from cmdop_tui.transcripts import SessionError
from cmdop_tui.tui.approvals import ask_approval
from cmdop_tui.tui.commands import (
    CmdopCommands,
    CommandRegistry,
    parse_slash,
)
from cmdop_tui.tui.driver import PromptEscapeDriver
from cmdop_tui.tui.events import EventRouter
from cmdop_tui.tui.frames import MirroredApp
from cmdop_tui.tui.screens.confirm import ConfirmScreen
from cmdop_tui.tui.screens.output_view import OutputScreen
from cmdop_tui.tui.slash_commands import build_registry
from cmdop_tui.tui.themes import DEFAULT_THEME, load_themes, register_themes
from cmdop_tui.tui.vocabulary.messages import (
    ToolOutputCopyRequested,
    ToolOutputRequested,
)
from cmdop_tui.tui.widgets.chat_log import LOW_BANDWIDTH_PACE, ChatLog
from cmdop_tui.tui.widgets.machines_panel import MachineInfo, MachinesPanel
from cmdop_tui.tui.widgets.mcp_panel import McpPanel
from cmdop_tui.tui.widgets.notice import Notice
from cmdop_tui.tui.widgets.prompt_input import PromptInput
from cmdop_tui.tui.widgets.status_line import StatusLine
from cmdop_tui.tui.widgets.tool_panel import ToolPanel

if TYPE_CHECKING:
    import anthropic

    from cmdop_tui.agent.runner import Runner
    from cmdop_tui.permissions import Permissions
    from cmdop_tui.session.recorder import SessionRecorder
    from cmdop_tui.session.session import Session

NARROW_WIDTH = 100  # below this the side panels fold away
HEALTH_REFRESH_S = 30.0  # machines are probed this often, in the background

LOCAL_OFFER = (
    "No API key is set. Start a local model instead? It runs on this machine with no key "
    "(llama.cpp with a small model: it answers, but seldom uses tools well)."
)
WELCOME = (
    "cmdop-tui, an operator on {host}. Ask for something and press Enter; "
    "Esc stops a turn; /help lists commands and keys."
)
NO_KEY_HELP = (
    "No API key. Set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN) in the environment and start "
    "cmdop-tui again; for another Anthropic-compatible endpoint also set ANTHROPIC_BASE_URL."
)


GC_AFTER_TURN_S = 0.5  # after a turn, once the last frames are painted


def settle_heap(*, whole: bool = True) -> None:
    """Collect, then freeze what survives, at a quiet moment (start-up, after a turn).

    The SDK, Textual and a growing chat make a large heap of long-lived objects; a full collection
    that walks them all stalls the UI for ~50-100 ms in the middle of a stream. Frozen objects are
    never walked again, so collections during the next turn only see what that turn creates.
    At start-up (`whole=False`) only the young generations are collected: nothing is frozen yet,
    so a full collection of a resumed session's heap would itself be such a stall, and the
    garbage start-up leaves in the old generation is bounded.
    """
    gc.collect(2 if whole else 1)
    gc.freeze()


class CmdopApp(MirroredApp):
    event_router: EventRouter  # made on mount, when the widgets it posts to exist
    TITLE = "cmdop-tui"
    CSS_PATH = "app.tcss"
    COMMANDS = App.COMMANDS | {CmdopCommands}
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "stop", "Stop"),
        Binding("ctrl+c", "interrupt", "Stop", show=False),
        Binding("f2", "toggle_tools", "Tools"),
        Binding("f3", "toggle_machines", "Machines"),
        Binding("f4", "copy_reply", "Copy reply"),
        Binding("ctrl+q", "request_quit", "Quit", priority=True),
        Binding("ctrl+l", "redraw", "Redraw", show=False),
    ]

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
        self.commands = commands or build_registry()
        self.commands.palette_action("Toggle the tool-activity panel", "F2", self.action_toggle_tools)
        self.commands.palette_action("Toggle the machines panel", "F3", self.action_toggle_machines)
        self.commands.palette_action("Copy the last reply", "F4", self.action_copy_reply)
        self.commands.palette_action(
            "Copy the selected tool output", "c in the tool panel", self.action_copy_tool_output
        )
        self._retry = retry or RetryPolicy()
        self._facts = facts
        self._machine = machine
        self.ui_cancel = UICancel()
        self.setup_error: str | None = None
        self.session: Session | None = None
        self._opening: Session | None = None  # until open, for on_unmount
        self._previewed: tuple[str, int] | None = None  # a resumed session drawn from its transcript
        self._client = client
        self.session_ready = asyncio.Event()
        self._panels_user_set = False
        self.theme_problems: list[str] = []
        self._offer_local = offer_local_model

    # --- set-up --------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        with Horizontal(id="body"):
            yield ChatLog(id="chat")
            with Vertical(id="side"):
                yield MachinesPanel(id="machines", machine=self._machine)
                yield McpPanel(id="mcp")
                yield ToolPanel(id="tools")
        yield StatusLine(id="status")
        with Horizontal(id="input-bar"):
            yield PromptInput(id="prompt", placeholder="Ask the operator…  (Enter sends, ctrl+j newline, /help)")
            yield Button("Stop", id="stop", variant="error", disabled=True, compact=True)
        yield Footer()

    async def on_mount(self) -> None:
        self.event_router = EventRouter(self, chat=self.chat, status=self.status, tool_panel=self.query_one(ToolPanel))
        themes, self.theme_problems = load_themes()
        register_themes(self, themes)
        if self.settings.theme in self.available_themes:
            self.theme = self.settings.theme
        else:
            self.theme = DEFAULT_THEME
            known = ", ".join(sorted(self.available_themes))
            self.theme_problems.append(f"Unknown theme {self.settings.theme!r}; using {DEFAULT_THEME}. Themes: {known}")
        self._fold_panels_for(self.size.width)
        self.app_resume_signal.subscribe(self, lambda _app: self.action_redraw())
        if self.settings.low_bandwidth_mode():
            self.chat.pace = LOW_BANDWIDTH_PACE
        self.query_one(PromptInput).cursor_blink = False  # a blinking cursor repaints forever over SSH
        self.query_one(PromptInput).focus()
        await self.chat.add_notice(WELCOME.format(host=self.query_one(MachinesPanel).machine.name))
        for problem in self.theme_problems:
            await self.chat.add_notice(problem, "warning")
        if self.settings.resume or self.settings.continue_latest:
            self.preview_history()
        self.prepare_session()

    @work(group="preview", exit_on_error=False)
    async def preview_history(self) -> None:
        """Draw the tail of the session being resumed straight from its transcript, while the
        session (and the SDK) still load: a long session is on screen at once."""
        session_id = self.settings.resume or await asyncio.to_thread(transcripts.latest)
        if session_id is None:
            return
        try:
            loaded = await asyncio.to_thread(transcripts.load, session_id)
        except (OSError, transcripts.SessionError):
            return  # the session's own opening says what is wrong
        if self.session is None:  # else the session was quicker and has drawn it
            self._previewed = (loaded.id, len(loaded.messages))
            await self.chat.show_messages(loaded.messages, self.event_router.records)

    @work(group="setup", exit_on_error=False)
    async def prepare_session(self) -> None:
        """Load the model SDK and open the session after the first paint.

        Importing the SDK takes about a second; the prompt is usable meanwhile, and a prompt sent
        early waits for this.
        """
        notes: list[str] = []
        try:
            session_class = await asyncio.to_thread(load_session_class)
            notes = await self._open_session(session_class)
        finally:
            self.session_ready.set()
        await self._session_opened(notes)
        if (
            self.session is None
            and self.setup_error == NO_KEY_HELP
            and self._offer_local
            and local_model_available(self.settings)
        ):
            self.push_screen(
                ConfirmScreen(LOCAL_OFFER, yes="Start local model", no="Not now"), self._local_offer_answered
            )

    async def _local_offer_answered(self, start: bool | None) -> None:
        if start:
            self.settings = replace(self.settings, local=True)
            self.start_local_session()

    @work(group="setup", exit_on_error=False)
    async def start_local_session(self) -> None:
        """After the offer: open the session again, now with the local model."""
        await self._session_opened(await self._open_session(load_session_class()))

    async def _open_session(self, session_class: type[Session]) -> list[str]:
        """Open a session for the settings and return notes for the user; on failure keep none
        and say why in `setup_error`."""
        session = self._opening = session_class(
            self.settings,
            platform="tui",
            ask=partial(ask_approval, self),
            ui_cancel=self.ui_cancel,
            client=self._client,
            retry=self._retry,
            facts=self._facts,
        )
        loaded = await self._show_local_model_loading() if self.settings.local else None
        try:
            self.setup_error = await _open_or_explain(session)
        finally:
            self._opening = None
        if loaded is not None:
            loaded(session.local_model if self.setup_error is None else None)
        if self.setup_error is not None:
            await session.close()
            return []
        self.session, self.settings = session, session.settings
        try:
            return session.start_transcript()
        except SessionError as exc:
            session.recorder.new()
            return [f"{exc}; this is a new session"]

    async def _show_local_model_loading(self) -> Callable[[LocalModelServer | None], None]:
        """A notice that counts the seconds while the local model loads; call what this returns
        with the server once it serves (None: it did not start)."""
        notice = Notice("Loading the local model…")
        await self.chat.add(notice)
        started = time.monotonic()
        ticker = self.set_interval(
            0.25, lambda: notice.update(f"Loading the local model… {time.monotonic() - started:.1f}s")
        )

        def loaded(server: LocalModelServer | None) -> None:
            ticker.stop()
            if server is None:
                notice.update("The local model did not start.")
                return
            notice.update(
                f"Local model {server.gguf.stem} ready in {time.monotonic() - started:.1f}s: no API key needed "
                "(a small model answers, but seldom uses tools well)."
            )

        return loaded

    async def _session_opened(self, notes: list[str]) -> None:
        """Show what opening the session brought: a resumed conversation, notes, or the error."""
        runner, recorder = self.runner, self.recorder
        if runner is not None and runner.conversation.messages:
            session_id = recorder.session_id if recorder is not None else None
            if self._previewed != (session_id, len(runner.conversation.messages)):  # not drawn yet
                await self.show_history()
        for note in notes:
            await self.chat.add_notice(note)
        settle_heap(whole=False)
        if self.setup_error:
            await self.chat.add_notice(self.setup_error, "error")
        self.show_status()
        self._watch_machines()
        self.query_one(McpPanel).follow(self.session.mcp if self.session else None)
        self.show_context_window()

    @work(group="window", exclusive=True, exit_on_error=False)
    async def show_context_window(self) -> None:
        """Learn the model's context window (the Models API may be asked) for the status line."""
        if self.session is not None:
            self.status.update_facts(context_window=await self.session.context_window())

    def _watch_machines(self) -> None:
        fleet = self.session.fleet if self.session else None
        if fleet is None:
            return
        panel = self.query_one(MachinesPanel)
        panel.set_machines([spec.name for spec in fleet.inventory if not spec.is_local])
        panel.set_target(fleet.target_name or LOCAL)
        fleet.listeners.append(lambda spec, health: panel.set_health(spec.name, health))
        if len(fleet.inventory) > 1:
            self.probe_machines()
            self.set_interval(HEALTH_REFRESH_S, self.probe_machines)

    @work(group="health", exclusive=True, exit_on_error=False)
    async def probe_machines(self) -> None:
        """Probe every machine in the background; the panel updates as answers come."""
        if self.session is not None and self.session.fleet is not None:
            await self.session.fleet.probe_all()

    async def on_machines_panel_target_chosen(self, message: MachinesPanel.TargetChosen) -> None:
        if self.session is None:
            return
        try:
            target = self.session.set_target(message.name)
        except MachineError as exc:
            await self.chat.add_notice(str(exc), "error")
            return
        where = target.name if target else "this machine"
        self.query_one(MachinesPanel).set_target(target.name if target else LOCAL)
        await self.chat.add_notice(f"Working on {where} now (from the next turn).")
        self.show_status()

    async def show_history(self) -> None:
        """Draw a resumed conversation: prompts, replies and tool calls with their results (and
        the summary it starts with, folded, when it was compacted)."""
        assert self.runner is not None
        await self.reset_display()
        await self.chat.show_messages(self.runner.conversation.messages, self.event_router.records)

    async def reset_display(self) -> None:
        self.event_router.records.clear()
        self.query_one(ToolPanel).clear()
        await self.chat.clear()
        self.status.update_facts(turn=0, loop=0)

    async def on_unmount(self) -> None:
        for session in (self.session, self._opening):  # a session still opening: stop its model
            if session is not None:
                await session.close()

    @property
    def runner(self) -> Runner | None:
        return self.session.runner if self.session else None

    @property
    def recorder(self) -> SessionRecorder | None:
        return self.session.recorder if self.session else None

    @property
    def permissions(self) -> Permissions | None:
        return self.session.permissions if self.session else None

    @property
    def chat(self) -> ChatLog:
        return self.query_one(ChatLog)

    @property
    def status(self) -> StatusLine:
        return self.query_one(StatusLine)

    @property
    def running(self) -> bool:
        return any(w.group == "agent" and w.state in (WorkerState.PENDING, WorkerState.RUNNING) for w in self.workers)

    def show_status(self) -> None:
        config = self.runner.config if self.runner else None
        fleet = self.session.fleet if self.session else None
        self.status.update_facts(
            budget_usd=config.max_budget_usd if config else None,
            model=config.model if config else "(no model)",
            machine=(fleet.target_name if fleet else None) or "local",
            sandbox=fleet.sandbox.label if fleet else "",
            loop_enabled=bool(config and config.loop.enabled),
            max_loops=config.loop.max_loops if config else 0,
            running=self.running,
        )
        self.query_one("#stop", Button).disabled = not self.running

    # --- layout --------------------------------------------------------------------------------

    def on_resize(self) -> None:
        if not self._panels_user_set:
            self._fold_panels_for(self.size.width)
        self.action_redraw()  # a terminal may lose cells in a resize, even one back to the same size

    def _fold_panels_for(self, width: int) -> None:
        wide = width >= NARROW_WIDTH
        self._set_panels(tools=wide, machines=wide)

    def _set_panels(self, *, tools: bool, machines: bool) -> None:
        self.query_one("#tools").display = tools
        self.query_one("#machines").display = machines
        self.query_one("#side").display = tools or machines

    def action_toggle_tools(self) -> None:
        self._panels_user_set = True
        tools = not self.query_one("#tools").display
        self._set_panels(tools=tools, machines=self.query_one("#machines").display)
        if tools:
            self.query_one("#tool-table").focus()

    def action_toggle_machines(self) -> None:
        self._panels_user_set = True
        machines = not self.query_one("#machines").display
        self._set_panels(tools=self.query_one("#tools").display, machines=machines)
        if machines:
            self.query_one("#machine-list").focus()

    # --- input ---------------------------------------------------------------------------------

    async def on_prompt_input_submitted(self, message: PromptInput.Submitted) -> None:
        if parse_slash(message.text) is not None:
            await self.run_slash(message.text)
        else:
            await self.send(message.text)

    async def send(self, text: str) -> None:
        if self.running:
            await self.chat.add_notice("A turn is running: wait for it, or press Esc to stop it.", "warning")
            return
        await self.chat.add_user_message(text)
        if self.session_ready.is_set() and await self.ready_session() is None:
            return
        self.run_agent(text)

    async def run_slash(self, text: str) -> None:
        command = parse_slash(text)
        if command is None:
            return
        slash_command = self.commands.find(command.name)
        if slash_command is None:
            await self.chat.add_notice(self.commands.unknown_command_hint(command.name), "warning")
            return
        await slash_command.handler(self, command.argument)

    async def ready_session(self) -> Session | None:
        """The open session; None (after saying why) when there is none: no key, or a broken
        setting."""
        if self.session is not None:
            return self.session
        await self.chat.add_notice(self.setup_error or NO_KEY_HELP, "error")
        return None

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "stop":
            self.action_stop()

    def on_tool_output_requested(self, message: ToolOutputRequested) -> None:
        self.push_screen(OutputScreen(message.record))

    # --- the agent -----------------------------------------------------------------------------

    @work(exclusive=True, group="agent", exit_on_error=False)
    async def run_agent(self, prompt: str) -> None:
        self.call_after_refresh(self.show_status)
        await self.session_ready.wait()
        if (session := await self.ready_session()) is None:
            return
        await session.run(prompt, self.event_router.deliver)

    @work(exclusive=True, group="agent", exit_on_error=False)
    async def run_compaction(self, instructions: str) -> None:
        """/compact: like a turn (Esc stops it); its events show how it went, a failure too."""
        self.call_after_refresh(self.show_status)
        await self.session_ready.wait()
        if (session := await self.ready_session()) is None:
            return
        await session.compact(self.event_router.deliver, instructions)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group != "agent":
            return
        self.show_status()
        if event.state == WorkerState.ERROR:
            error = event.worker.error
            self.call_later(self.chat.add_notice, f"Internal error: {type(error).__name__}: {error}", "error")
        if event.state in (WorkerState.SUCCESS, WorkerState.ERROR, WorkerState.CANCELLED):
            self.set_timer(GC_AFTER_TURN_S, settle_heap)

    def action_stop(self) -> None:
        if not self.running:
            return
        if self.session_ready.is_set():
            self.ui_cancel.fire()
        else:  # still waiting for the SDK to load: nothing has started yet
            self.workers.cancel_group(self, "agent")
            self.call_later(self.chat.add_notice, "■ Stopped.", "stopped")

    def action_copy_reply(self) -> None:
        """The last reply to the clipboard, with OSC 52 (so it works over SSH too)."""
        self.copy_text(self.chat.last_reply, "the last reply")

    def on_tool_output_copy_requested(self, message: ToolOutputCopyRequested) -> None:
        self.copy_text(message.record.shown_output, f"the output of {message.record.name}")

    def action_copy_tool_output(self) -> None:
        record = self.query_one(ToolPanel).highlighted()
        if record is not None:
            self.copy_text(record.shown_output, f"the output of {record.name}")
        else:
            self.notify("No tool call to copy from yet.", severity="warning")

    def copy_text(self, text: str, what: str) -> None:
        if not text:
            self.notify(f"Nothing to copy: there is no {what.removeprefix('the ')} yet.", severity="warning")
            return
        self.copy_to_clipboard(mask(text))  # as the screen shows it: secrets stay masked
        self.notify(f"Copied {what} ({len(text):,} characters) to the clipboard.")

    def action_interrupt(self) -> None:
        """ctrl+c: stops a running turn (as terminal users expect), else says how to quit."""
        if self.running:
            self.action_stop()
        else:
            self.action_help_quit()

    async def action_request_quit(self) -> None:
        if not self.running:
            self.exit()
            return

        def answered(quit_now: bool | None) -> None:
            if quit_now:
                self.ui_cancel.fire()
                self.exit()

        self.push_screen(ConfirmScreen("A turn is running. Stop it and quit?", yes="Quit", no="Stay"), answered)


async def _open_or_explain(session: Session) -> str | None:
    """Open `session`; None when it opened, else why not, for the user."""
    try:
        await session.open()
    except MissingKeyError:
        return NO_KEY_HELP
    except LocalModelError as exc:
        return f"The local model did not start: {exc}"
    except (SettingsError, MachineError, PermissionsError) as exc:
        return str(exc)
    return None
