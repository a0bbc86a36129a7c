"""How a tool call ended, by kind: typed where the fact is known, drawn by every surface.

The machine knows an exit code and its own timeout; the sandbox knows what it refused; the gate
knows who said no (a person, a rule, the floor, no answer in time, no one to ask); the executor
knows a Stop. Each says it with an `OutcomeKind` and the whole reason, and the call's `ToolEnd`
carries the `ToolOutcome`: the chat card, the Tools row, the output view, headless mode and
stream-json draw from it, never from the text the model gets.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class OutcomeKind(StrEnum):
    """What happened to a tool call. The value is the wire name (stream-json's `outcome.kind`)."""

    OK = "ok"
    FAILED = "failed"  # it ran and failed: a non-zero exit code, an error of the tool
    TIMED_OUT = "timed_out"  # it ran past its own timeout and was killed
    DENIED = "denied"  # a person said no
    APPROVAL_TIMEOUT = "approval_timeout"  # a person was asked and did not answer in time
    DENIED_BY_RULE = "denied_by_rule"  # a permission rule or the permission mode said no
    DENIED_BY_HOOK = "denied_by_hook"  # a hook of the user's settings or the project said no
    NO_ONE_TO_ASK = "no_one_to_ask"  # it needed a person's approval and no one could be asked
    REFUSED_BY_FLOOR = "refused_by_floor"  # the safety floor refused it, whatever the rules
    REFUSED_BY_SANDBOX = "refused_by_sandbox"  # the sandbox refused it and it was not let out
    CANCELLED = "cancelled"  # stopped (Stop, Ctrl+C, a signal) before it ended

    @property
    def ran(self) -> bool:
        """Whether the call ran at all (a denied or refused one did not)."""
        return self in _RAN

    @property
    def word(self) -> str:
        """A short word for a narrow row, beside its glyph (⊘ floor: refused by the floor)."""
        return _WORDS[self]

    @property
    def label(self) -> str:
        """A few words for a card or a line: what happened, whole."""
        return _LABELS[self]


_RAN = frozenset({OutcomeKind.OK, OutcomeKind.FAILED, OutcomeKind.TIMED_OUT, OutcomeKind.CANCELLED})
_WORDS = {
    OutcomeKind.OK: "ok",
    OutcomeKind.FAILED: "failed",
    OutcomeKind.TIMED_OUT: "timed out",
    OutcomeKind.DENIED: "denied",
    OutcomeKind.APPROVAL_TIMEOUT: "no answer",
    OutcomeKind.DENIED_BY_RULE: "rule",
    OutcomeKind.DENIED_BY_HOOK: "hook",
    OutcomeKind.NO_ONE_TO_ASK: "unasked",
    OutcomeKind.REFUSED_BY_FLOOR: "floor",
    OutcomeKind.REFUSED_BY_SANDBOX: "sandbox",
    OutcomeKind.CANCELLED: "stopped",
}
_LABELS = {
    OutcomeKind.OK: "ok",
    OutcomeKind.FAILED: "failed",
    OutcomeKind.TIMED_OUT: "timed out",
    OutcomeKind.DENIED: "denied by you",
    OutcomeKind.APPROVAL_TIMEOUT: "approval timed out",
    OutcomeKind.DENIED_BY_RULE: "denied by a rule",
    OutcomeKind.DENIED_BY_HOOK: "denied by a hook",
    OutcomeKind.NO_ONE_TO_ASK: "denied: no one to ask",
    OutcomeKind.REFUSED_BY_FLOOR: "refused by the safety floor",
    OutcomeKind.REFUSED_BY_SANDBOX: "refused by the sandbox",
    OutcomeKind.CANCELLED: "cancelled",
}


@dataclass(frozen=True)
class ToolOutcome:
    """How one call ended: its kind, the whole reason (for the detail; '' for a plain ok), and the
    exit code of a command that ran to its end (None otherwise)."""

    kind: OutcomeKind = OutcomeKind.OK
    reason: str = ""
    exit_code: int | None = None

    @property
    def ok(self) -> bool:
        return self.kind is OutcomeKind.OK

    @property
    def word(self) -> str:
        """For a narrow row: `ok`, `exit 1`, `denied`, `timed out`..."""
        if self.kind is OutcomeKind.FAILED and self.exit_code is not None:
            return f"exit {self.exit_code}"
        return self.kind.word

    @property
    def label(self) -> str:
        """For a card, a header, a line on stderr: `failed (exit code 1)`, `denied by you`..."""
        if self.kind is OutcomeKind.FAILED and self.exit_code is not None:
            return f"failed (exit code {self.exit_code})"
        return self.kind.label

    def described(self) -> str:
        """The title and the whole reason, in one line: `denied by a rule: denied by rule ...`."""
        return f"{self.label}: {self.reason}" if self.reason and self.reason != self.label else self.label


OK = ToolOutcome()


def command_outcome(exit_code: int | None, *, timed_out: bool = False, timeout_ms: int = 0) -> ToolOutcome:
    """A command's outcome from what its process did: its exit code, or its own timeout."""
    if timed_out:
        return ToolOutcome(
            OutcomeKind.TIMED_OUT, f"the command ran past its timeout of {timeout_ms:,} ms and was killed"
        )
    if exit_code == 0:
        return OK
    if exit_code is None:
        return ToolOutcome(OutcomeKind.FAILED, "the command's exit code is unknown")
    if exit_code < 0:
        return ToolOutcome(OutcomeKind.FAILED, f"the command was killed by signal {-exit_code}", exit_code)
    return ToolOutcome(OutcomeKind.FAILED, f"the command exited with code {exit_code}", exit_code)
