"""/rewind's first step: the session's turns, oldest at the top and the newest at the bottom,
chosen. Each turn shows its prompt (one line, cut) and, per machine, what it changed (files, lines
added and removed), what of it no checkpoint can undo, and whether it was a rewind itself.

Enter on a turn asks what goes back: the files and the conversation, the files only, the
conversation only (a rewind's own turn has files only). Esc there goes back to the list; Esc on
the list closes. The screen writes nothing: it answers a `RewindChoice` (the diff comes next).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList, Static
from textual.widgets.option_list import Option

from cmdop_tui.session.rewind import MachineTurn, TurnSummary
from cmdop_tui.support.text import inert_line

LINE_WIDTH = 68  # a line of the list, at 80 columns
MACHINE_LINES = 6  # per turn; a fan-out over more machines is summed on one more line
CHOOSE_TURN = "Rewind: ↑↓ choose a turn, Enter picks it, Esc closes"


@dataclass(frozen=True)
class RewindChoice:
    """What the person chose: go back to before `turn`, its files, its conversation, or both."""

    turn: int
    files: bool
    conversation: bool


@dataclass(frozen=True)
class WhatGoesBack:
    """One answer to "what goes back?" (neither files nor conversation: cancel)."""

    key: str
    words: str
    files: bool
    conversation: bool


WHAT_GOES_BACK = (
    WhatGoesBack("both", "Files and conversation", files=True, conversation=True),
    WhatGoesBack("files", "Files only", files=True, conversation=False),
    WhatGoesBack("conversation", "Conversation only", files=False, conversation=True),
    WhatGoesBack("cancel", "Cancel", files=False, conversation=False),
)


def plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def machine_words(machine: MachineTurn) -> str:
    """`local: 2 files +3 −1`, or why what it changed is not known."""
    if machine.note:
        return f"{machine.machine}: {machine.note}"
    if not machine.files:
        return f"{machine.machine}: no files changed"
    added, removed = machine.lines
    return f"{machine.machine}: {plural(len(machine.files), 'file')} +{added} −{removed}"


def one_line(text: str, width: int) -> str:
    """`text` on one line (whatever it held), cut to `width`."""
    line = inert_line(" ".join(text.split()))
    return line if len(line) <= width else line[: width - 1] + "…"


def turn_title(turn: TurnSummary) -> str:
    if turn.rewind_of is not None:
        return f"↺ a rewind to turn #{turn.rewind_of}"
    return one_line(turn.prompt, LINE_WIDTH - 4) or "(empty prompt)"


def turn_content(turn: TurnSummary) -> Content:
    """A turn as the list shows it: its number and prompt, then a line per machine."""
    lines = [Content.assemble((f"#{turn.turn}  ", "bold"), (turn_title(turn), "bold"))]
    shown, rest = turn.machines[:MACHINE_LINES], turn.machines[MACHINE_LINES:]
    lines += [Content("    " + one_line(machine_words(m), LINE_WIDTH - 4)) for m in shown]
    if rest:
        files = sum(len(m.files) for m in rest)
        added, removed = (sum(m.lines[i] for m in rest) for i in (0, 1))
        lines.append(Content(f"    … {plural(len(rest), 'more machine')}: {plural(files, 'file')} +{added} −{removed}"))
    if not turn.machines:
        lines.append(Content.styled("    no files changed", "$text-muted"))
    lines += [
        Content.styled("    " + one_line(f"cannot be undone: {c}", LINE_WIDTH - 4), "$text-warning")
        for c in turn.cannot
    ]
    return Content("\n").join(lines)


class RewindScreen(ModalScreen[RewindChoice | None]):
    DEFAULT_CSS = """
    RewindScreen {
        align: center middle;

        #rewind-dialog {
            width: 96%;
            height: auto;
            max-height: 96%;
            padding: 0 1;
            border: thick $primary;
            background: $surface;
        }

        #rewind-turns {
            height: auto;
            max-height: 18;
            margin-top: 1;
        }

        #rewind-turn, #rewind-what {
            height: auto;
            margin-top: 1;
            display: none;
        }

        #rewind-dialog.-choosing {
            #rewind-turns { display: none; }
            #rewind-turn, #rewind-what { display: block; }
        }
    }
    """

    BINDINGS = [Binding("escape", "back", "Back")]

    def __init__(self, turns: Sequence[TurnSummary]) -> None:
        super().__init__()
        self.turns = tuple(turns)
        self.chosen: TurnSummary | None = None  # the turn whose "what goes back" is asked

    def compose(self) -> ComposeResult:
        with Vertical(id="rewind-dialog"):
            yield Label(Content.styled(CHOOSE_TURN, "bold"), id="rewind-title")
            yield OptionList(*(Option(turn_content(t)) for t in self.turns), id="rewind-turns")
            yield Static(id="rewind-turn", markup=False)  # the turn chosen, while what goes back is asked
            yield OptionList(id="rewind-what")

    def on_mount(self) -> None:
        turns = self.query_one("#rewind-turns", OptionList)
        turns.highlighted = len(self.turns) - 1  # the newest, as it is the likeliest
        turns.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option_list.id == "rewind-turns":
            self._ask_what(self.turns[event.option_index])
            return
        chosen, what = self.chosen, next(w for w in WHAT_GOES_BACK if w.key == event.option.id)
        if chosen is None or not (what.files or what.conversation):  # cancel
            self.dismiss(None)
            return
        self.dismiss(RewindChoice(chosen.turn, what.files, what.conversation))

    def _ask_what(self, turn: TurnSummary) -> None:
        """The second step: what of `turn` goes back."""
        self.chosen = turn
        options = [
            Option(what.words, id=what.key)
            for what in WHAT_GOES_BACK
            if not (what.conversation and turn.rewind_of is not None)  # a rewind has no conversation of its own
        ]
        what = self.query_one("#rewind-what", OptionList)
        what.clear_options()
        what.add_options(options)
        what.highlighted = 0
        title = "Rewind to before this turn: what goes back? Esc: the list"
        self.query_one("#rewind-title", Label).update(Content.styled(title, "bold"))
        self.query_one("#rewind-turn", Static).update(turn_content(turn))
        self.query_one("#rewind-dialog").add_class("-choosing")
        what.focus()

    def action_back(self) -> None:
        """Esc: from the choice back to the list; from the list, close."""
        if self.chosen is None:
            self.dismiss(None)
            return
        self.chosen = None
        self.query_one("#rewind-title", Label).update(Content.styled(CHOOSE_TURN, "bold"))
        self.query_one("#rewind-dialog").remove_class("-choosing")
        self.query_one("#rewind-turns", OptionList).focus()
