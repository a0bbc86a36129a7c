"""textual-serve's server and app service with what `cmdop-tui serve` adds (see the package's
docstring): each app in a process group of its own with a parent-death signal, a bounded stop,
an Origin check on the websocket, and a registry of running apps. Imported only when serving, so
that `cmdop-tui` itself never loads textual-serve or aiohttp.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web
from textual_serve.app_service import AppService
from textual_serve.server import Server, log

from cmdop_tui.serve.origins import origin_of
from cmdop_tui.support.processes import parent_death_signal

_PREEXEC = parent_death_signal()
QUIT_GRACE_S = 3.0  # an app asked to quit gets this long before SIGTERM...
TERM_GRACE_S = 2.0  # ... and this long after SIGTERM before SIGKILL


class CmdopAppService(AppService):
    async def _open_app_process(self, width: int = 80, height: int = 24) -> asyncio.subprocess.Process:
        # textual-serve's, plus a session of its own and the parent-death signal.
        environment = self._build_environment(width=width, height=height)
        self._process = process = await asyncio.create_subprocess_shell(
            self.command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=environment,
            start_new_session=True,
            preexec_fn=_PREEXEC,
        )
        assert process.stdin is not None
        self._stdin = process.stdin
        return process

    async def stop(self) -> None:
        """Ask the app to quit; past the grace time SIGTERM, then SIGKILL, its group; reap it.
        (textual-serve's own stop waits for the app forever.)"""
        task, self._task = self._task, None
        process = self._process
        if task is None or process is None:
            return
        await self._download_manager.cancel_app_downloads(app_service_id=self.app_service_id)
        await self.send_meta({"type": "quit"})
        if not await _ended(process, QUIT_GRACE_S):
            _signal_group(process.pid, signal.SIGTERM)
            if not await _ended(process, TERM_GRACE_S):
                _signal_group(process.pid, signal.SIGKILL)
                await process.wait()
        _signal_group(process.pid, signal.SIGKILL)  # whatever the app left in its group
        await asyncio.wait({task}, timeout=1.0)  # the output pump ends at EOF
        if not task.done():
            task.cancel()


class CmdopServer(Server):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.services: set[CmdopAppService] = set()
        self.allowed_origins: frozenset[str] = frozenset()

    async def on_startup(self, app: web.Application) -> None:
        print(f"cmdop-tui serve: open {self.public_url} in a browser (each tab is its own session)", flush=True)
        print("Press Ctrl+C to stop.", flush=True)

    async def on_shutdown(self, app: web.Application) -> None:
        await asyncio.gather(*(service.stop() for service in list(self.services)))

    def kill_all(self) -> None:
        """Last resort once the event loop is gone: SIGKILL any app still running."""
        for service in self.services:
            process = service._process
            if process is not None and process.returncode is None:
                _signal_group(process.pid, signal.SIGKILL)

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        # textual-serve's handler, plus the Origin check, CmdopAppService and the registry.
        origin = request.headers.get("Origin")
        if origin is not None and origin_of(origin) not in self.allowed_origins:
            log.warning("refused a session for a page from %s (open %s, or set --public-url)", origin, self.public_url)
            raise web.HTTPForbidden(text="cross-origin session refused\n")
        websocket = web.WebSocketResponse(heartbeat=15)
        width = _to_int(request.query.get("width", "80"), 80)
        height = _to_int(request.query.get("height", "24"), 24)
        service: CmdopAppService | None = None
        try:
            await websocket.prepare(request)
            service = CmdopAppService(
                self.command,
                write_bytes=websocket.send_bytes,
                write_str=websocket.send_str,
                close=_closer(websocket),
                download_manager=self.download_manager,
                debug=self.debug,
            )
            self.services.add(service)
            await service.start(width, height)
            await self._process_messages(websocket, service)
        except asyncio.CancelledError:
            await websocket.close()
        except Exception as error:
            log.exception(error)
        finally:
            if service is not None:
                await service.stop()
                self.services.discard(service)
        return websocket


def _closer(websocket: web.WebSocketResponse) -> Callable[[], Awaitable[None]]:
    """The app service's way to close its browser connection."""

    async def close() -> None:
        await websocket.close()

    return close


async def _ended(process: asyncio.subprocess.Process, timeout: float) -> bool:
    try:
        await asyncio.wait_for(process.wait(), timeout)
    except TimeoutError:
        return False
    return True


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _to_int(value: str, default: int) -> int:
    try:
        return int(value)
    except ValueError:
        return default
