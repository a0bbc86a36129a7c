"""MCP servers' tools in the session's registry, against real servers written with the SDK
(tests/mcp_servers/demo_server.py), over stdio and over streamable HTTP: names, schemas, tags,
results, tools added at run time, Stop, crashes, failures, and no server process left behind."""

from __future__ import annotations

import asyncio
import base64
import re
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from mcp_servers.harness import free_port, http_server, http_spec, new_tag, stdio_spec, tagged, wait_gone

from cmdop_tui.mcp import McpServers, ServerState
from cmdop_tui.mcp.names import unique_keys
from cmdop_tui.mcp.server_tables import McpServerSpec
from cmdop_tui.tools.base import ToolContext, ToolResult
from cmdop_tui.tools.registry import ToolRegistry, run_tool

TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")


@pytest.fixture(params=["stdio", "http"])
def demo(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[McpServerSpec, Path, str]]:
    """The demo server's spec over each transport, the file a cancelled `slow` writes, and the
    tag of its processes (all gone after the test)."""
    tag, mark = new_tag(), tmp_path / "mark"
    if request.param == "stdio":
        yield stdio_spec(tag=tag, env={"DEMO_MARK_FILE": str(mark)}), mark, tag
    else:
        with http_server(tag, env={"DEMO_MARK_FILE": str(mark)}) as (url, _):
            yield http_spec("demo", url), mark, tag
    assert wait_gone(tag) == [], "an MCP server process outlived its test"


async def started(*specs: McpServerSpec, cwd: Path | None = None) -> McpServers:
    servers = McpServers(specs, ToolRegistry(), cwd=cwd or Path.cwd())
    servers.start()
    assert await servers.wait(30)
    return servers


@pytest.fixture
async def opened() -> AsyncIterator[list[McpServers]]:
    """Servers a test starts (append them), closed after it whatever happens."""
    made: list[McpServers] = []
    yield made
    for servers in made:
        await servers.close()


async def call(servers: McpServers, name: str, args: dict | None = None) -> ToolResult:
    tool = servers.registry.get(name)
    assert tool is not None, f"{name} not offered; offered: {servers.registry.names()}"
    return await run_tool(tool, args or {}, ToolContext(call_id="c1", cwd=Path.cwd()))


def state(servers: McpServers, name: str = "demo") -> ServerState:
    return next(s for s in servers.states() if s.name == name)


async def test_a_servers_tools_are_offered_named_tagged_and_declared(demo, opened):
    spec, _, _ = demo
    servers = await started(spec)
    opened.append(servers)
    assert state(servers).status == "connected" and state(servers).summary().startswith("connected: 16 tools")
    names = servers.registry.names()
    assert {"mcp__demo__echo", "mcp__demo__slow", "mcp__demo__dotted_name"} <= set(names)
    assert all(TOOL_NAME.match(name) for name in names)
    echo, slow = servers.registry.get("mcp__demo__echo"), servers.registry.get("mcp__demo__slow")
    assert echo is not None and slow is not None
    assert "mcp" in echo.tags and not echo.core
    assert not echo.mutating and slow.mutating  # readOnlyHint, and its absence
    assert echo.definition()["input_schema"]["properties"]["text"]["type"] == "string"
    assert echo.definition()["description"] == "Say the text back."


async def test_results_become_text_the_model_can_read(demo, opened):
    spec, _, _ = demo
    servers = await started(spec)
    opened.append(servers)
    assert await call(servers, "mcp__demo__echo", {"text": "hi"}) == ToolResult("hi")
    image = await call(servers, "mcp__demo__image")
    assert image.content == "[image: image/png, 12 kB, 109x109]" and len(image.images) == 1
    assert image.images[0].media_type == "image/png" and base64.b64decode(image.images[0].data).startswith(b"\x89PNG")
    assert await call(servers, "mcp__demo__fail", {"message": "the disk is full"}) == ToolResult.error(
        "the disk is full"
    )
    mixed = await call(servers, "mcp__demo__mixed")
    assert mixed.content == (
        "see these\n[resource: file:///notes.txt, text/plain]\nthe notes\n"
        "[resource link: https://example.com/report (report): read it with mcp__demo__read_resource]"
    )
    structured = await call(servers, "mcp__demo__structured")
    assert structured == ToolResult('{"answer":42,"unit":"none"}')
    assert await call(servers, "mcp__demo__dotted_name") == ToolResult("dotted")
    invalid = await call(servers, "mcp__demo__echo", {"text": 3})
    assert invalid.is_error and "'text' must be a string" in invalid.content  # checked before it goes out


