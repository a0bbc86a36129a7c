"""A project's MCP servers are trusted with what they run: their scripts, modules and folders in
the project. Rewrite the code a trusted server runs, and it is not started (nor started again
after a crash) until the project is trusted again; against real stdio servers written into a
temporary project."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from mcp_servers.harness import new_tag, tagged, wait_gone

from cmdop_tui.config.settings import Settings, data_dir
from cmdop_tui.mcp import McpServers, ServerState
from cmdop_tui.mcp import files as server_code
from cmdop_tui.mcp.configured import configured_servers
from cmdop_tui.mcp.files import FingerprintLimit
from cmdop_tui.mcp.listing import list_servers_text
from cmdop_tui.mcp.trust import TRUST_FILE, is_trusted, trust
from cmdop_tui.tools.base import ToolContext
from cmdop_tui.tools.registry import ToolRegistry, run_tool

# A whole stdio MCP server (the protocol by hand, standard library only) with one tool that
# says which code runs, and leaves a mark when a version starts (`MARK_DIR/started-VERSION`).
SERVER = r"""
import json, os, sys
from pathlib import Path
from {version_from} import VERSION

Path(os.environ["MARK_DIR"], f"started-{{VERSION}}").touch()
TOOL = {{"name": "version", "description": "Which code runs.", "inputSchema": {{"type": "object"}}}}


def answer(message):
    method, params = message.get("method"), message.get("params") or {{}}
    if method == "initialize":
        result = {{"protocolVersion": params.get("protocolVersion", "2025-06-18"),
                  "capabilities": {{"tools": {{}}}}, "serverInfo": {{"name": "proj", "version": VERSION}}}}
    elif method == "tools/list":
        result = {{"tools": [TOOL]}}
    elif method == "tools/call":
        result = {{"content": [{{"type": "text", "text": VERSION}}], "isError": False}}
    else:
        result = {{}}
    return {{"jsonrpc": "2.0", "id": message["id"], "result": result}}


for line in sys.stdin:
    message = json.loads(line) if line.strip() else {{}}
    if "id" in message:
        sys.stdout.write(json.dumps(answer(message)) + "\n")
        sys.stdout.flush()
