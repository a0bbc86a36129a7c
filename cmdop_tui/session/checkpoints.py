"""Checkpoints: before a turn first changes a machine, its working tree is kept, so /rewind can
bring it back (session/rewind.py). The loop calls `before_change` for each call of a mutating
tool (after its approval, before it runs) and `left_sandbox` when a person lets a call run
outside the sandbox; the session calls `begin_turn` and `end_turn` around each prompt.

Per machine and turn one checkpoint before (the first change) and one after (the turn's end:
what the session left, so that a later change by someone else is told apart). What no
checkpoint covers is written down as such: a command run outside the sandbox, a package
install or a service restarted, a machine whose checkpoint failed or that has none; a file a
file tool writes outside the working tree on this machine has its prior content kept.

A checkpoint that fails never stops the turn: it is said (`say`) and recorded.
"""

from __future__ import annotations

import asyncio
import os
import re
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from cmdop_tui.agent.approval import ToolCall
from cmdop_tui.config.settings import CheckpointSettings
from cmdop_tui.machines.fleet import Fleet
from cmdop_tui.machines.machine import SandboxRefusal
from cmdop_tui.machines.sandbox_view import within
from cmdop_tui.machines.shadow_git import ShadowRepo
from cmdop_tui.machines.shadows import shadow_of
from cmdop_tui.machines.spec import MachineError
from cmdop_tui.session.checkpoint_records import (
    CheckpointLog,
    CheckpointRecord,
    NoteRecord,
    OutsideRecord,
    Phase,
    TurnRecord,
    checkpoints_dir,
    ref_name,
)

Say = Callable[[str], None]
FILE_TOOLS = frozenset({"write_file", "edit_file"})
COMMAND_TOOLS = frozenset({"execute_command", "run_on_machines"})
MAX_OUTSIDE_BYTES = 10_000_000  # a larger file outside the tree is noted, not kept
AT_ONCE = 32  # machines checkpointed at the same time (a fan-out to a hundred hosts)

# Commands whose effect lives outside any working tree: said as such on the turn.
_IRREVERSIBLE = (
    (re.compile(r"\b(apt|apt-get|aptitude|dnf|yum|zypper|pacman|apk|brew|snap|port)\b.*\b(install|remove|purge|upgrade|-S|add|del)\b"), "packages installed or removed"),
    (re.compile(r"\b(pip3?|pipx|npm|gem|cargo)\b.*\binstall\b.*(-g\b|--global|--user|\bglobal\b)|\bpipx\s+install\b"), "packages installed for the user"),
    (re.compile(r"\bsystemctl\b.*\b(start|stop|restart|reload|enable|disable|mask|kill)\b|\bservice\s+\S+\s+(start|stop|restart|reload)\b"), "services started, stopped or restarted"),
    (re.compile(r"\b(docker|podman|kubectl|helm)\b.*\b(run|rm|apply|delete|install|upgrade|stop|restart|push)\b"), "containers or clusters changed"),
    (re.compile(r"\b(crontab|useradd|userdel|usermod|groupadd|passwd|reboot|shutdown|iptables|nft|ufw)\b"), "system settings changed"),
)  # fmt: skip


def irreversible_effects(command: str) -> list[str]:
    """What in `command` no checkpoint of a working tree undoes, in words."""
    return [words for pattern, words in _IRREVERSIBLE if pattern.search(command)]


