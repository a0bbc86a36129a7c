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
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from textual import constants as textual_constants
from textual import work
from textual.app import App, ComposeResult, SuspendNotSupported
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Footer
from textual.worker import Worker, WorkerState

from cmdop_tui.agent.approval import Approval, ToolCall
from cmdop_tui.agent.budget import format_usd
from cmdop_tui.agent.cancel import UICancel
from cmdop_tui.agent.context import SessionFacts
from cmdop_tui.agent.policies import RetryPolicy
from cmdop_tui.config.settings import Settings, SettingsError
from cmdop_tui.machines.spec import LOCAL, MachineError
from cmdop_tui.permissions import PermissionsError
from cmdop_tui.session import load_session_class
from cmdop_tui.session.errors import MissingKeyError
from cmdop_tui.session.local_model import LocalModelError, LocalModelServer, local_model_available
from cmdop_tui.session.memory import user_memory_path
from cmdop_tui.support.editor import editor_argv
from cmdop_tui.support.secrets import mask
from cmdop_tui.transcripts import SessionError, export_markdown, list_sessions
from cmdop_tui.tui.commands import (
    COMMAND_REGISTRY,
    CmdopCommands,
    PaletteEntry,
    agent_profile_entries,
    model_alias_entries,
    parse_slash,
)
from cmdop_tui.tui.driver import PromptEscapeDriver
from cmdop_tui.tui.events import EventRouter
from cmdop_tui.tui.screens.approval import ApprovalChoice, ApprovalScreen
from cmdop_tui.tui.screens.confirm import ConfirmScreen
from cmdop_tui.tui.screens.output_view import OutputScreen
from cmdop_tui.tui.screens.sessions import SessionsScreen
from cmdop_tui.tui.themes import DEFAULT_THEME, load_themes, register_themes
from cmdop_tui.tui.vocabulary.messages import (
    ToolOutputCopyRequested,
    ToolOutputRequested,
)
from cmdop_tui.tui.widgets.chat_log import ChatLog
from cmdop_tui.tui.widgets.machines_panel import MachineInfo, MachinesPanel
from cmdop_tui.tui.widgets.notice import Notice
from cmdop_tui.tui.widgets.prompt_input import PromptInput
from cmdop_tui.tui.widgets.status_line import StatusLine
from cmdop_tui.tui.widgets.tool_panel import ToolPanel

if TYPE_CHECKING:
    import anthropic

    from cmdop_tui.agent.context_usage import ContextUsage
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


def settle_heap() -> None:
    """Collect, then freeze what survives, at a quiet moment (start-up, after a turn).

    The SDK, Textual and a growing chat make a large heap of long-lived objects; a full collection
    that walks them all stalls the UI for ~50-100 ms in the middle of a stream. Frozen objects are
    never walked again, so collections during the next turn only see what that turn creates.
    """
    gc.collect()
    gc.freeze()


def _positive_number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if value > 0 else None