"""


class Project:
    """A temporary project whose `.mcp.json` names one stdio server, `proj`, written in it: a
    script that imports a module beside it (`python server.py`, `version.py`), or a package
    (`python -m srvpkg`, `srvpkg/version.py`). `version` is the module that says which code runs."""

    def __init__(self, root: Path, layout: str) -> None:
        self.root, self.layout, self.tag = root, layout, new_tag()
        self.marks = root.parent / "marks"
        self.marks.mkdir()
        if layout == "script":
            self.main = root / "server.py"
            self.main.write_text(SERVER.format(version_from="version"))
            self.version = root / "version.py"
            args = ["server.py", self.tag]
        else:
            (root / "srvpkg").mkdir()
            (root / "srvpkg" / "__init__.py").write_text("")
            self.main = root / "srvpkg" / "__main__.py"
            self.main.write_text(SERVER.format(version_from="srvpkg.version"))
            self.version = root / "srvpkg" / "version.py"
            args = ["-m", "srvpkg", self.tag]
        self.write_version("v1")
        entry = {"command": sys.executable, "args": args, "env": {"MARK_DIR": str(self.marks)}}
        (root / ".mcp.json").write_text(json.dumps({"mcpServers": {"proj": entry}}))

    def write_version(self, version: str) -> None:
        self.version.write_text(f'VERSION = "{version}"\n')

    def started(self) -> list[str]:
        return sorted(path.name for path in self.marks.iterdir())


@pytest.fixture(params=["script", "package"])
def project(request: pytest.FixtureRequest, tmp_path: Path) -> Project:
    root = tmp_path / "project"
    root.mkdir()
    made = Project(root, request.param)
    yield made
    assert wait_gone(made.tag) == [], "an MCP server process outlived its test"


@pytest.fixture
async def opened() -> AsyncIterator[list[McpServers]]:
    made: list[McpServers] = []
    yield made
    for servers in made:
        await servers.close()


async def start(project: Project, opened: list[McpServers]) -> tuple[McpServers, list[str]]:
    specs, notes = configured_servers(Settings(), project.root)
    servers = McpServers(specs, ToolRegistry(), cwd=project.root)
    opened.append(servers)
    servers.start()
    assert await servers.wait(30)
    return servers, notes


async def ask_version(servers: McpServers) -> str:
    tool = servers.registry.get("mcp__proj__version")
    assert tool is not None, f"not offered: {servers.registry.names()}"
    result = await run_tool(tool, {}, ToolContext(call_id="c1", cwd=Path.cwd()))
    return result.content


async def test_a_rewritten_server_is_not_started_until_trusted_again(project, opened):
    servers, notes = await start(project, opened)
    assert servers.states() == [] and "start only once you trust this project" in notes[0]
    trust(project.root / ".mcp.json")
    servers, notes = await start(project, opened)
    assert notes == [] and await ask_version(servers) == "v1"
    await servers.close()

    project.write_version("v2")  # a module the server imports, not .mcp.json nor its script
    servers, notes = await start(project, opened)
    assert servers.states() == [] and "proj" in notes[0] and "start only once you trust" in notes[0]
    assert project.started() == ["started-v1"]  # the new code never ran
    trust(project.root / ".mcp.json")
    servers, notes = await start(project, opened)
    assert notes == [] and await ask_version(servers) == "v2"


async def test_its_own_script_rewritten_the_same_size_and_time_is_not_trusted(project, opened):
    trust(project.root / ".mcp.json")
    before = project.main.stat()
    text = project.main.read_text()
    project.main.write_text(text[:-1] + "#")  # one byte changed: same size
    os.utime(project.main, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert project.main.stat().st_size == before.st_size and project.main.stat().st_mtime_ns == before.st_mtime_ns
    servers, notes = await start(project, opened)
    assert servers.states() == [] and "start only once you trust" in notes[0]


async def test_a_crashed_server_whose_code_changed_is_not_started_again(project, opened):
    trust(project.root / ".mcp.json")
    servers, _ = await start(project, opened)
    assert await ask_version(servers) == "v1"
    crashed = asyncio.Event()
    servers.listeners.append(lambda state: crashed.set() if state.status == "crashed" else None)
    for pid in tagged(project.tag):
        os.kill(pid, signal.SIGKILL)
    async with asyncio.timeout(20):
        await crashed.wait()
    project.write_version("v2")
    refused = await ask_version(servers)
    assert "not started again" in refused and "changed since the project was trusted" in refused
    assert project.started() == ["started-v1"]
    state: ServerState = servers.states()[0]
    assert state.status == "failed" and "not started again" in state.reason


async def test_a_crashed_server_whose_code_is_as_trusted_starts_again(project, opened):
    trust(project.root / ".mcp.json")
    servers, _ = await start(project, opened)
    crashed = asyncio.Event()
    servers.listeners.append(lambda state: crashed.set() if state.status == "crashed" else None)
    for pid in tagged(project.tag):
        os.kill(pid, signal.SIGKILL)
    async with asyncio.timeout(20):
        await crashed.wait()
    assert await ask_version(servers) == "v1"


def test_what_is_too_big_to_fingerprint_is_never_trusted(project, monkeypatch):
    monkeypatch.setattr(server_code, "MAX_FILES", 1)
    mcp_json = project.root / ".mcp.json"
    if project.layout == "script":
        (project.root / "extra.py").write_text("")  # a second file the server names
        entry = json.loads(mcp_json.read_text())
        entry["mcpServers"]["proj"]["args"].append("extra.py")
        mcp_json.write_text(json.dumps(entry))
    with pytest.raises(FingerprintLimit, match="past what its trust can cover"):
        trust(mcp_json)
    assert not is_trusted(mcp_json, mcp_json.read_text())
    assert configured_servers(Settings(), project.root)[0] == []


def test_a_project_whose_servers_run_nothing_of_it_is_trusted_by_its_file_alone(tmp_path):
    """The fingerprint is the file's hash then, as it always was: such trusts still hold."""
    mcp_json = tmp_path / ".mcp.json"
    mcp_json.write_text(json.dumps({"mcpServers": {"web": {"type": "http", "url": "http://127.0.0.1:9/mcp"}}}))
    trust(mcp_json)
    recorded = json.loads((data_dir() / TRUST_FILE).read_text())
    assert recorded[str(mcp_json.resolve())] == hashlib.sha256(mcp_json.read_bytes()).hexdigest()


async def test_mcp_list_says_what_a_project_server_runs(project):
    trust(project.root / ".mcp.json")
    text = await list_servers_text(Settings(), project.root, timeout=20)
    shown = "server.py, version.py" if project.layout == "script" else "srvpkg/"
    assert f"  runs from the project (trusted with .mcp.json): {shown}" in text.splitlines()
