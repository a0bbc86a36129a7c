"""The session's life in the app: loading, open or failed, as one value the app holds reactively.

The session opens after the first paint (it loads the model SDK, about a second): the prompt is
usable meanwhile, and a prompt sent early waits for `SessionOpener.ready`. A resumed session's tail
is drawn straight from its transcript while that happens. With no API key and the bundled local
model at hand, the user is offered it; the local model's loading is counted on screen. The opener
draws what opening brought (a resumed conversation, notes, the error) and then hands the app its
new `SessionState`, whose watcher updates the rest of the screen.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from cmdop_tui.agent.cancel import UICancel
from cmdop_tui.config.settings import Settings, SettingsError
from cmdop_tui.session import load_session_class
from cmdop_tui.session.errors import MissingKeyError
from cmdop_tui.support.figures import duration
from cmdop_tui.tui.widgets.chat_log import ChatLog
from cmdop_tui.tui.widgets.notice import Notice

if TYPE_CHECKING:  # types only: the app draws before the session (and its SDK) is imported
    import anthropic
    from textual.timer import Timer

    from cmdop_tui.agent.approval import Approver
    from cmdop_tui.agent.context import SessionFacts
    from cmdop_tui.agent.policies import RetryPolicy
    from cmdop_tui.mcp.asks import Elicitor
    from cmdop_tui.session.local_model import LocalModelServer
    from cmdop_tui.session.recorder import TranscriptNotice
    from cmdop_tui.session.session import Session
    from cmdop_tui.transcripts import KeptOutputs, LoadedSession
    from cmdop_tui.tui.vocabulary.tool_records import ToolRecord

LOCAL_OFFER = (
    "No API key is set. Start a local model instead? It runs on this machine with no key "
    "(llama.cpp with a small model: it answers, but seldom uses tools well)."
)
NO_KEY_HELP = (
    "No API key. Set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN) in the environment and start "
    "cmdop-tui again; for another Anthropic-compatible endpoint also set ANTHROPIC_BASE_URL. "
    "Or use a local model with no key: /local here, or cmdop-tui --local."
)
NOT_NOW = "Not now: /local starts the local model whenever you want it."
# The SDK's import holds the interpreter for a good part of its second; begun with the first
# frame it slows the first keys typed as the prompt appears (measured: 15-19 ms on each). A
# tenth of a second's wait lets those keys through and is lost in the second opening takes.
SDK_LOAD_DELAY_S = 0.1


@dataclass(frozen=True)
class SessionState:
    """Where the app's session is in its life: still loading, open, or failed (and why)."""

    phase: Literal["loading", "open", "failed"] = "loading"
    session: Session | None = None
    error: str | None = None  # why it failed, for the user


@dataclass(frozen=True)
class Opening:
    """What the opener is given: the app's cancel channel and what tests pin."""

    ui_cancel: UICancel
    client: anthropic.AsyncAnthropic | None = None
    retry: RetryPolicy | None = None
    facts: SessionFacts | None = None
    offer_local_model: bool = True


class OpenerHost(Protocol):
    """What the opener uses of the app."""

    settings: Settings
    session_state: SessionState

    @property
    def chat(self) -> ChatLog: ...
    @property
    def tool_records(self) -> dict[str, ToolRecord]: ...
    async def show_history(self) -> None: ...
    def set_interval(self, interval: float, callback: Callable[[], object]) -> Timer: ...
    def push_screen(self, screen: Any, callback: Any = None) -> Any: ...
    def run_worker(self, work: Any, *, group: str = "default", exit_on_error: bool = True) -> Any: ...


