"""What a session offers to go back (/rewind, `cmdop-tui rewind`, `Operator.rewind`): its
turns with what each changed, a plan, and the rewind itself (session/rewind.py does the work)."""

from __future__ import annotations

from cmdop_tui.agent.runner import Runner
from cmdop_tui.session.checkpoints import Checkpoints
from cmdop_tui.session.rewind import (
    RewindError,
    RewindPlan,
    Rewound,
    TurnSummary,
    conversation_back,
    plan,
    restore_files,
    summaries,
)


class GoingBack:
    """The Session's going back; it has `checkpoints` and `runner` once open."""

    checkpoints: Checkpoints | None

    @property
    def runner(self) -> Runner:
        raise NotImplementedError

    async def turns(self) -> list[TurnSummary]:
        """The session's turns, each with what it changed on each machine (for /rewind)."""
        checkpoints = self._checkpoints()
        checkpoints.follow_session()
        return await summaries(checkpoints)

    async def rewind_plan(self, turn: int) -> RewindPlan:
        """What rewinding the files to the start of `turn` would write. Raises RewindError."""
        checkpoints = self._checkpoints()
        checkpoints.follow_session()
        return await plan(checkpoints, turn)

    def conversation_plan(self, turn: int) -> RewindPlan:
        """A plan that takes the conversation alone back to before `turn`: it reads no machine
        (for a rewind with files=False). Raises RewindError."""
        checkpoints = self._checkpoints()
        checkpoints.follow_session()
        record = next((t for t in checkpoints.log.turns() if t.turn == turn), None)
        if record is None:
            raise RewindError(f"no turn {turn} in this session")
        return RewindPlan(record, (), (), ())

    async def rewind(
        self, rewind: RewindPlan, *, files: bool = True, conversation: bool = True, force: bool = False
    ) -> Rewound:
        """Go back to the plan's turn: the files (the present kept first), the conversation, or
        both. Raises RewindConflict for files changed since unless `force`."""
        restored = None
        if files:
            messages = len(self.runner.conversation.messages)
            restored = await restore_files(self._checkpoints(), rewind, messages=messages, force=force)
        kept = conversation_back(self.runner.conversation, rewind.turn) if conversation else None
        return Rewound(rewind.turn.prompt, restored, conversation and kept is None, kept)

    def _checkpoints(self) -> Checkpoints:
        if self.checkpoints is None:
            raise RewindError("the session is not open")
        return self.checkpoints
