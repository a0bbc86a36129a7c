"""What an MCP server asks the person (elicitation): its message, and either a form built from
its flat schema (mcp/forms.py) or a URL to visit.

Keyboard only, and usable at 80x24: Tab moves between the fields and the buttons (Enter in a
field moves to the next one), ctrl+s accepts, Esc cancels; the fields scroll when many. What the
server wrote is shown inert. An answer that does not fit the form is not sent: the dialog says
which field and why. A URL is shown as text, never opened: the person opens it themselves if
they trust it, and says when they are done.
"""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.widgets import Button, Checkbox, Input, Label, Select, SelectionList, Static

from cmdop_tui.mcp.asks import ElicitationRequest, Elicited
from cmdop_tui.mcp.forms import FormError, FormField, FormValue, checked, read_text
from cmdop_tui.support.text import cut_note, inert_line, strip_terminal_sequences, truncate_middle
from cmdop_tui.tui.screens.question import QuestionScreen
from cmdop_tui.tui.widgets.key_order import InOrderInput

MAX_MESSAGE = 4000  # characters of the server's message shown
MAX_LABEL = 200  # of a field's title, a choice's label, the format shown as a placeholder
MAX_DESCRIPTION = 1000
MAX_URL = 2000  # a longer one is shown by its two ends
URL_NOTE = "The app does not open it. Open it yourself if you trust it, then choose Done."


class ElicitationScreen(QuestionScreen[Elicited]):
    DEFAULT_CSS = """
    ElicitationScreen {
        /* At 80x24 every part fits with the buttons in view: the fields scroll. */
        #elicit-dialog {
            padding: 0 1;
        }

        #elicit-message {
            height: auto;
            max-height: 20vh;
        }

        #elicit-fields {
            height: auto;
            max-height: 45vh;
            margin-top: 1;
        }

        #elicit-fields Label {
            margin-top: 1;
        }

        #elicit-fields .-description {
            color: $text-muted;
        }

        #elicit-url-box {
            height: auto;
            max-height: 25vh;
            margin-top: 1;
        }

        #elicit-url {
            padding: 0 1;
            background: $panel;
        }

        #elicit-error {
            color: $error;
            height: auto;
        }
    }
    """

    BINDINGS = [
        Binding("ctrl+s", "answer('accept')", "Accept", priority=True),
        Binding("escape", "answer('cancel')", "Cancel"),
    ]

    def __init__(self, request: ElicitationRequest) -> None:
        super().__init__()
        self.request = request

    def compose(self) -> ComposeResult:
        request = self.request
        with Vertical(id="elicit-dialog", classes="question"):
            yield Label(Content.assemble("The MCP server ", (inert_line(request.server), "bold"), " asks:"))
            with VerticalScroll(id="elicit-message"):
                message = truncate_middle(strip_terminal_sequences(request.message), MAX_MESSAGE)
                yield Static(Content(message), markup=False)
            if request.is_url:
                with VerticalScroll(id="elicit-url-box"):  # a long one scrolls: the buttons stay in view
                    yield Static(Content(shown(request.url, MAX_URL)), id="elicit-url", markup=False)
                yield Static(Content(URL_NOTE), markup=False)
            else:
                with VerticalScroll(id="elicit-fields"):
                    for index, field in enumerate(request.fields):
                        yield from _field_widgets(index, field)
            yield Static("", id="elicit-error", markup=False)
            with Horizontal(classes="question-buttons"):
                yield Button(
                    "Done" if request.is_url else "Accept (ctrl+s)", id="accept", variant="primary", compact=True
                )
                yield Button("Decline", id="decline", compact=True)
                yield Button("Cancel (Esc)", id="cancel", variant="error", compact=True)

    def on_mount(self) -> None:
        first = self.query(
            "#elicit-fields Input, #elicit-fields Checkbox, #elicit-fields Select, #elicit-fields SelectionList"
        )
        (first.first() if first else self.query_one("#accept", Button)).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.focus_next()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_answer(event.button.id or "cancel")

    def action_answer(self, action: str) -> None:
        if action == "decline":
            self.dismiss(Elicited("decline"))
        elif action != "accept":
            self.dismiss(Elicited("cancel"))
        elif self.request.is_url:
            self.dismiss(Elicited("accept"))
        else:
            try:
                answers = checked(self.request.fields, self.values())
            except FormError as exc:
                self.query_one("#elicit-error", Static).update(Content(inert_line(str(exc))))
                return
            self.dismiss(Elicited("accept", answers))

    def values(self) -> dict[str, FormValue | None]:
        """What the fields hold now, read as their kinds (raises FormError for a bad number)."""
        found: dict[str, FormValue | None] = {}
        for index, field in enumerate(self.request.fields):
            widget = self.query_one(f"#field-{index}")
            found[field.name] = _value_of(field, widget)
        return found


def _field_widgets(index: int, field: FormField) -> ComposeResult:
    """A field's label (its title, `*` when required), its description, and its input."""
    mark = " *" if field.required else ""
    yield Label(Content.assemble((shown(field.label), "bold"), mark))
    if field.description:
        yield Static(Content(shown(field.description, MAX_DESCRIPTION)), classes="-description", markup=False)
    ident = f"field-{index}"
    default = field.default
    if field.kind == "boolean":
        yield Checkbox(shown(field.label), value=default is True, id=ident)
    elif field.kind == "choice":
        options = [(shown(label), value) for value, label in field.options]
        chosen = default if isinstance(default, str) and default in dict(field.options) else Select.NULL
        yield Select(options, value=chosen, allow_blank=True, id=ident, prompt="Choose…")
    elif field.kind == "choices":
        picked = set(default) if isinstance(default, list) else set()
        yield SelectionList[str](*[(shown(label), value, value in picked) for value, label in field.options], id=ident)
    else:
        kind = {"integer": "integer", "number": "number"}.get(field.kind, "text")
        text = "" if default is None or isinstance(default, list) else inert_line(str(default))
        placeholder = shown(field.format or field.kind)
        yield InOrderInput(value=text, type=kind, id=ident, placeholder=placeholder)  # type: ignore[arg-type]


def shown(text: str, limit: int = MAX_LABEL) -> str:
    """What a server wrote, inert and on one line, its middle cut past `limit` characters."""
    line = inert_line(text)
    if len(line) <= limit:
        return line
    half = limit // 2
    return f"{line[:half]} {cut_note(len(line) - 2 * half, 'characters')} {line[-half:]}"


def _value_of(field: FormField, widget: Any) -> FormValue | None:
    if isinstance(widget, Checkbox):
        return widget.value
    if isinstance(widget, Select):
        return None if widget.value is Select.NULL else str(widget.value)
    if isinstance(widget, SelectionList):
        return [str(value) for value in widget.selected]
    assert isinstance(widget, Input)
    return read_text(field, widget.value)
