"""The machine this program runs on.

Relative paths (and `~`) resolve against the session's working directory, not the process's.
File operations are blocking and run in a worker thread (machines/local_files.py); commands run
as `/bin/bash -c` child processes (machines/process.py), inside the sandbox (machines/sandbox.py)
unless the user allowed one outside it. The file tools keep to the same rules: writes only under
the writable roots, hidden paths unreadable, checked on the resolved path (symlinks followed).
The app's own credentials are never in a command's environment.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from cmdop_tui.machines.local_fs import LocalFiles, resolve_path
from cmdop_tui.machines.machine import FileBytes, MachineResult, ProgressSink, SandboxRefusal
from cmdop_tui.machines.process import run_process
from cmdop_tui.machines.sandbox import Sandbox, denied_path
from cmdop_tui.machines.spec import LOCAL

__all__ = ["APP_CREDENTIALS", "LocalMachine", "resolve_path"]

APP_CREDENTIALS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")  # never handed to a command


@dataclass(frozen=True)
class LocalMachine:
    """This machine, seen from a session working in `cwd`, its commands held by `sandbox`."""

    cwd: Path
    name: str = LOCAL
    sandbox: Sandbox = field(default_factory=Sandbox)  # no program: no sandbox

    async def run_command(
        self,
        command: str,
        *,
        cwd: str | None,
        timeout_ms: int,
        progress: ProgressSink,
        output_limit: int,
        sandboxed: bool = True,
    ) -> MachineResult:
        directory = self._path(cwd or ".")
        argv = ["/bin/bash", "-c", command]
        confined = sandboxed and self.sandbox.confines
        if confined:
            argv = self.sandbox.wrap(argv, self.cwd, chdir=directory)
        # The credentials leave the environment before the sandbox starts: not even its
        # process (pid 1 of its namespace) has them.
        argv = ["/usr/bin/env", *(f"--unset={name}" for name in APP_CREDENTIALS), *argv]
        result = await run_process(
            argv, cwd=directory, timeout_ms=timeout_ms, progress=progress, output_limit=output_limit
        )
        if confined and (result.is_error or not result.text.startswith("exit code: 0")):
            return self._explain_denial(result)
        return result

    def _explain_denial(self, result: MachineResult) -> MachineResult:
        """A command that failed because the sandbox would not let it write somewhere."""
        sandbox = self.sandbox
        path = denied_path(
            result.text, sandbox.writable_roots(self.cwd), sandbox.private_roots(), sandbox.denial_errors
        )
        if path is None:
            return result
        refusal = SandboxRefusal("write", (path,), f"only {self._writable_text()} are writable here")
        note = (
            f"\n[sandbox: the command could not {refusal.needs}: {refusal.held}. "
            "Running it outside the sandbox needs the user's approval.]"
        )
        return MachineResult.denied(result.text + note, refusal)

    def _writable_text(self) -> str:
        return ", ".join(str(root) for root in self.sandbox.writable_roots(self.cwd))

    @property
    def files(self) -> LocalFiles:
        """The file tools here, held to the sandbox's rules for this working directory."""
        return LocalFiles(self.cwd, self.sandbox.view(self.cwd))

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
        return resolve_path(raw, self.cwd)
