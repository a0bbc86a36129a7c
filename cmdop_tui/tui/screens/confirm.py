"""A yes/no question, e.g. quitting while a turn runs."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Label

from cmdop_tui.tui.screens.question import QuestionScreen


class ConfirmScreen(QuestionScreen[bool]):
    DEFAULT_CSS = """
    ConfirmScreen #confirm-dialog > Label {
        width: 100%;  /* a long question wraps in the box instead of being cut at its edge */
    }
    """
    BINDINGS = [Binding("y", "answer(True)", "Yes"), Binding("n,escape", "answer(False)", "No")]

    def __init__(self, question: str, yes: str = "Yes", no: str = "No") -> None:
        super().__init__()
        self.question = question
        self.yes = yes
        self.no = no

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-dialog", classes="question"):
            yield Label(self.question, markup=False)
            with Horizontal(id="confirm-buttons", classes="question-buttons"):
                yield Button(f"{self.yes} (y)", id="yes", variant="error")
                yield Button(f"{self.no} (n)", id="no", variant="primary")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "yes")

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)
