"""The MCP test servers, started and found: specs for the demo server over stdio, the demo
server over streamable HTTP on a free port of 127.0.0.1, and the processes a test left."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from cmdop_tui.config.settings import Settings
from cmdop_tui.mcp.server_tables import McpServerSpec, settings_servers

HERE = Path(__file__).resolve().parent
DEMO = HERE / "demo_server.py"
TINY = HERE / "tiny_server.py"
STUBBORN = HERE / "stubborn_server.py"
HOSTILE = HERE / "hostile_server.py"


def new_tag() -> str:
    return f"mcp-test-{uuid.uuid4().hex[:12]}"


def stdio_spec(name: str = "demo", tag: str = "", **changes: object) -> McpServerSpec:
    """The demo server over stdio; `tag` marks its command line."""
    spec = McpServerSpec(name=name, command=sys.executable, args=(str(DEMO), "--tag", tag or new_tag()))
    return replace(spec, **changes)  # type: ignore[arg-type]


def http_spec(name: str, url: str, **changes: object) -> McpServerSpec:
    return replace(McpServerSpec(name=name, transport="http", url=url), **changes)  # type: ignore[arg-type]


def settings_with(*specs: McpServerSpec) -> Settings:
    """Settings whose `[mcp.NAME]` tables are these servers, as a user would write them."""
    settings = Settings(mcp_tables={"mcp": {spec.name: server_table(spec) for spec in specs}})
    assert settings_servers(settings) == specs  # the tables say exactly these servers
    return settings


def server_table(spec: McpServerSpec) -> dict[str, object]:
    """`spec` as its `[mcp.NAME]` table."""
    table: dict[str, object] = {"type": spec.transport, "enabled": spec.enabled, "timeout": spec.timeout_s}
    if spec.command:
        table |= {"command": spec.command, "args": list(spec.args)}
    if spec.url:
        table["url"] = spec.url
    for key, value in (("env", spec.env), ("headers", spec.headers), ("cwd", spec.cwd)):
        if value:
            table[key] = dict(value) if isinstance(value, dict) else value
    return table


def tagged(tag: str) -> list[int]:
    """Pids of this machine's processes with `tag` in their command line."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and entry.name != str(os.getpid()):
            try:
                if tag.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def wait_gone(tag: str, timeout: float = 10.0) -> list[int]:
    """The processes marked `tag` still alive after `timeout` seconds (none, if all is well)."""
    deadline = time.monotonic() + timeout
    while (left := tagged(tag)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def http_server(tag: str = "", env: dict[str, str] | None = None) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """The demo server over streamable HTTP: (its URL, its process); ended (and waited for) after."""
    port = free_port()
    argv = [sys.executable, str(DEMO), "--http", str(port), "--tag", tag or new_tag()]
    with serving(argv, port, env) as process:
        yield f"http://127.0.0.1:{port}/mcp", process


@contextlib.contextmanager
def serving(argv: list[str], port: int, env: dict[str, str] | None = None) -> Iterator[subprocess.Popen[bytes]]:
    """A server started with `argv`, once it listens on `port` of 127.0.0.1; its process group
    ended (and waited for) after."""
    process = subprocess.Popen(
        argv,
        env={**os.environ, **(env or {})},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the MCP test server did not start") from None
                time.sleep(0.05)
        yield process
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