class SessionOpener:
    """Opens the app's session, once at start and again with the local model when accepted."""

    def __init__(self, host: OpenerHost, ask: Approver, opening: Opening, elicit: Elicitor | None = None) -> None:
        """`ask`: the approval modal; `elicit`: the dialog of an MCP server's question."""
        self.host = host
        self.ask = ask
        self.elicit = elicit
        self.opening = opening
        self.ready = asyncio.Event()  # set once the first attempt has ended, either way
        self.pending: Session | None = None  # a session still opening (its model stops on quit)
        self._previewed: tuple[str, int] | None = None  # a resumed session drawn from its transcript
        self.previewed_outputs: KeptOutputs | None = None  # its kept outputs, read before it opens
        self.local_starting = False  # the local model is being started (/local or the offer)

    def start(self) -> None:
        """After the first paint: draw a resumed session's tail, and open the session."""
        if self.host.settings.run.resume or self.host.settings.run.continue_latest:
            self.host.run_worker(self.preview(), group="preview", exit_on_error=False)
        self.host.run_worker(self.open_first(), group="setup", exit_on_error=False)

    async def preview(self) -> None:
        """Draw the tail of the session being resumed from its transcript, while the session
        (and the SDK) still load: a long session is on screen at once."""
        loaded = await asyncio.to_thread(_read_transcript, self.host.settings.run.resume)
        if (
            loaded is not None and self.host.session_state.session is None
        ):  # else the session was quicker and has drawn it
            self._previewed = (loaded.id, len(loaded.messages))
            from cmdop_tui.transcripts import KeptOutputs, outputs_dir  # loaded by the read above

            self.previewed_outputs = KeptOutputs(outputs_dir(loaded.path))
            await self.host.chat.show_messages(loaded.messages, self.host.tool_records)

    async def open_first(self) -> None:
        """Load the SDK and open the session; offer the local model when there is no key."""
        try:
            await asyncio.sleep(SDK_LOAD_DELAY_S)
            session_class = await asyncio.to_thread(load_session_class)
            state, notes = await self._open(session_class)
        finally:
            self.ready.set()
        await self._opened(state, notes)
        from cmdop_tui.session.local_model import local_model_available  # loaded with the session

        if state.error == NO_KEY_HELP and self.opening.offer_local_model and local_model_available(self.host.settings):
            from cmdop_tui.tui.screens.confirm import ConfirmScreen

            offer = ConfirmScreen(LOCAL_OFFER, yes="Start local model", no="Not now")
            self.host.push_screen(offer, self._local_offer_answered)

    def _local_offer_answered(self, start: bool | None) -> None:
        if start:
            self.start_local()
        else:
            self.host.run_worker(self.host.chat.add_notice(NOT_NOW), group="setup", exit_on_error=False)

    def start_local(self) -> None:
        """Open the session again, now with the local model (the offer accepted, or /local)."""
        self.local_starting = True
        self.host.settings = self.host.settings.with_run(local=True)
        self.host.run_worker(self.open_local(), group="setup", exit_on_error=False)

    async def open_local(self) -> None:
        """After the offer: open the session again, now with the local model."""
        try:
            state, notes = await self._open(load_session_class())
        finally:
            self.local_starting = False
        if state.error is not None:  # not started: /local may try again, a prompt says what failed
            self.host.settings = self.host.settings.with_run(local=False)
        await self._opened(state, notes)

    async def close(self) -> None:
        """Close the session, and one still opening (its local model stops)."""
        for session in (self.host.session_state.session, self.pending):
            if session is not None:
                await session.close()

    async def _open(self, session_class: type[Session]) -> tuple[SessionState, list[str]]:
        """Open a session for the settings: its state, and notes for the user."""
        from cmdop_tui.agent.policies import RetryPolicy  # loaded with the session

        given = self.opening
        session = self.pending = session_class(
            self.host.settings,
            platform="tui",
            ask=self.ask,
            elicit=self.elicit,
            ui_cancel=given.ui_cancel,
            client=given.client,
            retry=given.retry or RetryPolicy(),
            facts=given.facts,
        )
        loaded = await self._show_local_model_loading() if self.host.settings.run.local else None
        try:
            error = await _open_or_explain(session)
        finally:
            self.pending = None
        if loaded is not None:
            loaded(session.local_model if error is None else None)
        if error is not None:
            await session.close()
            return SessionState("failed", error=error), []
        notes = list(session.mcp_notes)  # a .mcp.json waiting for trust, a broken one (the status line has the sandbox)
        from cmdop_tui.transcripts import SessionError  # loaded with the session

        try:
            notes += session.start_transcript()
        except SessionError as exc:
            notes += [f"{exc}; this is a new session", *session.recorder.new()]
        return SessionState("open", session=session), [*session.machine_notes, *notes]

    async def _opened(self, state: SessionState, notes: list[str]) -> None:
        """Show what opening brought (a resumed conversation, notes, the error), then hand the
        app the new state."""
        if state.session is not None:
            self.host.settings = state.session.settings
            self.host.session_state = state
            state.session.recorder.listeners.append(self._say_transcript_notice)
            messages = state.session.runner.conversation.messages
            if messages and self._previewed != (state.session.recorder.session_id, len(messages)):
                await self.host.show_history()  # not drawn from the transcript yet
        for note in notes:
            await self.host.chat.add_notice(note)
        if state.error:
            await self.host.chat.add_notice(state.error, "error")
            self.host.session_state = state

    def _say_transcript_notice(self, notice: TranscriptNotice) -> None:
        """What goes wrong with the transcript (a full disk, the file removed), said at once."""
        self.host.run_worker(
            self.host.chat.add_notice(notice.text, notice.level), group="transcript", exit_on_error=False
        )

    async def _show_local_model_loading(self) -> Callable[[LocalModelServer | None], None]:
        """A notice that counts the seconds while the local model loads; call what this returns
        with the server once it serves (None: it did not start)."""
        notice = Notice("Loading the local model…")
        await self.host.chat.add(notice)
        started = time.monotonic()
        ticker = self.host.set_interval(
            0.25, lambda: notice.update(f"Loading the local model… {duration(time.monotonic() - started)}")
        )

        def loaded(server: LocalModelServer | None) -> None:
            ticker.stop()
            if server is None:
                notice.update("The local model did not start.")
                return
            notice.update(
                f"Local model {server.gguf.stem} ready in {duration(time.monotonic() - started)}: no API key needed "
                "(a small model answers, but seldom uses tools well)."
            )

        return loaded


def _read_transcript(session_id: str | None) -> LoadedSession | None:
    """The transcript of the session being resumed (by default the latest); None when there is
    none or it cannot be read (the session's own opening says why). Run in a thread: the
    transcripts' code is imported there, not before the first paint."""
    from cmdop_tui import transcripts

    session_id = session_id or transcripts.latest()
    if session_id is None:
        return None
    try:
        return transcripts.load(session_id)
    except (OSError, transcripts.SessionError):
        return None


async def _open_or_explain(session: Session) -> str | None:
    """Open `session`; None when it opened, else why not, for the user."""
    from cmdop_tui.machines.spec import MachineError  # these three are loaded with the session
    from cmdop_tui.permissions import PermissionsError
    from cmdop_tui.session.local_model import LocalModelError

    try:
        await session.open()
    except MissingKeyError:
        return NO_KEY_HELP
    except LocalModelError as exc:
        return f"The local model did not start: {exc}"
    except (SettingsError, MachineError, PermissionsError) as exc:
        return str(exc)
    return None
