"""Going back: what each turn changed, what a rewind to a turn would write, and the rewind.

    summaries(checkpoints) -> [TurnSummary]       each turn, per machine: files, lines
    plan(checkpoints, turn) -> RewindPlan         per machine: the diff from now to that turn
    restore_files(checkpoints, plan, force)       write it (the present kept first)

A rewind first keeps the present as a checkpoint, in a turn of its own ("rewind to turn N"),
so that rewinding to that turn undoes it. A file someone changed since the session last left
it (outside the session's turns) is not overwritten unless `force`: the plan names such files
and restore_files refuses with RewindConflict. Each machine is restored on its own; one that
cannot be reached fails alone, said in the result. What the turns did that no checkpoint
covers is named in the plan (`cannot`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from cmdop_tui.agent.history import Conversation
from cmdop_tui.agent.messages import Message, blocks_of
from cmdop_tui.machines.shadow_git import FileChange
from cmdop_tui.machines.spec import MachineError
from cmdop_tui.session.checkpoint_records import CheckpointRecord, OutsideRecord, TurnRecord
from cmdop_tui.session.checkpoints import Checkpoints


class RewindError(Exception):
    """A rewind that cannot be planned or done (no such turn, nothing kept)."""


class RewindConflict(RewindError):
    """Files changed by someone else since the session left them: not overwritten unasked."""

    def __init__(self, paths: list[str]) -> None:
        super().__init__(f"changed since the session left them: {', '.join(paths[:10])}")
        self.paths = paths


@dataclass(frozen=True)
class MachineTurn:
    """What one turn changed on one machine (`note`: why it is not known)."""

    machine: str
    files: tuple[FileChange, ...] = ()
    note: str = ""

    @property
    def lines(self) -> tuple[int, int]:
        """Lines added and removed (binary files count none)."""
        return sum(f.added or 0 for f in self.files), sum(f.removed or 0 for f in self.files)


@dataclass(frozen=True)
class TurnSummary:
    turn: int
    prompt: str
    at: float
    machines: tuple[MachineTurn, ...]
    cannot: tuple[str, ...]  # what no checkpoint of this turn covers
    rewind_of: int | None = None


@dataclass(frozen=True)
class MachinePlan:
    """A machine's part of a rewind: from the present to the target commit."""

    machine: str
    present: str
    target: str
    changes: tuple[FileChange, ...]
    patch: str
    changed_by_others: tuple[str, ...] = ()
    left_out: tuple[str, ...] = ()  # larger than the cap: not in the checkpoint, not restored


@dataclass(frozen=True)
class RewindPlan:
    turn: TurnRecord
    machines: tuple[MachinePlan, ...]
    outside: tuple[OutsideRecord, ...]  # files outside the trees, as they were before the turn
    cannot: tuple[str, ...]  # what cannot be restored, in words
    failed: tuple[str, ...] = ()  # machines whose present could not be read: not restored

    @property
    def conflicts(self) -> list[str]:
        return [f"{m.machine}:{path}" for m in self.machines for path in m.changed_by_others]

    @property
    def files_changed(self) -> int:
        return sum(len(m.changes) for m in self.machines) + len(self.outside)


@dataclass(frozen=True)
class RewindResult:
    turn: int  # the turn gone back to
    undo_turn: int  # the rewind's own turn: rewinding to it undoes this one
    restored: tuple[str, ...]  # per machine, in words
    failed: tuple[str, ...]


@dataclass(frozen=True)
class Rewound:
    """What a rewind did: the turn's prompt (to edit and send again), the files' result (None:
    not asked), whether the conversation went back, and why not."""

    prompt: str
    files: RewindResult | None
    conversation: bool
    conversation_note: str | None = None


async def summaries(checkpoints: Checkpoints) -> list[TurnSummary]:
    """Each turn of the session with what it changed, per machine, oldest first."""
    log = checkpoints.log
    result = []
    for turn in log.turns():
        machines = []
        for before in (r for r in log.checkpoints() if r.turn == turn.turn and r.phase == "before"):
            end = _end_of(log.checkpoints(before.machine), before)
            machines.append(await _machine_turn(checkpoints, before, end))
        failed = [MachineTurn(n.machine, note=n.text) for n in log.notes(turn.turn) if n.failed]
        cannot = tuple(f"{n.machine}: {n.text}" for n in log.notes(turn.turn) if not n.failed)
        result.append(TurnSummary(turn.turn, turn.prompt, turn.at, (*machines, *failed), cannot, turn.rewind_of))
    return result


def _end_of(records: list[CheckpointRecord], before: CheckpointRecord) -> CheckpointRecord | None:
    """Where `before`'s turn ended on its machine: its after, else the next checkpoint there."""
    later = [r for r in records if r.turn > before.turn or (r.turn == before.turn and r.phase == "after")]
    return later[0] if later else None


async def _machine_turn(
    checkpoints: Checkpoints, before: CheckpointRecord, end: CheckpointRecord | None
) -> MachineTurn:
    if end is None:
        return MachineTurn(before.machine, note="its end was not kept (the app stopped mid-turn)")
    try:
        files = await checkpoints.shadow(before.machine).changes(before.commit, end.commit)
    except MachineError as exc:
        return MachineTurn(before.machine, note=str(exc))
    return MachineTurn(before.machine, tuple(files))


