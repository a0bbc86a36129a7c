"""What the agent loop tells the world, as frozen dataclasses.

Every surface (TUI, headless JSON lines, the remote end of ask_machine) consumes the same events.
`kind` is the wire name used by the JSON-lines output.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from cmdop_tui.agent.usage_totals import UsageTotals as UsageTotals  # its own module: drawn before the events load
from cmdop_tui.tools.outcome import OK, ToolOutcome


@dataclass(frozen=True)
class Event:
    kind: ClassVar[str] = "event"

    def to_json(self) -> dict[str, Any]:
        return {"type": self.kind, **dataclasses.asdict(self)}


@dataclass(frozen=True)
class TurnStarted(Event):
    """A model request is about to be made."""

    kind: ClassVar[str] = "turn_start"
    turn: int
    max_turns: int
    loop: int = 0
    max_loops: int = 0


@dataclass(frozen=True)
class Token(Event):
    """The next fragment of the reply text."""

    kind: ClassVar[str] = "token"
    text: str


@dataclass(frozen=True)
class Thinking(Event):
    """The next fragment of the model's thinking, when the provider shares it."""

    kind: ClassVar[str] = "thinking"
    text: str


@dataclass(frozen=True)
class Waiting(Event):
    """The model endpoint has not answered a request for `seconds` (said once per attempt, so a
    silent endpoint is seen long before its deadline)."""

    kind: ClassVar[str] = "waiting"
    seconds: float
    deadline_s: float  # when this attempt gives up

    def describe(self) -> str:
        return (
            f"No answer from the model endpoint for {self.seconds:.0f} s; still waiting "
            f"(this attempt gives up after {self.deadline_s:.0f} s)."
        )


@dataclass(frozen=True)
class Retrying(Event):
    """A model call failed in a retryable way; the next attempt starts after `delay_s`.

    Text already streamed for the reply being retried is void: consumers discard it.
    """

    kind: ClassVar[str] = "retry"
    attempt: int
    delay_s: float
    reason: str


@dataclass(frozen=True)
class ToolStart(Event):
    kind: ClassVar[str] = "tool_start"
    call_id: str
    name: str
    input: dict[str, Any]
    machine: str = "local"
    preview: str | None = None  # what the call would change (a diff): shown, never streamed or stored

    def to_json(self) -> dict[str, Any]:
        data = super().to_json()
        del data["preview"]
        return data


@dataclass(frozen=True)
class ToolProgress(Event):
    """Output of a running tool as it arrives (already made inert for display)."""

    kind: ClassVar[str] = "tool_progress"
    call_id: str
    text: str
    stream: Literal["stdout", "stderr", "info"] = "stdout"


@dataclass(frozen=True)
class ToolNested(Event):
    """An event of an agent working on another machine for this call (ask_machine)."""

    kind: ClassVar[str] = "ask_machine_stream"
    call_id: str
    machine: str
    event: dict[str, Any]


@dataclass(frozen=True)
class ToolEnd(Event):
    kind: ClassVar[str] = "tool_end"
    call_id: str
    name: str
    output: str
    is_error: bool  # as the model got it: a command's exit code 1 is not one; `outcome` says it
    duration_s: float
    outcome: ToolOutcome = OK  # how it ended, by kind, with the whole reason

    def to_json(self) -> dict[str, Any]:
        data = super().to_json()
        data["outcome"] = {**data["outcome"], "kind": self.outcome.kind.value}
        return data


@dataclass(frozen=True)
class Usage(Event):
    """Token usage of one model response."""

    kind: ClassVar[str] = "usage"
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    model: str = ""
    cost_usd: float | None = None  # this response's estimated cost (None: no price known)
    session_cost_usd: float | None = None  # the session's so far
    # a summary's call, or a sampling an MCP server asked for, says nothing of the context
    purpose: Literal["reply", "summary", "sampling"] = "reply"

    @property
    def total_input_tokens(self) -> int:
        return self.input_tokens + self.cache_read_input_tokens + self.cache_creation_input_tokens


@dataclass(frozen=True)
class BudgetWarning(Event):
    """The session has spent most of its budget (the run goes on; it stops before crossing it)."""

    kind: ClassVar[str] = "budget_warning"
    spent_usd: float
    budget_usd: float


