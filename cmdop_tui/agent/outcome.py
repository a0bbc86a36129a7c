"""How a run ended (`RunResult`), and the counters of one run that it reports."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from cmdop_tui.agent.events import UsageTotals

Status = Literal["final", "compacted", "cancelled", "error", "max_turns", "max_loops", "repeated_tool_call", "budget"]


@dataclass
class RunResult:
    status: Status
    text: str = ""
    code: str = ""
    message: str = ""
    turns: int = 0
    loops: int = 0
    usage: UsageTotals = field(default_factory=UsageTotals)


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
