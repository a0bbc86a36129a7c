"""The machine this program runs on.

Relative paths (and `~`) resolve against the session's working directory, not the process's.
File operations are blocking and run in a worker thread (machines/local_files.py); commands run
as `/bin/bash -c` child processes (machines/process.py).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

from cmdop_tui.machines import local_files
from cmdop_tui.machines.machine import MachineResult, ProgressSink
from cmdop_tui.machines.process import run_process
from cmdop_tui.machines.spec import LOCAL

__all__ = ["LocalMachine", "resolve_path"]


def resolve_path(raw: str, base: Path) -> Path:
    """`raw` with `~` expanded, made absolute against `base` (the session's working directory)."""
    path = Path(raw).expanduser()
    return path if path.is_absolute() else base / path


@dataclass(frozen=True)
class LocalMachine:
    """This machine, seen from a session working in `cwd`."""

    cwd: Path
    name: str = LOCAL

    async def run_command(
        self, command: str, *, cwd: str | None, timeout_ms: int, progress: ProgressSink, output_limit: int
    ) -> MachineResult:
        return await run_process(
            ["/bin/bash", "-c", command],
            cwd=self._path(cwd or "."),
            timeout_ms=timeout_ms,
            progress=progress,
            output_limit=output_limit,
        )

    async def read_file(self, path: str, *, start: int = 1, end: int | None = None) -> MachineResult:
        return await asyncio.to_thread(local_files.guarded, local_files.read_file, self._path(path), start, end)

    async def write_file(self, path: str, content: str) -> MachineResult:
        return await asyncio.to_thread(local_files.guarded, local_files.write_file, self._path(path), content)

    async def list_dir(self, path: str) -> MachineResult:
        return await asyncio.to_thread(local_files.guarded, local_files.list_dir, self._path(path))

    async def grep(self, pattern: str, *, path: str, glob: str | None = None) -> MachineResult:
        return await asyncio.to_thread(local_files.guarded, local_files.grep, pattern, self._path(path), glob)

    async def glob(self, pattern: str, *, cwd: str) -> MachineResult:
        return await asyncio.to_thread(local_files.guarded, local_files.glob, pattern, self._path(cwd))

    def _path(self, raw: str) -> Path:
        return resolve_path(raw, self.cwd)
