"""The file tools on this machine, held to the sandbox's rules (machines/sandbox_view.py).

Relative paths (and `~`) start at the session's working directory. The blocking work runs in a
worker thread (machines/local_files.py), so the event loop and the Stop button stay responsive.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cmdop_tui.machines import local_files
from cmdop_tui.machines.machine import FileBytes, MachineResult, SandboxRefusal
from cmdop_tui.machines.sandbox_view import SandboxView
from cmdop_tui.support.text import inert_line

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

        def hides(file: Path) -> bool:  # a secret inside the searched tree is not read either
            return self.view.hides(Path(os.path.realpath(file)))

        return self._hidden(target) or await self._in_thread(local_files.grep, pattern, target, glob, hides)

    async def glob(self, pattern: str, *, cwd: str) -> MachineResult:
        target = self._path(cwd)
        return self._hidden(target) or await self._in_thread(local_files.glob, pattern, target)

    async def _in_thread(self, operation: Callable[..., MachineResult], *args: Any) -> MachineResult:
        return await asyncio.to_thread(local_files.guarded, operation, *args)

    def _hidden(self, target: Path) -> MachineResult | None:
        """Refuse a path the sandbox hides (the resolved path, so a symlink cannot reach one)."""
        real = Path(os.path.realpath(target))
        if self.view.hides(real, is_file=not real.is_dir()) or self.view.hides(target, is_file=False):
            return MachineResult.error(f"{inert_line(str(target))}: hidden by the sandbox (it holds secrets)")
        return None

    def _not_writable(self, target: Path) -> MachineResult | None:
        real = Path(os.path.realpath(target))
        if self.view.may_write(real):
            return None
        shown = inert_line(str(target))
        held = f"only {self.view.writable_text()} are writable here"
        return MachineResult.denied(
            f"{shown}: outside the sandbox's writable places ({self.view.writable_text()}); writing it needs "
            "the user's approval",
            SandboxRefusal("write", (shown,), held),
        )

    def _path(self, raw: str) -> Path:
        return self.view.place(resolve_path(raw, self.base))
