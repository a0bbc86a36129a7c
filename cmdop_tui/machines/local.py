"""The machine this program runs on.

Relative paths (and `~`) resolve against the session's workspace: its working directory, or a
scratch workspace where that would make the home writable (machines/sandbox.py). Commands run
as `/bin/bash -c` child processes (machines/process.py), inside the sandbox unless the user
allowed one outside it; the file tools (machines/local_fs.py) keep to the same rules. The app's
own credentials are never in a command's environment.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from cmdop_tui.machines.denials import UNNAMED, denied_path
from cmdop_tui.machines.local_fs import LocalFiles, resolve_path
from cmdop_tui.machines.machine import FileBytes, MachineResult, ProgressSink, SandboxRefusal
from cmdop_tui.machines.process import run_process
from cmdop_tui.machines.sandbox import Launch, Sandbox
from cmdop_tui.machines.sandbox_view import within
from cmdop_tui.machines.secret_index import Found
from cmdop_tui.machines.spec import LOCAL
from cmdop_tui.support.secrets import CREDENTIAL_ENV
from cmdop_tui.support.text import inert_line

__all__ = ["APP_CREDENTIALS", "LocalMachine", "resolve_path"]

APP_CREDENTIALS = CREDENTIAL_ENV  # never handed to a command
NOT_SCANNED = (
    "error: the sandbox has not finished looking for secrets it must hide (a very large home or "
    "working directory?); no command runs until it has. Try again in a moment."
)


@dataclass(frozen=True)
class LocalMachine:
    """This machine, seen from a session working in `cwd`, its commands held by `sandbox`."""

    cwd: Path
    name: str = LOCAL
    sandbox: Sandbox = field(default_factory=Sandbox)  # no program: no sandbox

    @property
    def workspace(self) -> Path:
        """Where relative paths start and commands run by default."""
        return self.sandbox.workspace_for(self.cwd)

    async def run_command(
        self,
        command: str,
        *,
        cwd: str | None,
        timeout_ms: int,
        progress: ProgressSink,
        output_limit: int,
        sandboxed: bool = True,
        output_fd: int | None = None,
    ) -> MachineResult:
        directory = self._path(cwd or ".")
        confined = sandboxed and self.sandbox.confines
        # Off the event loop, in one go: what changed in the writable roots, the protected names
        # missing, each secret's place on disk (thousands), the layout.
        prepared = await asyncio.to_thread(self._prepare, command, directory, confined, time.monotonic())
        if prepared is None:
            return MachineResult.error(NOT_SCANNED)
        launch, absent = prepared
        result = await run_process(
            launch.argv,
            cwd=directory,
            timeout_ms=timeout_ms,
            progress=progress,
            output_limit=output_limit,
            env=launch.env,
            opens=launch.opens,
            output_fd=output_fd,
        )
        if not confined:
            return result
        self.sandbox.after_command(self.cwd)
        created = [path for path in absent if os.path.lexists(path)]
        if created:
            return self._refuse_created(result, created)
        if result.is_error or result.exit_code != 0:
            return self._explain_denial(result)
        return result

    def _prepare(self, command: str, directory: Path, confined: bool, asked: float) -> tuple[Launch, list[Path]] | None:
        """The command's launch and the protected names it must not create (blocking: the first
        scan of secrets is waited for; None: it did not end in time). `asked`: when the command
        asked, on the event loop (a check of the writable roots begun since stands for it: the
        commands of one reply, queued for the worker threads, share one)."""
        sandbox = self.sandbox if confined else self.sandbox.unconfined()
        found: Found | None = None
        if confined and sandbox.program:
            found = sandbox.fresh(self.cwd, asked=asked)  # the secrets as they are now
            if found is None:
                return None
        with sandbox.state.laying_out:
            absent = sandbox.absent_protected(self.cwd) if confined else []
            return sandbox.launch(["/bin/bash", "-c", command], self.cwd, chdir=directory, found=found), absent

    def _explain_denial(self, result: MachineResult) -> MachineResult:
        """A command that failed because the sandbox would not let it write somewhere (a path
        its errors name, checked against the sandbox's rules)."""
        sandbox = self.sandbox
        view = sandbox.view(self.cwd)
        path = denied_path(result.text, view.writable, sandbox.private_roots(), sandbox.denial_errors, view.protected)
        if path is None:
            return result
        hidden_here = any(within(Path(path), seen) for seen in sandbox.private_roots())
        action = "reach" if hidden_here else "write"
        held = (
            f"/tmp and /var/tmp are the session's own; only {view.writable_text()} are writable here"
            if hidden_here
            else f"only {view.writable_text()} are writable here (.git, .cmdop and their like read-only)"
        )
        refusal = SandboxRefusal(action, (inert_line(path),) if path != UNNAMED else (), held)
        note = (
            f"\n[sandbox: the command could not {refusal.needs}: {refusal.held}. "
            "Running it outside the sandbox needs the user's approval.]"
        )
        return MachineResult.denied(result.text + note, refusal)

    def _refuse_created(self, result: MachineResult, created: list[Path]) -> MachineResult:
        """A command created a protected name (`.git`, `.cmdop`, `CMDOP.md`...) that was not
        there: it is moved aside (to the quarantine folder, nothing is lost) and refused."""
        kept = self._quarantine(created)
        shown = tuple(inert_line(str(path)) for path in created)
        held = "only a person may create these in the working directory: they run code or instruct the next session"
        note = (
            f"\n[sandbox: the command created {', '.join(shown)}; {held}. It was moved to {inert_line(str(kept))}. "
            "Running the command outside the sandbox needs the user's approval.]"
        )
        return MachineResult.denied(result.text + note, SandboxRefusal("create", shown, held))

    def _quarantine(self, created: list[Path]) -> Path:
        base = Path(self.sandbox.policy.data) if self.sandbox.policy.data else self.workspace.parent
        folder = base / "quarantine" / time.strftime("%Y%m%d-%H%M%S")
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        for path in created:
            target = folder / path.name
            suffix = 1
            while os.path.lexists(target):
                target, suffix = folder / f"{path.name}.{suffix}", suffix + 1
            _owner_writable(path)
            shutil.move(str(path), str(target))
        return folder

    @property
    def files(self) -> LocalFiles:
        """The file tools here, held to the sandbox's rules for this working directory."""
        return LocalFiles(self.workspace, self.sandbox.view(self.cwd))

    async def read_file(self, path: str, *, start: int = 1, end: int | None = None) -> MachineResult:
        return await self.files.read_file(path, start=start, end=end)

    async def write_file(self, path: str, content: str, *, sandboxed: bool = True) -> MachineResult:
        return await self.files.write_file(path, content, sandboxed=sandboxed)

    async def edit_file(
        self, path: str, old_string: str, new_string: str, *, replace_all: bool = False, sandboxed: bool = True
    ) -> MachineResult:
        return await self.files.edit_file(path, old_string, new_string, replace_all=replace_all, sandboxed=sandboxed)

    async def read_bytes(self, path: str, *, max_bytes: int) -> FileBytes:
        return await self.files.read_bytes(path, max_bytes=max_bytes)

    async def list_dir(self, path: str) -> MachineResult:
        return await self.files.list_dir(path)

    async def grep(self, pattern: str, *, path: str, glob: str | None = None) -> MachineResult:
        return await self.files.grep(pattern, path=path, glob=glob)

    async def glob(self, pattern: str, *, cwd: str) -> MachineResult:
        return await self.files.glob(pattern, cwd=cwd)

    def _path(self, raw: str) -> Path:
        return resolve_path(raw, self.workspace)


def _owner_writable(path: Path) -> None:
    """Give the owner back write and search on a created folder and every folder in it: one
    made unwritable cannot be renamed into another folder (its '..' would change) nor emptied,
    and would stay where it was planted."""
    if os.path.islink(path) or not path.is_dir():
        return
    os.chmod(path, 0o700)
    for top, folders, _ in os.walk(path):
        for name in folders:
            inner = os.path.join(top, name)
            if not os.path.islink(inner):
                os.chmod(inner, 0o700)