@dataclass(frozen=True)
class CompactionStarted(Event):
    """The conversation is being compacted: `auto` (it neared the window), `manual` (/compact),
    `too_long` (the endpoint refused a request as too long; it is retried after)."""

    kind: ClassVar[str] = "compaction_start"
    trigger: Literal["auto", "manual", "too_long"]
    tokens_before: int
    reason: str = ""  # for `too_long`: what the endpoint said


@dataclass(frozen=True)
class Compacted(Event):
    """The head of the conversation was replaced by `summary`; the transcript keeps it all."""

    kind: ClassVar[str] = "compaction"
    trigger: Literal["auto", "manual", "too_long"]
    tokens_before: int
    tokens_after: int
    summary: str
    summary_tokens: int = 0
    messages: int = 0  # how many messages the summary replaced
    duration_s: float = 0.0
    server: bool = False  # the endpoint wrote the summary (server-side compaction), not the app


@dataclass(frozen=True)
class CompactionFailed(Event):
    """A compaction could not be made (the summary call failed); the history is as it was."""

    kind: ClassVar[str] = "compaction_failed"
    trigger: Literal["auto", "manual", "too_long"]
    message: str


@dataclass(frozen=True)
class LoopContinued(Event):
    """Loop mode re-prompted the model with the loop message."""

    kind: ClassVar[str] = "loop"
    loop: int
    max_loops: int


@dataclass(frozen=True)
class SteeringDelivered(Event):
    """Text the user sent while the run went on (steering) went to the model with this step:
    after the step's tool results, or as the next message after a final reply."""

    kind: ClassVar[str] = "steering"
    text: str


@dataclass(frozen=True)
class Final(Event):
    """The run ended with a final answer."""

    kind: ClassVar[str] = "final"
    text: str
    turns: int = 0
    loops: int = 0


@dataclass(frozen=True)
class Error(Event):
    """The run ended without a final answer. `code` says why, `message` says it to a person."""

    kind: ClassVar[str] = "error"
    code: str
    message: str


@dataclass(frozen=True)
class Cancelled(Event):
    """The run was stopped: by the user (`ui`) or by its operation (`operation`, `deadline`)."""

    kind: ClassVar[str] = "cancelled"
    reason: Literal["ui", "operation", "deadline"] = "ui"
    message: str = "stopped"


@dataclass(frozen=True)
class HookRan(Event):
    """A hook ran (cmdop_tui/hooks/): for which event and call, what it said, how long it took."""

    kind: ClassVar[str] = "hook"
    event: str  # the hook event: PreToolUse, Stop...
    command: str
    decision: str  # ok, allowed, ask, blocked, changed input, failed, failed, blocked
    reason: str = ""
    duration_s: float = 0.0
    call_id: str | None = None
    tool: str | None = None
    machine: str | None = None


@dataclass(frozen=True)
class JobStarted(Event):
    """A background job started (tools/jobs.py): its id, where, what."""

    kind: ClassVar[str] = "job_start"
    job_id: str
    machine: str
    command: str
    call_id: str = ""


@dataclass(frozen=True)
class JobOutput(Event):
    """What a background job printed since its last such event (at most a few kB, the older
    part left out and counted in `skipped`; its output file has everything)."""

    kind: ClassVar[str] = "job_output"
    job_id: str
    text: str
    skipped: int = 0


@dataclass(frozen=True)
class JobEnded(Event):
    """A background job ended: `state` exited (with `exit_code`), failed (`reason`) or killed."""

    kind: ClassVar[str] = "job_end"
    job_id: str
    machine: str
    state: str
    exit_code: int | None
    reason: str
    runtime_s: float
    size: int
    output_file: str


__all__ = [
    "BudgetWarning",
    "HookRan",
    "JobEnded",
    "JobOutput",
    "JobStarted",
    "Cancelled",
    "Compacted",
    "CompactionFailed",
    "CompactionStarted",
    "Error",
    "Event",
    "Final",
    "LoopContinued",
    "Retrying",
    "SteeringDelivered",
    "Thinking",
    "Token",
    "ToolEnd",
    "ToolNested",
    "ToolProgress",
    "ToolStart",
    "TurnStarted",
    "Usage",
    "Waiting",
    "UsageTotals",
]