async def test_the_model_lists_and_reads_a_servers_resources(demo, opened):
    spec, _, _ = demo
    servers = await started(spec)
    opened.append(servers)
    reader = servers.registry.get("mcp__demo__read_resource")
    assert reader is not None and not reader.mutating and reader.tags == {"mcp", "mcp:demo"}
    listing = await call(servers, "mcp__demo__list_resources")
    assert listing.content.splitlines() == [
        "2 resources; read one with mcp__demo__read_resource(uri):",
        "- demo://notes (notes) [text/plain]: The notes.",
        "- demo://logo.png (logo) [image/png]",
        "1 URI template (fill in the {names}):",
        "- demo://{name}/readme (readme) [text/markdown]",
    ]
    linked = await call(servers, "mcp__demo__linked")
    assert linked.content.splitlines() == [
        "[resource link: demo://logo.png (logo), image/png, 3 kB: read it with mcp__demo__read_resource]",
        "[resource link: demo://notes (notes): read it with mcp__demo__read_resource]",
    ]
    notes = await call(servers, "mcp__demo__read_resource", {"uri": "demo://notes"})
    assert notes == ToolResult("[resource: demo://notes, text/plain]\nthe notes, read as a resource")
    logo = await call(servers, "mcp__demo__read_resource", {"uri": "demo://logo.png"})
    assert logo.content == "[resource: demo://logo.png, image/png]\n[image: image/png, 3 kB, 54x54]"
    assert [image.media_type for image in logo.images] == ["image/png"]
    filled = await call(servers, "mcp__demo__read_resource", {"uri": "demo://tools/readme"})
    assert filled.content == "[resource: demo://tools/readme, text/markdown]\n# tools"
    missing = await call(servers, "mcp__demo__read_resource", {"uri": "demo://nothing"})
    assert missing.is_error and "refused the read" in missing.content


async def test_a_tool_added_at_run_time_is_picked_up(demo, opened):
    spec, _, _ = demo
    servers = await started(spec)
    opened.append(servers)
    seen: list[ServerState] = []
    servers.listeners.append(seen.append)
    assert (await call(servers, "mcp__demo__grow", {"name": "newt"})).content == "added newt"
    async with asyncio.timeout(10):
        while "mcp__demo__newt" not in servers.registry:
            await asyncio.sleep(0.02)
    assert (await call(servers, "mcp__demo__newt")).content == "hello from newt"
    assert seen[-1].status == "connected" and "mcp__demo__newt" in seen[-1].tools


async def test_cancelling_a_call_stops_it_on_the_server_and_the_connection_stays_usable(demo, opened):
    spec, mark, _ = demo
    servers = await started(spec)
    opened.append(servers)
    running = asyncio.create_task(call(servers, "mcp__demo__slow", {"seconds": 30}))
    await asyncio.sleep(0.5)
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    async with asyncio.timeout(10):
        while not mark.exists():
            await asyncio.sleep(0.02)
    assert mark.read_text() == "cancelled"
    async with asyncio.timeout(5):
        assert (await call(servers, "mcp__demo__echo", {"text": "still here"})).content == "still here"
    assert state(servers).status == "connected"


async def test_a_crashed_stdio_server_is_reported_and_started_again_on_the_next_call(opened):
    tag = new_tag()
    servers = await started(stdio_spec(tag=tag))
    opened.append(servers)
    first = tagged(tag)
    crashed = await call(servers, "mcp__demo__crash")
    assert crashed.is_error and "closed the connection during the call" in crashed.content
    async with asyncio.timeout(10):
        while state(servers).status != "crashed":
            await asyncio.sleep(0.02)
    assert state(servers).reason == "the server exited"
    assert "mcp__demo__echo" in servers.registry  # a crashed server's tools stay: a call restarts it
    assert (await call(servers, "mcp__demo__echo", {"text": "back"})).content == "back"
    assert state(servers).status == "connected" and set(tagged(tag)).isdisjoint(first)


async def test_a_crashed_http_server_is_reported_and_its_tools_answer_with_the_reason(opened):
    tag = new_tag()
    with http_server(tag) as (url, process):
        servers = await started(http_spec("web", url))
        opened.append(servers)
        assert (await call(servers, "mcp__web__echo", {"text": "up"})).content == "up"
        process.kill()
        process.wait()
        lost = await call(servers, "mcp__web__echo", {"text": "down"})
        assert lost.is_error and "'web'" in lost.content
        again = await call(servers, "mcp__web__echo", {"text": "still down"})
        assert again.is_error and "could not be started again" in again.content and "cannot reach" in again.content
        assert state(servers, "web").status == "crashed"


async def test_servers_that_cannot_start_are_failed_with_the_reason_never_fatal(tmp_path, opened, monkeypatch):
    monkeypatch.delenv("MCP_TEST_UNSET", raising=False)
    quiet = new_tag()
    specs = [
        McpServerSpec(name="missing", command="no-such-mcp-server-here"),
        McpServerSpec(name="dies", command=sys.executable, args=("-c", "import sys; sys.exit('boom: no config')")),
        McpServerSpec(
            name="mute", command=sys.executable, args=("-c", "import time; time.sleep(60)", quiet), timeout_s=1
        ),
        http_spec("nobody", f"http://127.0.0.1:{free_port()}/mcp"),
        stdio_spec("needs-env", env={"TOKEN": "${MCP_TEST_UNSET}"}),
        stdio_spec("off", enabled=False),
        McpServerSpec(name="broken", source=".mcp.json", problem="needs a command"),
        stdio_spec("fine"),
    ]
    servers = await started(*specs, cwd=tmp_path)
    opened.append(servers)
    summaries = {s.name: s.summary() for s in servers.states()}
    assert summaries["missing"] == "failed: cannot start 'no-such-mcp-server-here': no such program"
    assert summaries["dies"] == "failed: the server exited; it said: boom: no config"
    assert summaries["mute"] == "failed: no answer within 1 s"
    assert summaries["nobody"].startswith("failed: cannot reach http://127.0.0.1:")
    assert (
        summaries["needs-env"]
        == "failed: the environment variable MCP_TEST_UNSET is not set (it is used by the server's settings)"
    )
    assert summaries["off"] == "disabled" and summaries["broken"] == "failed: needs a command"
    assert summaries["fine"].startswith("connected")
    assert wait_gone(quiet) == []  # the one that never answered was ended
    assert [n for n in servers.registry.names() if not n.startswith("mcp__fine__")] == []


async def test_environment_variables_and_the_working_directory_reach_a_stdio_server(tmp_path, opened, monkeypatch):
    monkeypatch.setenv("MCP_TEST_SECRET", "s3")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-not-for-servers")
    spec = stdio_spec(env={"GIVEN": "${MCP_TEST_SECRET}-x", "DEFAULTED": "${MCP_TEST_NOPE:-fallback}"})
    servers = await started(spec, cwd=tmp_path)
    opened.append(servers)
    assert (await call(servers, "mcp__demo__env", {"name": "GIVEN"})).content == "s3-x"
    assert (await call(servers, "mcp__demo__env", {"name": "DEFAULTED"})).content == "fallback"
    assert (await call(servers, "mcp__demo__env", {"name": "MCP_TEST_SECRET"})).content == "s3"  # inherited
    assert (await call(servers, "mcp__demo__env", {"name": "ANTHROPIC_API_KEY"})).content == "(unset)"
    assert (await call(servers, "mcp__demo__where")).content == str(tmp_path)


async def test_closing_ends_every_server_process_and_withdraws_the_tools(tmp_path):
    tags = [new_tag() for _ in range(3)]
    servers = await started(*(stdio_spec(f"s{i}", tag=tag) for i, tag in enumerate(tags)), cwd=tmp_path)
    assert all(tagged(tag) for tag in tags) and len(servers.registry) == 48
    await servers.close()
    assert len(servers.registry) == 0
    assert all(wait_gone(tag, timeout=5) == [] for tag in tags)


async def test_closing_while_servers_still_connect_ends_them_too(tmp_path):
    tag = new_tag()
    servers = McpServers([stdio_spec(tag=tag)], ToolRegistry(), cwd=tmp_path)
    servers.start()
    await asyncio.sleep(0.3)  # the SDK loads, the process starts, the handshake is under way
    await servers.close()
    assert wait_gone(tag, timeout=5) == [] and len(servers.registry) == 0


async def test_two_servers_whose_names_spell_the_same_keep_their_tools_apart(tmp_path, opened):
    servers = await started(stdio_spec("my.db"), stdio_spec("my_db"), cwd=tmp_path)
    opened.append(servers)
    assert (await call(servers, "mcp__my_db__echo", {"text": "a"})).content == "a"
    dotted = unique_keys(["my.db", "my_db"])["my.db"]  # my_db, spelled so already, keeps its name
    assert re.fullmatch(r"my_db_[0-9a-f]{6}", dotted) and f"mcp__{dotted}__echo" in state(servers, "my.db").tools
    assert "mcp__my_db__echo" in state(servers, "my_db").tools
    assert (await call(servers, f"mcp__{dotted}__echo", {"text": "b"})).content == "b"
    assert len(servers.registry) == 32


def test_a_server_state_says_what_it_is_in_a_line():
    base = ServerState("x", "settings", "stdio", "x", "connected", tools=("mcp__x__a",))
    assert base.summary() == "connected: 1 tool"
    assert replace(base, status="crashed", reason="the server exited").summary() == "crashed: the server exited"
    assert replace(base, status="connecting").summary() == "connecting"