class CmdopApp(App[None]):
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
    ) -> None:
        """`client`, `retry`, `facts` and `machine` replace what the app would find itself
        (tests pin them so that screenshots are the same on every machine)."""
        # Our Linux driver only for a real terminal: textual-serve (`serve`) chooses its web driver
        # through TEXTUAL_DRIVER, which a driver named here would override.
        terminal = sys.platform != "win32" and not textual_constants.DRIVER
        super().__init__(driver_class=PromptEscapeDriver if terminal else None)
        self.settings = settings
        self._retry = retry or RetryPolicy()
        self._facts = facts
        self._machine = machine
        self.ui_cancel = UICancel()
        self.setup_error: str | None = None
        self.session: Session | None = None
        self._opening: Session | None = None  # until open, for on_unmount
        self._client = client
        self._session_ready = asyncio.Event()
        self._panels_user_set = False
        self.theme_problems: list[str] = []
        self._offer_local = offer_local_model

    # --- set-up --------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        with Horizontal(id="body"):
            yield ChatLog(id="chat")
            with Vertical(id="side"):
                yield MachinesPanel(id="machines", machine=self._machine)
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
        self.query_one(PromptInput).cursor_blink = False  # a blinking cursor repaints forever over SSH
        self.query_one(PromptInput).focus()
        await self.chat.add_notice(WELCOME.format(host=self.query_one(MachinesPanel).machine.name))
        for problem in self.theme_problems:
            await self.chat.add_notice(problem, "warning")
        self.prepare_session()

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
            self._session_ready.set()
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
            ask=self.ask_approval,
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
        if self.runner is not None and self.runner.conversation.messages:
            await self._show_history()
        for note in notes:
            await self.chat.add_notice(note)
        settle_heap()
        if self.setup_error:
            await self.chat.add_notice(self.setup_error, "error")
        self._show_status()
        self._watch_machines()
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
        self._show_status()

    async def _show_history(self) -> None:
        """Draw a resumed conversation: prompts, replies and tool calls with their results (and
        the summary it starts with, folded, when it was compacted)."""
        assert self.runner is not None
        await self._reset_display()
        await self.chat.show_messages(self.runner.conversation.messages, self.event_router.records)

    async def _reset_display(self) -> None:
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

    def _show_status(self) -> None:
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

    def _fold_panels_for(self, width: int) -> None:
        wide = width >= NARROW_WIDTH
        self._set_panels(tools=wide, machines=wide)

    def _set_panels(self, *, tools: bool, machines: bool) -> None:
        self.query_one("#tools").display = tools
        self.query_one("#machines").display = machines
        self.query_one("#side").display = tools or machines

    @COMMAND_REGISTRY.palette_action("Toggle the tool-activity panel", "F2")
    def action_toggle_tools(self) -> None:
        self._panels_user_set = True
        tools = not self.query_one("#tools").display
        self._set_panels(tools=tools, machines=self.query_one("#machines").display)
        if tools:
            self.query_one("#tool-table").focus()

    @COMMAND_REGISTRY.palette_action("Toggle the machines panel", "F3")
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
        if self._session_ready.is_set() and await self._ready_session() is None:
            return
        self.run_agent(text)

    async def run_slash(self, text: str) -> None:
        command = parse_slash(text)
        if command is None:
            return
        slash_command = COMMAND_REGISTRY.find(command.name)
        if slash_command is None:
            await self.chat.add_notice(COMMAND_REGISTRY.unknown_command_hint(command.name), "warning")
            return
        await slash_command.handler(self, command.argument)

    async def _ready_session(self) -> Session | None:
        """The open session; None (after saying why) when there is none: no key, or a broken
        setting."""
        if self.session is not None:
            return self.session
        await self.chat.add_notice(self.setup_error or NO_KEY_HELP, "error")
        return None

    @COMMAND_REGISTRY.slash("/help", "show commands and keys", palette=(PaletteEntry("Show help"),))
    async def _slash_help(self, argument: str) -> None:
        keys = [
            ("Enter", "send"),
            ("ctrl+j", "new line"),
            ("Up/Down", "earlier prompts"),
            ("ctrl+p", "command palette"),
        ]
        keys += [(b.key, b.description) for b in self.BINDINGS if isinstance(b, Binding)]
        await self.chat.add_notice(COMMAND_REGISTRY.help_text(keys))

    @COMMAND_REGISTRY.slash("/clear", "start a new conversation", palette=(PaletteEntry("Clear the conversation"),))
    async def _slash_clear(self, argument: str) -> None:
        if self.running:
            await self.chat.add_notice("Stop the running turn before clearing.", "warning")
            return
        if self.session is not None:
            self.session.new_conversation()
        await self._reset_display()

    @COMMAND_REGISTRY.slash(
        "/model NAME", "switch model (an id or @fast, @balanced, @smart)", palette=model_alias_entries
    )
    async def _slash_model(self, argument: str) -> None:
        if not argument or self.session is None:
            current = self.session.runner.config.model if self.session else "(none)"
            await self.chat.add_notice(
                f"Model: {current}. Usage: /model NAME (an id or {', '.join(self.settings.aliases)})"
            )
            return
        try:
            model = self.session.use_model(argument)
        except SettingsError as exc:
            await self.chat.add_notice(str(exc), "error")
            return
        await self.chat.add_notice(f"Model: {model}")
        self.show_context_window()
        self._show_status()

    @COMMAND_REGISTRY.slash(
        "/loop on|off",
        "loop mode: keep going until a breaker phrase",
        palette=(PaletteEntry("Loop mode on", "on"), PaletteEntry("Loop mode off", "off")),
    )
    async def _slash_loop(self, argument: str) -> None:
        if argument not in ("on", "off") or self.session is None:
            await self.chat.add_notice("Usage: /loop on|off", "warning")
            return
        self.session.set_loop(argument == "on")
        await self.chat.add_notice(f"Loop mode {argument} (from the next prompt).")
        self._show_status()

    @COMMAND_REGISTRY.slash(
        "/context", "what fills the model's context", palette=(PaletteEntry("Show what fills the context"),)
    )
    async def _slash_context(self, argument: str) -> None:
        if (session := await self._ready_session()) is None:
            return
        window = await session.context_window()
        await self.chat.add_notice(
            context_report(session.runner.context_usage(), window, session.runner.last_context_tokens)
        )

    @COMMAND_REGISTRY.slash(
        "/compact [INSTRUCTIONS]",
        "summarise the conversation so far to free context (Esc stops)",
        palette=(PaletteEntry("Compact the conversation"),),
    )
    async def _slash_compact(self, argument: str) -> None:
        if self.running:
            await self.chat.add_notice("A turn is running: wait for it, or press Esc to stop it.", "warning")
            return
        if self._session_ready.is_set() and await self._ready_session() is None:
            return
        self.run_compaction(argument)

    @COMMAND_REGISTRY.slash(
        "/memory", "your standing instructions, in $EDITOR", palette=(PaletteEntry("Edit your standing instructions"),)
    )
    async def _slash_memory(self, argument: str) -> None:
        path = user_memory_path()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch(mode=0o600, exist_ok=True)
            with self.suspend():
                subprocess.call(editor_argv(path))
        except SuspendNotSupported:  # no terminal to give the editor (a browser, a test)
            await self.chat.add_notice(f"Your standing instructions are in {path}: edit it there.")
            return
        except OSError as exc:
            await self.chat.add_notice(f"Cannot open {path} in your editor: {exc.strerror or exc}", "error")
            return
        if self.session is not None:
            self.session.reload_memory()
        await self.chat.add_notice(f"Your standing instructions ({path}) apply from the next request.")

    @COMMAND_REGISTRY.slash("/budget [USD|off]", "the session's spending limit")
    async def _slash_budget(self, argument: str) -> None:
        if (session := await self._ready_session()) is None:
            return
        runner = session.runner
        wanted = argument.strip().lower().lstrip("$")
        if wanted:
            budget = None if wanted == "off" else _positive_number(wanted)
            if budget is None and wanted != "off":
                await self.chat.add_notice("Usage: /budget USD (a positive amount), or /budget off", "warning")
                return
            session.set_budget(budget)
        limit = runner.config.max_budget_usd
        limit_text = f"the budget is {format_usd(limit)}" if limit is not None else "there is no budget"
        await self.chat.add_notice(f"Spent about {format_usd(runner.spent_usd)} this session; {limit_text}.")
        self._show_status()

    @COMMAND_REGISTRY.slash("/agent NAME", "switch agent profile", palette=agent_profile_entries)
    async def _slash_agent(self, argument: str) -> None:
        if (session := await self._ready_session()) is None:
            return
        if not argument:
            names = ", ".join(self.settings.agents)
            await self.chat.add_notice(f"Agent: {self.settings.agent.name}. Usage: /agent NAME ({names})")
            return
        try:
            config = session.use_agent(argument)
        except SettingsError as exc:
            await self.chat.add_notice(str(exc), "error")
            return
        self.settings = session.settings
        self.show_context_window()
        await self.chat.add_notice(f"Agent profile {argument} (model {config.model}) from the next prompt.")
        self._show_status()

    @COMMAND_REGISTRY.slash(
        "/sessions", "earlier sessions; Enter resumes one", palette=(PaletteEntry("Resume an earlier session"),)
    )
    async def _slash_sessions(self, argument: str) -> None:
        if (session := await self._ready_session()) is None:
            return
        recorder = session.recorder
        self.push_screen(SessionsScreen(list_sessions(), recorder.session_id), self._resume_chosen)

    async def _resume_chosen(self, session_id: str | None) -> None:
        if session_id is None or self.recorder is None or session_id == self.recorder.session_id:
            return
        if self.running:
            await self.chat.add_notice("Stop the running turn before switching sessions.", "warning")
            return
        try:
            notes = self.recorder.resume(session_id)
        except SessionError as exc:
            await self.chat.add_notice(str(exc), "error")
            return
        await self._show_history()
        for note in notes:
            await self.chat.add_notice(note)

    @COMMAND_REGISTRY.slash(
        "/export [PATH]", "write this session as Markdown", palette=(PaletteEntry("Export this session as Markdown"),)
    )
    async def _slash_export(self, argument: str) -> None:
        if (session := await self._ready_session()) is None:
            return
        recorder = session.recorder
        path = Path(argument).expanduser() if argument else Path.cwd() / f"cmdop-session-{recorder.session_id}.md"
        markdown = export_markdown(
            recorder.whole_history(),  # what compactions summarised too
            title=f"cmdop-tui session {recorder.session_id}",
            extra_secrets=recorder.secrets,
        )
        try:
            path.write_text(markdown, encoding="utf-8")
        except OSError as exc:
            await self.chat.add_notice(f"Could not write {path}: {exc.strerror}", "error")
            return
        await self.chat.add_notice(f"Exported this session to {path}")

    @COMMAND_REGISTRY.slash(
        "/stop", "stop the running turn (also Esc)", palette=(PaletteEntry("Stop the running turn", hint="Esc"),)
    )
    async def _slash_stop(self, argument: str) -> None:
        self.action_stop()

    @COMMAND_REGISTRY.slash("/exit", "quit (also ctrl+q)", palette=(PaletteEntry("Quit", hint="ctrl+q"),))
    async def _slash_exit(self, argument: str) -> None:
        await self.action_request_quit()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "stop":
            self.action_stop()

    def on_tool_output_requested(self, message: ToolOutputRequested) -> None:
        self.push_screen(OutputScreen(message.record))

    # --- the agent -----------------------------------------------------------------------------

    @work(exclusive=True, group="agent", exit_on_error=False)
    async def run_agent(self, prompt: str) -> None:
        self.call_after_refresh(self._show_status)
        await self._session_ready.wait()
        if (session := await self._ready_session()) is None:
            return
        await session.run(prompt, self.event_router.deliver)

    @work(exclusive=True, group="agent", exit_on_error=False)
    async def run_compaction(self, instructions: str) -> None:
        """/compact: like a turn (Esc stops it); its events show how it went, a failure too."""
        self.call_after_refresh(self._show_status)
        await self._session_ready.wait()
        if (session := await self._ready_session()) is None:
            return
        await session.compact(self.event_router.deliver, instructions)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group != "agent":
            return
        self._show_status()
        if event.state == WorkerState.ERROR:
            error = event.worker.error
            self.call_later(self.chat.add_notice, f"Internal error: {type(error).__name__}: {error}", "error")
        if event.state in (WorkerState.SUCCESS, WorkerState.ERROR, WorkerState.CANCELLED):
            self.set_timer(GC_AFTER_TURN_S, settle_heap)

    def action_stop(self) -> None:
        if not self.running:
            return
        if self._session_ready.is_set():
            self.ui_cancel.fire()
        else:  # still waiting for the SDK to load: nothing has started yet
            self.workers.cancel_group(self, "agent")
            self.call_later(self.chat.add_notice, "■ Stopped.", "stopped")

    @COMMAND_REGISTRY.palette_action("Copy the last reply", "F4")
    def action_copy_reply(self) -> None:
        """The last reply to the clipboard, with OSC 52 (so it works over SSH too)."""
        self.copy_text(self.chat.last_reply, "the last reply")

    def on_tool_output_copy_requested(self, message: ToolOutputCopyRequested) -> None:
        self.copy_text(message.record.shown_output, f"the output of {message.record.name}")

    @COMMAND_REGISTRY.palette_action("Copy the selected tool output", "c in the tool panel")
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

    async def ask_approval(self, call: ToolCall) -> Approval:
        """The approval modal, awaited by the loop. Stop dismisses it."""
        answer: asyncio.Future[ApprovalChoice | None] = asyncio.get_running_loop().create_future()
        screen = ApprovalScreen(
            call.name, call.machine, call.input, timeout_s=self.settings.approval_timeout_s, escalation=call.escalation
        )

        def answered(choice: ApprovalChoice | None) -> None:
            if not answer.done():
                answer.set_result(choice)

        self.push_screen(screen, answered)
        try:
            choice = await answer
        finally:
            if screen.is_attached and screen is self.screen:
                screen.dismiss(ApprovalChoice.DENY)
        if choice in (ApprovalChoice.SESSION, ApprovalChoice.ALWAYS) and self.permissions is not None:
            rule = self.permissions.allow_always(
                call.name, call.input, call.machine, session=choice is ApprovalChoice.SESSION, spec=call.tool
            )
            where = "for this session" if choice is ApprovalChoice.SESSION else "from now on (saved)"
            await self.chat.add_notice(f"Allowed {where}: {rule.text}")
        if choice is ApprovalChoice.STOP:
            self.action_stop()
        if choice in (ApprovalChoice.ONCE, ApprovalChoice.SESSION, ApprovalChoice.ALWAYS):
            return Approval(True)
        return Approval(False, "the user chose Deny" if choice is ApprovalChoice.DENY else "no answer in time")


def context_report(usage: ContextUsage, window: int, last: int | None) -> str:
    """/context's answer: the window, the last request's real size, and the parts estimated."""
    rows = [
        ("System prompt and tools", usage.system_and_tools),
        ("Summary of earlier turns", usage.summary),
        ("Conversation", usage.conversation),
        ("Tool outputs", usage.tool_outputs),
    ]
    lines = [f"Context window: {window:,} tokens."]
    if last is not None:
        lines.append(f"The last request and its reply: {last:,} tokens ({last / window:.0%} of the window).")
    lines.append(f"The next request, estimated: about {usage.total:,} tokens ({usage.total / window:.0%}):")
    lines += [f"  {name:<25} {tokens:>9,}" for name, tokens in rows]
    return "\n".join(lines)


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
