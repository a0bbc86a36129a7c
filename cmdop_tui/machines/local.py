"""The machine this program runs on.

Relative paths (and `~`) resolve against the session's working directory, not the process's.
File operations are blocking and run in a worker thread (machines/local_files.py); commands run
as `/bin/bash -c` child processes (machines/process.py), inside the sandbox (machines/sandbox.py)
unless the user allowed one outside it. The file tools keep to the same rules: writes only under
the writable roots, hidden paths unreadable, checked on the resolved path (symlinks followed).
The app's own credentials are never in a command's environment.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cmdop_tui.machines import local_files
from cmdop_tui.machines.machine import FileBytes, MachineResult, ProgressSink, SandboxRefusal
from cmdop_tui.machines.process import run_process
from cmdop_tui.machines.sandbox import Sandbox, denied_path
from cmdop_tui.machines.spec import LOCAL
from cmdop_tui.support.text import inert_line

__all__ = ["APP_CREDENTIALS", "LocalMachine", "resolve_path"]

APP_CREDENTIALS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")  # never handed to a command


def resolve_path(raw: str, base: Path) -> Path:
    """`raw` with `~` expanded, made absolute against `base` (the session's working directory)."""
    path = Path(raw).expanduser()
    return path if path.is_absolute() else base / path


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

    async def read_file(self, path: str, *, start: int = 1, end: int | None = None) -> MachineResult:
        target = self._path(path)
        return self._hidden(target) or await self._in_thread(local_files.read_file, target, start, end)

    async def write_file(self, path: str, content: str, *, sandboxed: bool = True) -> MachineResult:
        target = self._path(path)
        if sandboxed:
            refusal = self._hidden(target) or self._not_writable(target)
            if refusal is not None:
                return refusal
        return await self._in_thread(local_files.write_file, target, content)

    async def edit_file(
        self, path: str, old_string: str, new_string: str, *, replace_all: bool = False, sandboxed: bool = True
    ) -> MachineResult:
        target = self._path(path)
        if sandboxed:
            refusal = self._hidden(target) or self._not_writable(target)
            if refusal is not None:
                return refusal
        return await self._in_thread(local_files.edit_file, target, old_string, new_string, replace_all)

    async def read_bytes(self, path: str, *, max_bytes: int) -> FileBytes:
        target = self._path(path)
        hidden = self._hidden(target)
        if hidden is not None:
            return FileBytes.failed(hidden.text)
        return await asyncio.to_thread(local_files.read_bytes, target, max_bytes)

    async def list_dir(self, path: str) -> MachineResult:
        target = self._path(path)
        return self._hidden(target) or await self._in_thread(local_files.list_dir, target)

    async def grep(self, pattern: str, *, path: str, glob: str | None = None) -> MachineResult:
        target = self._path(path)
        hidden = [Path(os.path.realpath(p)) for p in self.sandbox.hidden_paths(self.cwd)]

        def hides(file: Path) -> bool:  # a secret inside the searched tree is not read either
            real = Path(os.path.realpath(file))
            return any(_within(real, secret) for secret in hidden)

        return self._hidden(target) or await self._in_thread(local_files.grep, pattern, target, glob, hides)

    async def glob(self, pattern: str, *, cwd: str) -> MachineResult:
        target = self._path(cwd)
        return self._hidden(target) or await self._in_thread(local_files.glob, pattern, target)

    async def _in_thread(self, operation: Callable[..., MachineResult], *args: Any) -> MachineResult:
        return await asyncio.to_thread(local_files.guarded, operation, *args)

    def _hidden(self, target: Path) -> MachineResult | None:
        """Refuse a path the sandbox hides (the resolved path, so a symlink cannot reach one)."""
        real = Path(os.path.realpath(target))
        for hidden in self.sandbox.hidden_paths(self.cwd):
            if _within(real, Path(os.path.realpath(hidden))) or _within(target, hidden):
                return MachineResult.error(f"{inert_line(str(target))}: hidden by the sandbox (it holds secrets)")
        return None

    def _not_writable(self, target: Path) -> MachineResult | None:
        real = Path(os.path.realpath(target))
        roots = [Path(os.path.realpath(root)) for root in self.sandbox.writable_roots(self.cwd)]
        if any(_within(real, root) for root in roots):
            return None
        shown = inert_line(str(target))
        return MachineResult.denied(
            f"{shown}: outside the sandbox's writable places ({self._writable_text()}); writing it needs "
            "the user's approval",
            SandboxRefusal("write", (shown,), f"only {self._writable_text()} are writable here"),
        )

    def _path(self, raw: str) -> Path:
        return resolve_path(raw, self.cwd)


def _within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents
