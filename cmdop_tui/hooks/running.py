"""Running one command hook: `/bin/sh -c COMMAND` in the session's working directory, outside the
sandbox (a hook is the user's own program), the event as JSON on its stdin, within its timeout.

Its environment is ours without the credentials the session holds (the API key, and any variable
that holds the same value under another name): a hook never sees them. A hook runs in a process
group of its own, so a timeout or a Stop (the task cancelled) kills it and all it started at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cmdop_tui.hooks.shape import HookCommand
from cmdop_tui.support.processes import kill_process_group
from cmdop_tui.support.secrets import CREDENTIAL_ENV, configured_secrets

OUTPUT_LIMIT = 1024 * 1024  # bytes of stdout or stderr kept; past it the hook's word is cut


@dataclass(frozen=True)
class HookRun:
    """What one command hook did: its exit code (None: it never ended by itself), what it printed,
    how long it took, and why it failed to run at all (could not start, timed out)."""

    hook: HookCommand
    exit_code: int | None
    stdout: str = ""
    stderr: str = ""
    duration_s: float = 0.0
    error: str | None = None


def hook_environment(cwd: Path, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Our environment for a hook: no credential of the session, under its name or another;
    the project's directory as `CMDOP_PROJECT_DIR` (and `CLAUDE_PROJECT_DIR`, for reused scripts)."""
    env = dict(os.environ if environ is None else environ)
    secrets = set(configured_secrets(env))
    clean = {name: value for name, value in env.items() if name not in CREDENTIAL_ENV and value not in secrets}
    clean["CMDOP_PROJECT_DIR"] = clean["CLAUDE_PROJECT_DIR"] = str(cwd)
    return clean


async def run_hook(hook: HookCommand, payload: Mapping[str, Any], cwd: Path, env: Mapping[str, str]) -> HookRun:
    """Run `hook` with `payload` on its stdin. Never raises but CancelledError (the hook is then
    killed, with everything it started, before this returns)."""
    started = time.monotonic()
    data = json.dumps(payload, ensure_ascii=False, default=str).encode("utf-8")
    try:
        process = await asyncio.create_subprocess_exec(
            "/bin/sh",
            "-c",
            hook.command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=cwd,
            env=dict(env),
            start_new_session=True,
        )
    except OSError as exc:
        return HookRun(hook, None, error=f"could not start ({exc})", duration_s=time.monotonic() - started)
    try:
        async with asyncio.timeout(hook.timeout_s):
            stdout, stderr = await _talk(process, data)
    except TimeoutError:
        _signal(process)
        await process.wait()
        return HookRun(hook, None, error=f"timed out after {hook.timeout_s:g} s", duration_s=time.monotonic() - started)
    except BaseException:  # a Stop: killed now, before any other await, then reaped
        _signal(process)
        await asyncio.shield(process.wait())
        raise
    return HookRun(hook, process.returncode, _text(stdout), _text(stderr), time.monotonic() - started)


async def _talk(process: asyncio.subprocess.Process, data: bytes) -> tuple[bytes, bytes]:
    """Write the event, read both outputs (bounded), wait for the end."""
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # a hook need not read its input
        process.stdin.write(data)
        await process.stdin.drain()
    with contextlib.suppress(OSError):
        process.stdin.close()
    stdout, stderr = await asyncio.gather(_read(process.stdout), _read(process.stderr))
    await process.wait()
    return stdout, stderr


async def _read(stream: asyncio.StreamReader) -> bytes:
    kept = bytearray()
    while chunk := await stream.read(65536):
        kept += chunk[: max(0, OUTPUT_LIMIT - len(kept))]
    return bytes(kept)


def _signal(process: asyncio.subprocess.Process) -> None:
    kill_process_group(process.pid)  # its own group (start_new_session): the shell and its children
    with contextlib.suppress(ProcessLookupError):
        process.kill()


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace").strip()