@dataclass
class Checkpoints:
    """The checkpoints of one session (see the module's docstring)."""

    fleet: Fleet
    cwd: Path
    settings: CheckpointSettings
    say: Say = lambda text: None
    session: Callable[[], str | None] = lambda: None  # the transcript's id, when there is one
    log: CheckpointLog = field(init=False)
    _fallback: str = field(default_factory=lambda: "unrecorded-" + uuid.uuid4().hex[:12])
    _turn: TurnRecord | None = None
    _touched: dict[str, bool] = field(default_factory=dict)  # this turn's machines: checkpointed?
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    def __post_init__(self) -> None:
        self.log = CheckpointLog.open(self.session_key)

    @property
    def session_key(self) -> str:
        return self.session() or self._fallback

    def follow_session(self) -> None:
        """After the transcript changed (a resume, /clear): the records of the session now."""
        if self.log.folder.name != self.session_key:
            self.log = CheckpointLog.open(self.session_key)

    # --- the turn -----------------------------------------------------------------------------

    def begin_turn(self, prompt: str, messages: int) -> None:
        """A prompt is about to go to the loop; the conversation had `messages` messages."""
        self.follow_session()
        self._turn = TurnRecord(self.log.next_turn(), prompt, messages)
        self._touched = {}
        self._write(self._turn)

    async def end_turn(self) -> None:
        """The turn ended: what it left on each machine it changed."""
        turn, touched = self._turn, dict(self._touched)
        self._turn, self._touched = None, {}
        if turn is None:
            return
        kept = [machine for machine, checkpointed in touched.items() if checkpointed]
        await self._each(kept, lambda machine: self._checkpoint(turn.turn, machine, "after"))

    async def before_change(self, call: ToolCall) -> None:
        """`call` (of a mutating tool) is about to run: checkpoint each machine it runs on that
        this turn has not changed yet, and note what no checkpoint covers."""
        turn = self._turn
        if turn is None or not self.settings.enabled:
            return
        command = str(call.input.get("command", "")) if call.name in COMMAND_TOOLS else ""
        async with self._lock:
            for machine in call.placement.machines:
                if machine in self.settings.skip:
                    self._note(turn.turn, machine, f"{call.name}: no checkpoint on {machine} (the settings skip it)")
                for words in irreversible_effects(command):
                    self._note(turn.turn, machine, f"{words}: {command[:120]}")
            new = [m for m in call.placement.machines if m not in self._touched and m not in self.settings.skip]
            checkpointed = await self._each(new, lambda machine: self._checkpoint(turn.turn, machine, "before"))
            self._touched.update(zip(new, checkpointed, strict=True))
            if call.name in FILE_TOOLS and len(call.placement.machines) == 1:
                await self.keep_written(turn.turn, call.placement.machines[0], str(call.input.get("path", "")))

    def left_sandbox(self, call: ToolCall, needs: SandboxRefusal) -> None:
        """A person let `call` run outside the sandbox: what it writes there no checkpoint sees
        (the paths the sandbox refused, on this machine, have their prior content kept)."""
        turn = self._turn
        if turn is None or not self.settings.enabled:
            return
        self._note(turn.turn, needs.machine, f"{call.name} ran outside the sandbox: what it changed there is not kept")
        if needs.machine == "local":
            for path in needs.paths:
                self.keep_outside(turn.turn, path)

    # --- what is kept --------------------------------------------------------------------------

    async def _each(self, machines: list[str], take: Callable[[str], Awaitable[bool]]) -> list[bool]:
        """`take` on each machine, a fan-out's many at once (bounded), in their order."""
        slots = asyncio.Semaphore(AT_ONCE)

        async def one(machine: str) -> bool:
            async with slots:
                return await take(machine)

        return list(await asyncio.gather(*(one(machine) for machine in machines)))

    def shadow(self, machine: str) -> ShadowRepo:
        """The shadow repository of `machine`'s working tree. Raises MachineError."""
        cap = int(self.settings.max_file_mb * 1_000_000)
        return shadow_of(self.fleet, machine, self.cwd, checkpoints_dir() / "repositories", cap)

    @property
    def ref(self) -> str:
        """The ref this session's checkpoints are kept on, in every shadow repository."""
        return ref_name(self.session_key)

    async def _checkpoint(self, turn: int, machine: str, phase: Phase) -> bool:
        """Checkpoint `machine` now; False when that failed (said and noted). A Stop meanwhile
        stops the turn at once, and the checkpoint still ends (git killed mid-write would
        leave its index locked for every later one)."""
        return await asyncio.shield(asyncio.ensure_future(self._take(turn, machine, phase)))

    async def _take(self, turn: int, machine: str, phase: Phase) -> bool:
        try:
            snapshot = await self.shadow(machine).snapshot(self.ref, f"turn {turn} {phase}")
        except MachineError as exc:
            self._note(turn, machine, f"no checkpoint on {machine}: {exc}", failed=True)
            self.say(f"checkpoint on {machine} failed: {exc}; this turn's changes there cannot be rewound")
            return False
        self._write(CheckpointRecord(turn, machine, phase, snapshot.commit, snapshot.left_out))
        return True

    async def keep_written(self, turn: int, machine: str, raw: str) -> None:
        """Keep what a file a file tool is about to write was, where no checkpoint of a tree
        holds it: outside the tree, or on a machine whose tree has no checkpoint (no git)."""
        if not raw:
            return
        if machine == "local":
            self.keep_outside(turn, raw)
            return
        try:
            remote = self.fleet.remote(machine)
            if remote is None:
                return
            target = await remote.absolute_path(raw)
            tree = (await remote.sandbox_of()).workspace
            if self._touched.get(machine) and within(Path(target), Path(tree)):
                return
            if any(r.machine == machine and r.path == target and r.turn == turn for r in self.log.outside(turn)):
                return
            before = await remote.read_bytes(target, max_bytes=MAX_OUTSIDE_BYTES)
        except MachineError as exc:
            self._note(turn, machine, f"{raw} could not be kept ({exc})", failed=True)
            return
        if before.error is not None:
            self._note(turn, machine, f"{raw} could not be kept ({before.error})", failed=True)
            return
        self._keep(OutsideRecord(turn, machine, target, before.exists, 0), before.data)

    def _keep(self, record: OutsideRecord, data: bytes) -> None:
        """Write down a file's prior content (none when it did not exist)."""
        blob = uuid.uuid4().hex if record.existed else ""
        try:
            if record.existed:
                self.log.keep_blob(blob, data)
        except OSError as exc:
            self._note(
                record.turn, record.machine, f"{record.path} could not be kept ({exc.strerror or exc})", failed=True
            )
            return
        self._write(replace(record, blob=blob))

    def keep_outside(self, turn: int, raw: str) -> None:
        """Keep what the local file at `raw` was, when it is outside the working tree."""
        if not raw:
            return
        workspace = self.fleet.machine(None, cwd=self.cwd)
        tree = Path(os.path.realpath(getattr(workspace, "workspace", self.cwd)))
        path = Path(os.path.realpath(tree / os.path.expanduser(raw)))
        if within(path, tree) or any(r.path == str(path) and r.turn == turn for r in self.log.outside(turn)):
            return
        try:
            stat = path.stat() if path.exists() else None
            if stat is not None and stat.st_size > MAX_OUTSIDE_BYTES:
                self._note(turn, "local", f"{path} is larger than {MAX_OUTSIDE_BYTES // 1_000_000} MB: not kept")
                return
            data = path.read_bytes() if stat is not None else b""
        except OSError as exc:
            self._note(turn, "local", f"{path} could not be kept ({exc.strerror or exc})", failed=True)
            return
        mode = stat.st_mode & 0o7777 if stat is not None else 0
        self._keep(OutsideRecord(turn, "local", str(path), stat is not None, mode), data)

    def _note(self, turn: int, machine: str, text: str, *, failed: bool = False) -> None:
        if not any(note.machine == machine and note.text == text for note in self.log.notes(turn)):
            self._write(NoteRecord(turn, machine, text, failed))

    def _write(self, record: TurnRecord | CheckpointRecord | NoteRecord | OutsideRecord) -> None:
        try:
            self.log.add(record)
        except OSError as exc:
            self.say(f"checkpoints cannot be written ({exc.strerror or exc}): /rewind may miss this turn")
