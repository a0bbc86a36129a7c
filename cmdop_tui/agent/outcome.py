"""How a run ended (`RunResult`), and the counters of one run that it reports."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from cmdop_tui.agent.events import Cancelled, Event, UsageTotals

Status = Literal[
    "final",
    "cut",
    "refused",
    "compacted",
    "cancelled",
    "error",
    "max_turns",
    "max_loops",
    "repeated_tool_call",
    "budget",
]
# A reply with no tool calls that is not a whole answer, by its stop_reason: the run's status and
# what to tell the user ({max_tokens}: the profile's cap).
UNFINISHED_ANSWERS: dict[str, tuple[Status, str]] = {
    "max_tokens": ("cut", "the answer was cut at the reply limit (max_tokens = {max_tokens}); raise it in the profile"),
    "model_context_window_exceeded": ("cut", "the answer was cut: the model's context window is full (try /compact)"),
    "refusal": ("refused", "the model refused to go on (stop_reason: refusal)"),
    # Some compatible servers end a reply without saying why: it may have been cut anywhere.
    "": ("cut", "the endpoint ended the reply without a stop reason: the answer may be incomplete"),
}


@dataclass
class RunResult:
    status: Status
    text: str = ""
    code: str = ""
    message: str = ""
    turns: int = 0
    loops: int = 0
    usage: UsageTotals = field(default_factory=UsageTotals)


STOPPED_BY_USER = "stopped by the user"


def stopped_before_the_turn(emit: Callable[[Event], None]) -> RunResult:
    """A Stop that came while a run was being prepared (its hooks, its files): the model was
    asked nothing, and there is nothing to repair."""
    emit(Cancelled(reason="ui", message=STOPPED_BY_USER))
    return RunResult(status="cancelled", code="cancelled", message=STOPPED_BY_USER)


class Progress:
    """Counters of one run, kept apart so the loop functions stay small."""

    def __init__(self) -> None:
        self.turns = 0
        self.loops = 0
        self.usage = UsageTotals()

    def result(self, status: Status, *, text: str = "", code: str = "", message: str = "") -> RunResult:
        """The run's result with its counters so far."""
        return RunResult(
            status=status,
            text=text,
            code=code or status,
            message=message,
            turns=self.turns,
            loops=self.loops,
            usage=self.usage,
        )
