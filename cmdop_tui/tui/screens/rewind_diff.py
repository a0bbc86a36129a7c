"""/rewind's look before it leaps: what going back would write, before anything is written.

First what no checkpoint can restore and the machines whose present could not be read (not
restored), named; then per machine a header (its files, lines added and removed) and the diff
from the present to the turn's start, coloured and scrollable, as inert text; then the files
outside the working tree that are put back. Files someone else changed since the session left them are named above the
buttons, and the question becomes whether to overwrite them. y rewinds, n or Esc cancels.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, ScrollableContainer, Vertical
from textual.content import Content
from textual.widgets import Button, Static

from cmdop_tui.session.rewind import MachinePlan, RewindPlan
from cmdop_tui.support.text import inert_line
from cmdop_tui.tui.screens.question import QuestionScreen
from cmdop_tui.tui.screens.rewind import plural
from cmdop_tui.tui.vocabulary.tool_records import diff_content


def machine_header(machine: MachinePlan) -> Content:
    added = sum(c.added or 0 for c in machine.changes)
    removed = sum(c.removed or 0 for c in machine.changes)
    words = f"── {machine.machine}: {plural(len(machine.changes), 'file')} +{added} −{removed}"
    return Content.styled(inert_line(words), "bold $primary")


def patch_content(patch: str) -> Content:
    """A git patch over many files, coloured file by file (each file's --- and +++ in bold)."""
    files: list[list[str]] = []
    for line in patch.rstrip("\n").split("\n"):
        if line.startswith("diff --git ") or not files:
            files.append([])
        files[-1].append(line)
    return Content("\n").join(diff_content("\n".join(lines)) for lines in files)


def section(title: str, lines: list[str], style: str = "") -> list[Content]:
    if not lines:
        return []
    return [Content.styled(f"── {title}", "bold"), *(Content.styled(f"  {inert_line(x)}", style) for x in lines)]


def plan_content(plan: RewindPlan) -> Content:
    """The whole plan, as the screen shows it."""
    parts = section("what cannot be restored", list(plan.cannot), "$text-warning")  # first: not scrolled past
    parts += section("cannot be read, not restored", list(plan.failed), "$text-error")
    for machine in plan.machines:
        parts.append(machine_header(machine))
        parts.append(patch_content(machine.patch) if machine.patch.strip() else Content("  nothing differs"))
        if machine.left_out:
            parts.append(
                Content.styled(f"  not restored (over the size cap): {', '.join(machine.left_out)}", "$text-warning")
            )
    outside = [
        f"{r.path}: {'put back as it was' if r.existed else 'removed (it did not exist then)'}" for r in plan.outside
    ]
    parts += section("local, outside the working tree", outside)
    return Content("\n").join(parts) if parts else Content("No file differs from then: nothing to write.")


class RewindDiffScreen(QuestionScreen[bool]):
    DEFAULT_CSS = """
    RewindDiffScreen {
        #rewind-diff-dialog {
            width: 100;
            height: 96%;  /* the diff takes what the question and the buttons leave */
            padding: 0 1;
        }

        #rewind-diff {
            height: 1fr;
            margin-top: 1;
            background: $panel;
            overflow: auto auto;
            scrollbar-size: 1 1;

            Static {
                width: auto;
                padding: 0 1;
                text-wrap: nowrap;  /* a diff's lines keep their indentation and their columns */
            }
        }

        #rewind-conflicts {
            margin-top: 1;
            color: $text-warning;
        }
    }
    """

    BINDINGS = [Binding("y", "answer(True)", "Rewind"), Binding("n,escape", "answer(False)", "Cancel")]

    def __init__(self, plan: RewindPlan, conversation: bool) -> None:
        super().__init__()
        self.plan = plan
        self.conversation = conversation  # the conversation goes back too

    def compose(self) -> ComposeResult:
        plan = self.plan
        also = " and the conversation" if self.conversation else ""
        title = f"Rewind the files{also} to before turn #{plan.turn.turn}? This is what would change:"
        with Vertical(id="rewind-diff-dialog", classes="question"):
            yield Static(Content.styled(title, "bold"), id="rewind-diff-title", markup=False)
            with ScrollableContainer(id="rewind-diff"):
                yield Static(plan_content(plan), markup=False, id="rewind-diff-text")
            if plan.conflicts:
                named = ", ".join(inert_line(path) for path in plan.conflicts)
                yield Static(
                    Content(f"Changed by someone else since the session left them: {named}. Overwrite them?"),
                    id="rewind-conflicts",
                    markup=False,
                )
            with Horizontal(classes="question-buttons"):
                yes = "Overwrite them and rewind (y)" if plan.conflicts else "Rewind (y)"
                yield Button(yes, id="yes", variant="error")
                yield Button("Cancel (n)", id="no", variant="primary")

    def on_mount(self) -> None:
        self.query_one("#rewind-diff", ScrollableContainer).focus()  # arrows scroll; y or n answers

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "yes")

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)
