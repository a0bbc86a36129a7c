"""Earlier sessions, newest first: Enter resumes one, Esc goes back."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option

from cmdop_tui.support.text import inert_line
from cmdop_tui.transcripts import SessionInfo, list_sessions, messages_count


def sessions_with_messages() -> list[SessionInfo]:
    """The sessions worth resuming: a launch that sent nothing is left out."""
    return [info for info in list_sessions() if info.messages]


class SessionsScreen(ModalScreen[str | None]):
    DEFAULT_CSS = """
    SessionsScreen {
        align: center middle;

        #sessions-dialog {
            width: 90%;
            height: auto;
            max-height: 80%;
            padding: 1 2;
            border: thick $primary;
            background: $surface;
        }

        #sessions-list {
            height: auto;
            max-height: 20;
            margin-top: 1;
        }
    }
    """

    BINDINGS = [Binding("escape", "dismiss(None)", "Back")]

    def __init__(self, sessions: list[SessionInfo], current: str | None) -> None:
        super().__init__()
        self.sessions = sessions
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical(id="sessions-dialog"):
            yield Label(Content.styled("Sessions: Enter resumes, Esc goes back", "bold"))
            options = [self._option(info) for info in self.sessions]
            yield OptionList(*options, id="sessions-list") if options else Label("No earlier sessions.")

    def _option(self, info: SessionInfo) -> Option:
        when = info.updated.astimezone().strftime("%Y-%m-%d %H:%M") if info.updated else "?"
        mark = " (this one)" if info.id == self.current else ""
        prompt = Content.assemble(
            (f"{when}  ", "$text-muted"),
            (inert_line(info.title or "(no prompt)"), "bold"),
            (f"  {messages_count(info.messages)} · {info.id}{mark}", "$text-muted"),
        )
        return Option(prompt, id=info.id)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)