async def plan(checkpoints: Checkpoints, turn: int) -> RewindPlan:
    """What rewinding the files to the start of `turn` would write, machine by machine."""
    log = checkpoints.log
    record = next((t for t in log.turns() if t.turn == turn), None)
    if record is None:
        raise RewindError(f"no turn {turn} in this session")
    machines, failed = [], []
    for machine, target in _targets(log.checkpoints(), turn).items():
        try:
            machines.append(await _machine_plan(checkpoints, machine, target))
        except MachineError as exc:
            failed.append(f"{machine}: {exc}")
    cannot = [f"{n.machine}: {n.text}" for t in log.turns() if t.turn >= turn for n in log.notes(t.turn)]
    outside = _first_per_path(log.outside(turn))
    return RewindPlan(record, tuple(machines), outside, tuple(dict.fromkeys(cannot)), tuple(failed))


def _targets(records: list[CheckpointRecord], turn: int) -> dict[str, CheckpointRecord]:
    """Per machine, the first checkpoint taken before a change at or after `turn`."""
    targets: dict[str, CheckpointRecord] = {}
    for record in records:
        if record.turn >= turn and record.phase == "before":
            targets.setdefault(record.machine, record)
    return targets


async def _machine_plan(checkpoints: Checkpoints, machine: str, target: CheckpointRecord) -> MachinePlan:
    shadow = checkpoints.shadow(machine)
    last_known = checkpoints.log.checkpoints(machine)[-1]
    present = await shadow.snapshot(checkpoints.ref, "the present, before a rewind")
    changes = await shadow.changes(present.commit, target.commit)
    by_others = {c.path for c in await shadow.changes(last_known.commit, present.commit)}
    return MachinePlan(
        machine,
        present.commit,
        target.commit,
        tuple(changes),
        await shadow.patch(present.commit, target.commit),
        tuple(sorted(by_others & {c.path for c in changes})),
        tuple(sorted({*present.left_out, *target.left_out})),
    )


def _first_per_path(records: list[OutsideRecord]) -> tuple[OutsideRecord, ...]:
    first: dict[str, OutsideRecord] = {}
    for record in records:
        first.setdefault(record.path, record)
    return tuple(first.values())


async def restore_files(
    checkpoints: Checkpoints, rewind: RewindPlan, *, messages: int, force: bool = False
) -> RewindResult:
    """Make each machine's tree (and the files outside it) what they were at the plan's turn.
    `messages`: the conversation's length now (the rewind's own turn goes back there)."""
    if rewind.conflicts and not force:
        raise RewindConflict(rewind.conflicts)
    own = TurnRecord(
        checkpoints.log.next_turn(), f"(rewind to turn {rewind.turn.turn})", messages, rewind_of=rewind.turn.turn
    )
    checkpoints.log.add(own)
    restored, failed = [], list(rewind.failed)
    for machine in rewind.machines:
        try:
            present = await checkpoints.shadow(machine.machine).restore(
                checkpoints.ref, machine.target, f"turn {own.turn}: the present, before the rewind"
            )
        except MachineError as exc:
            failed.append(f"{machine.machine}: {exc}")
            continue
        checkpoints.log.add(CheckpointRecord(own.turn, machine.machine, "before", present.commit, present.left_out))
        checkpoints.log.add(CheckpointRecord(own.turn, machine.machine, "after", machine.target))
        restored.append(f"{machine.machine}: {len(machine.changes)} files")
    for record in rewind.outside:
        why = await _put_back(checkpoints, own.turn, record)
        (failed if why else restored).append(f"{record.machine}: {record.path}" + (f": {why}" if why else ""))
    return RewindResult(rewind.turn.turn, own.turn, tuple(restored), tuple(failed))


async def _put_back(checkpoints: Checkpoints, turn: int, record: OutsideRecord) -> str | None:
    """A file outside the trees as it was, its present kept first (in the rewind's own turn);
    None when done, else why not."""
    if record.machine != "local":
        return await _put_back_there(checkpoints, turn, record)
    path = Path(record.path)
    checkpoints.keep_outside(turn, str(path))
    try:
        if not record.existed:
            path.unlink(missing_ok=True)
            return None
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.cmdop-rewind")
        temporary.write_bytes(checkpoints.log.blob(record.blob))
        os.chmod(temporary, record.mode)
        os.replace(temporary, path)
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


async def _put_back_there(checkpoints: Checkpoints, turn: int, record: OutsideRecord) -> str | None:
    """The same on another machine, over its connection (its mode kept as it is now)."""
    try:
        remote = checkpoints.fleet.remote(record.machine)
        if remote is None:
            return "not another machine"
        await checkpoints.keep_written(turn, record.machine, record.path)
        if not record.existed:
            done = await remote.remove_file(record.path)
        else:
            text = checkpoints.log.blob(record.blob).decode("utf-8")
            done = await remote.write_file(record.path, text, sandboxed=False)
    except (MachineError, OSError) as exc:
        return str(exc)
    except UnicodeDecodeError:
        return "its prior content is not text: not written back"
    return done.text if done.is_error else None


def conversation_back(conversation: Conversation, turn: TurnRecord) -> str | None:
    """Take the conversation back to before `turn`'s prompt; None when done, else why not (it
    was compacted or cleared since, or the turn was a rewind's own)."""
    if turn.rewind_of is not None:
        return "a rewind's own turn has no conversation to go back to (only its files)"
    messages = conversation.messages
    if turn.messages > len(messages):
        return "the conversation was compacted or cleared since that turn"
    if turn.messages < len(messages) and not _holds(messages[turn.messages], turn.prompt):
        return "the conversation was compacted since that turn"
    conversation.replace(messages[: turn.messages])
    return None


def _holds(message: Message, prompt: str) -> bool:
    """Whether `message` is a user message whose text holds `prompt`."""
    if message.get("role") != "user":
        return False
    texts = [str(b.get("text", "")) for b in blocks_of(message) if b.get("type") == "text"]
    return any(prompt.strip() in text for text in texts)
