"""Asks whether a tool call may run: allow once, allow for this session, or deny.

A call only a person may allow has "Allow once" and "Deny" only (no rule would answer it next
time): one that asks to run outside the sandbox says what the sandbox itself refused (from its
`SandboxRefusal`, never from the command's output) and what running outside means; one the
safety floor left to a person says why. The arguments (a command whole, wrapped) scroll when
long. A call over several machines (run_on_machines, ask_machines) names them, and says that "This session" and
"Always" allow it there only (the rule is scoped to them: permissions/allow_always.py). A write
or an edit shows the diff of what it would change (`preview`, read from the machine
before asking), coloured and scrollable, as inert text. No answer within the timeout means deny.
Stop (s) stops the whole turn from here too.
"""

from __future__ import annotations

from enum import Enum

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, ScrollableContainer, Vertical, VerticalScroll
from textual.content import Content
from textual.widgets import Button, Label, Static

from cmdop_tui.machines.machine import SandboxRefusal
from cmdop_tui.permissions import fanout_hosts, fanout_label
from cmdop_tui.support.figures import whole_seconds
from cmdop_tui.support.text import strip_terminal_sequences
from cmdop_tui.tools.describe import PERSON_ONLY_MEANS, describe_arguments, refusal_lines
from cmdop_tui.tui.screens.question import QuestionScreen
from cmdop_tui.tui.vocabulary.tool_records import diff_content

APPROVAL_TIMEOUT_S = 60.0


class ApprovalChoice(Enum):
    ONCE = "once"
    SESSION = "session"  # allow calls like this one for the rest of the session
    ALWAYS = "always"  # and save that as a rule
    DENY = "deny"
    STOP = "stop"


class ApprovalScreen(QuestionScreen[ApprovalChoice | None]):
    DEFAULT_CSS = """
    ApprovalScreen {
        #approval-arguments {
            height: auto;
            max-height: 12;
            margin: 1 0;
            padding: 0 1;
            background: $panel;
        }

        #approval-countdown {
            color: $text-muted;
        }

        /* Only a person may allow it: what the sandbox refused, or why the floor asks. */
        #approval-why {
            margin-top: 1;
        }

        #approval-dialog.-person-only #approval-arguments {
            max-height: 16;
        }

        /* Room for the diff: no padding above or below, the arguments in at most 3 lines. */
        #approval-dialog.-with-diff {
            width: 100;
            padding: 0 2;

            #approval-arguments {
                max-height: 3;
                margin: 0;
            }
        }

        #approval-diff {
            height: auto;
            max-height: 36vh;
            margin: 1 0 0 0;
            background: $panel;
            overflow: auto auto;
            scrollbar-size: 1 1;

            Static {
                width: auto;
                padding: 0 1;
                text-wrap: nowrap;  /* a diff's lines keep their indentation and their columns */
            }
        }
    }
    """

    BINDINGS = [
        Binding("y", "choose('once')", "Allow once"),
        Binding("a", "choose('session')", "Allow for session"),
        Binding("p", "choose('always')", "Always allow"),
        Binding("n,escape", "choose('deny')", "Deny"),
        Binding("s", "choose('stop')", "Stop turn"),
    ]

    def __init__(
        self,
        tool: str,
        machine: str,
        arguments: dict[str, object],
        timeout_s: float = APPROVAL_TIMEOUT_S,
        escalation: SandboxRefusal | None = None,
        preview: str | None = None,
        person_only: str | None = None,
    ):
        super().__init__()
        self.tool = tool
        self.machine = machine
        self.arguments = arguments
        self.escalation = escalation  # the sandbox refused it: this asks to run it outside, once
        self.person_only = person_only  # why the floor left it to a person: asked each time
        self.preview = preview  # what it would change: a unified diff, or a note why there is none
        self.remaining = max(1, round(timeout_s))
        self.timeout_s = timeout_s

    @property
    def once_only(self) -> bool:
        """Only a person may allow this call, one call at a time: no "This session", no "Always"."""
        return self.escalation is not None or self.person_only is not None

    def compose(self) -> ComposeResult:
        classes = ["question"] + (["-with-diff"] if self.preview else []) + (["-person-only"] if self.once_only else [])
        with Vertical(id="approval-dialog", classes=" ".join(classes)):
            yield self._title()
            if self.once_only:
                yield Static(Content(self._why()), id="approval-why", markup=False)
            named = self.arguments.get("hostnames")  # ask_machines names its hosts so
            hosts = fanout_hosts(self.arguments) or ([str(h) for h in named] if isinstance(named, list) else [])
            if hosts and not self.once_only:  # what "This session" and "Always" would cover
                scope = strip_terminal_sequences(fanout_label(hosts))
                yield Static(
                    Content(f"On {scope}. This session and Always allow it on these only."),
                    id="approval-scope",
                    markup=False,
                )
            with VerticalScroll(id="approval-arguments"):  # wrapped whole, scrolled when long
                arguments = describe_arguments(self.arguments, self.preview)
                yield Static(Content(strip_terminal_sequences(arguments)), markup=False)
            if self.preview:
                with ScrollableContainer(id="approval-diff"):
                    yield Static(diff_content(self.preview, headers=False), markup=False, id="approval-diff-text")
            yield Static(id="approval-countdown", markup=False)
            with Horizontal(id="approval-buttons", classes="question-buttons"):
                yield Button("Allow once (y)", id="once", variant="primary")
                if not self.once_only:
                    yield Button("This session (a)", id="session")
                    yield Button("Always (p)", id="always")
                yield Button("Deny (n)", id="deny", variant="error")

    def _title(self) -> Label:
        outside = ("outside the sandbox", "$warning bold") if self.escalation is not None else ""
        return Label(
            Content.assemble(
                "Run ",
                (strip_terminal_sequences(self.tool), "bold"),
                " on ",
                (strip_terminal_sequences(self.machine), "bold"),
                " " if outside else "",
                outside,
                "?",
            )
        )

    def _why(self) -> str:
        """Why only a person may allow it: the sandbox's own refusal, the floor's reason."""
        lines = refusal_lines(self.escalation) if self.escalation is not None else []
        if self.person_only is not None:
            lines += [f"The safety floor: {strip_terminal_sequences(self.person_only)}.", PERSON_ONLY_MEANS]
        return "\n".join(lines)

    def on_mount(self) -> None:
        self.countdown = self.set_interval(self.timeout_s / self.remaining, self._tick)  # one tick a second shown
        self._tick()
        self.query_one("#once", Button).focus()

    def _tick(self) -> None:
        if self.remaining <= 0:
            self.dismiss(None)  # no answer: the caller denies, saying why
            return
        self.query_one("#approval-countdown", Static).update(
            f"Denied automatically in {whole_seconds(self.remaining)} · s stops the turn"
        )
        self.remaining -= 1

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_choose(event.button.id or "deny")

    def action_choose(self, choice: str) -> None:
        if self.once_only and choice in ("session", "always"):
            return
        self.dismiss(ApprovalChoice(choice))
