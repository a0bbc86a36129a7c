"""The file tools on this machine, held to the sandbox's rules (machines/sandbox_view.py).

Relative paths (and `~`) start at the session's working directory. Every path is opened once
and judged on what was opened (machines/local_rules.py, machines/beneath.py), never checked
and then opened again. The blocking work runs in a worker thread (machines/local_files.py for
reads, local_glob.py, local_writes.py), so the event loop and the Stop button stay responsive.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from cmdop_tui.machines import local_files, local_glob, local_writes
from cmdop_tui.machines.local_rules import FileRules
from cmdop_tui.machines.machine import FileBytes, MachineResult
from cmdop_tui.machines.sandbox_view import SandboxView

__all__ = ["LocalFiles", "resolve_path"]


def resolve_path(raw: str, base: Path) -> Path:
    """`raw` with `~` expanded, made absolute against `base` (the session's working directory)."""
    path = Path(raw).expanduser()
    return path if path.is_absolute() else base / path


@dataclass(frozen=True)
class LocalFiles:
    """The file tools for a session working in `base`, under the sandbox's `view`."""

    base: Path
    view: SandboxView

    async def read_file(self, path: str, *, start: int = 1, end: int | None = None) -> MachineResult:
        return await self._in_thread(local_files.read_file, self._rules(), self._path(path), start, end)

    async def write_file(self, path: str, content: str, *, sandboxed: bool = True) -> MachineResult:
        return await self._in_thread(local_writes.write_file, self._rules(sandboxed), self._path(path), content)

    async def edit_file(
        self, path: str, old_string: str, new_string: str, *, replace_all: bool = False, sandboxed: bool = True
    ) -> MachineResult:
        rules, target = self._rules(sandboxed), self._path(path)
        return await self._in_thread(local_writes.edit_file, rules, target, old_string, new_string, replace_all)

    async def read_bytes(self, path: str, *, max_bytes: int) -> FileBytes:
        return await asyncio.to_thread(local_files.read_bytes, self._rules(), self._path(path), max_bytes)

    async def list_dir(self, path: str) -> MachineResult:
        return await self._in_thread(local_files.list_dir, self._rules(), self._path(path))

    async def grep(self, pattern: str, *, path: str, glob: str | None = None) -> MachineResult:
        return await self._in_thread(local_files.grep, self._rules(), pattern, self._path(path), glob)

    async def glob(self, pattern: str, *, cwd: str) -> MachineResult:
        return await self._in_thread(local_glob.glob, self._rules(), pattern, self._path(cwd))

    async def _in_thread(self, operation: Callable[..., MachineResult], *args: Any) -> MachineResult:
        return await asyncio.to_thread(local_files.guarded, operation, *args)

    def _rules(self, sandboxed: bool = True) -> FileRules:
        """The rules one operation holds to; a write the user let out of the sandbox holds to
        none (the private /tmp is still where commands see it)."""
        return FileRules(self.view if sandboxed else replace(self.view, confines=False))

    def _path(self, raw: str) -> Path:
        return resolve_path(raw, self.base)
