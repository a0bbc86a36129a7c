"""The multi-line prompt: Enter sends, shift+enter / ctrl+j insert a newline, up/down recall.
A paste is text: inserted inert (support/paste.py), never sent without Enter. `/` and `@` open a
completion list (widgets/prompt_completion.py), which takes Up/Down/Tab/Enter/Esc while open.

Esc twice at an empty prompt between turns sends /rewind, as if typed. Esc itself goes on to
the app (where it stops a running turn): an Esc while a turn runs starts no pair.

While a turn runs, Enter queues the text (the app decides) and ctrl+s sends it as steering
(`Steered`). With messages queued (`held_messages`), Up, ctrl+d and Enter at an empty prompt edit,
drop and send them (`QueueEdit`; widgets/queued_messages.py shows them).

Every key of the prompt is a binding (`BINDINGS`, whose tooltips /help lists), and runs as the
prompt takes it from its queue, in the order the keys came (widgets/key_order.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Literal

from textual import events
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import TextArea

from cmdop_tui.support.paste import inert_paste
from cmdop_tui.tui.widgets.key_order import run_binding_now

if TYPE_CHECKING:  # made at the first `/` or `@` typed
    from cmdop_tui.tui.widgets.prompt_completion import PromptCompletion

DOUBLE_ESCAPE_S = 0.8  # the second Esc of a pair comes within this
DOUBLE_ESCAPE_COMMAND = "/rewind"
STEER_KEY = "ctrl+s"
QueueAction = Literal["edit", "drop", "send"]
COMPLETED_AFTER = ("/", "@")  # no list is offered for a text without one of these


class PromptInput(TextArea):
    """A TextArea that submits on Enter and remembers what was sent."""

    DEFAULT_CSS = """
    PromptInput {
        width: 1fr;
        height: auto;
        min-height: 1;
        max-height: 8;
        background: $surface;
    }
    """

    # The footer shows the app's keys; /help shows these, with their tooltips.
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "tab", "app.focus_next", "Panels", show=False, tooltip="to the chat and the panels (typing comes back)"
        ),
        Binding("enter", "send", "Send", show=False, tooltip="send (during a turn: queued, sent when it ends)"),
        Binding(STEER_KEY, "steer", "Steer", show=False, tooltip="steer: to the running turn, at its next step"),
        Binding("shift+enter,ctrl+j", "newline", "New line", show=False, tooltip="new line"),
        Binding(
            "up",
            "earlier",
            "Earlier",
            show=False,
            tooltip="earlier prompt; empty prompt: edit last queued",
        ),
        Binding("down", "later", "Later", show=False, tooltip="later prompt"),
        Binding("ctrl+d", "drop_queued", "Drop", show=False, tooltip="drop the newest queued message (empty prompt)"),
        Binding("pageup", "app.scroll_chat(-1)", "Chat up", show=False, tooltip="scroll the chat a page up"),
        Binding("pagedown", "app.scroll_chat(1)", "Chat down", show=False, tooltip="scroll the chat a page down"),
    ]

    class Sent(Message):
        """Text the user sent from the prompt."""

        def __init__(self, prompt_input: PromptInput, text: str) -> None:
            super().__init__()
            self.prompt_input = prompt_input
            self.text = text

        @property
        def control(self) -> PromptInput:
            return self.prompt_input

    class Submitted(Sent):
        """Enter: the text, to send (queued while a turn runs)."""

    class Steered(Sent):
        """ctrl+s: the text, for the running turn's next step."""

    class QueueEdit(Message):
        """A key for the queued messages: take the newest back, drop it, or send the next."""

        def __init__(self, prompt_input: PromptInput, action: QueueAction) -> None:
            super().__init__()
            self.prompt_input = prompt_input
            self.action = action

    def __init__(self, *, id: str | None = None, placeholder: str = "") -> None:
        super().__init__(id=id, soft_wrap=True, show_line_numbers=False, tab_behavior="focus", compact=True)
        self.placeholder = placeholder
        self.cursor_blink = False  # a blinking cursor repaints forever over SSH
        self.sent: list[str] = []
        self._recall_index: int | None = None
        self._draft = ""
        self.turn_running = False  # set by the app: an Esc then stops the turn
        self._escaped_at: float | None = None  # the first Esc of a pair, at an empty prompt
        self.held_messages = 0  # queued messages above the prompt (set by the app)
        self._completion: PromptCompletion | None = None

    @property
    def completion(self) -> PromptCompletion:
        """The `/` and `@` lists, made when first needed: not before the first paint."""
        if self._completion is None:
            from cmdop_tui.tui.widgets.completion_menu import CompletionMenu
            from cmdop_tui.tui.widgets.prompt_completion import PromptCompletion

            self._completion = PromptCompletion(self, CompletionMenu())
        return self._completion

    def _follow_the_cursor(self) -> None:
        if self._completion is not None or any(mark in self.text for mark in COMPLETED_AFTER):
            self.completion.update()

    def on_text_area_changed(self) -> None:
        self._follow_the_cursor()

    def on_text_area_selection_changed(self) -> None:
        self._follow_the_cursor()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # ctrl+c copies a selection; with none it goes on to the app, where it stops a turn.
        if action == "copy" and not self.selected_text:
            return False
        return super().check_action(action, parameters)

    async def _on_key(self, event: events.Key) -> None:
        if self._completion is not None and self._completion.handles(event.key):
            self._stop(event)
            self.completion.press(event.key)
            return
        if event.key == "escape":
            self._count_escape(event.time)  # and on to the app's Esc (the app's binding says both)
        if event.is_printable or not await run_binding_now(self, event):
            await super()._on_key(event)

    # --- the prompt's keys (BINDINGS) ----------------------------------------------------------

    def action_send(self) -> None:
        self.submit()

    def action_steer(self) -> None:
        self.submit(steer=True)

    def action_newline(self) -> None:
        self.insert("\n")

    def action_earlier(self) -> None:
        if self.held_messages and not self.text:
            self.post_message(self.QueueEdit(self, "edit"))
        elif self.cursor_location[0] == 0 and self.sent:
            self.recall(-1)
        else:
            self.action_cursor_up()

    def action_later(self) -> None:
        if self._recall_index is not None and self._on_last_line():
            self.recall(+1)
        else:
            self.action_cursor_down()

    def action_drop_queued(self) -> None:
        if self.held_messages and not self.text:
            self.post_message(self.QueueEdit(self, "drop"))
        else:
            self.action_delete_right()

    async def _on_paste(self, event: events.Paste) -> None:
        # Our driver makes a terminal's paste inert already; a paste from elsewhere (the web
        # driver of `serve`) is made so here, so that no escape or CR reaches the document.
        event.prevent_default()
        await super()._on_paste(events.Paste(inert_paste(event.text)))

    @staticmethod
    def _stop(event: events.Key) -> None:
        event.stop()
        event.prevent_default()

    def _on_last_line(self) -> bool:
        return self.cursor_location[0] == self.document.line_count - 1

    def _count_escape(self, now: float) -> None:
        """A second Esc soon after the first, at an empty prompt between turns: /rewind. `now`:
        when the key arrived (a busy app may handle the pair far apart; they came together)."""
        first, self._escaped_at = self._escaped_at, None
        if self.turn_running or self.text.strip():
            return
        if first is not None and now - first <= DOUBLE_ESCAPE_S:
            self.post_message(self.Submitted(self, DOUBLE_ESCAPE_COMMAND))
        else:
            self._escaped_at = now

    def submit(self, *, steer: bool = False) -> None:
        text = self.text.strip()
        if not text:
            if self.held_messages and not self.turn_running:
                self.post_message(self.QueueEdit(self, "send"))
            return
        if not self.sent or self.sent[-1] != text:
            self.sent.append(text)
        self._recall_index = None
        self.clear()
        self.post_message((self.Steered if steer else self.Submitted)(self, text))

    def recall(self, step: int) -> None:
        """Step through earlier prompts; stepping past the newest restores the draft."""
        if self._recall_index is None:
            if step > 0:
                return
            self._draft = self.text
            index = len(self.sent) - 1
        else:
            index = self._recall_index + step
        if index < 0:
            return
        if index >= len(self.sent):
            self._recall_index = None
            self._show(self._draft)
            return
        self._recall_index = index
        self._show(self.sent[index])

    def put_back(self, text: str) -> None:
        """`text` in the prompt, to edit and send again (a rewound turn's prompt)."""
        self._recall_index = None
        self._show(text)

    def _show(self, text: str) -> None:
        self.load_text(text)
        self.move_cursor(self.document.end)
