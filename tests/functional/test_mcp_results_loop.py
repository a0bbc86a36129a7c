"""What MCP servers answer reaches the model as the Messages API takes it: images as image blocks
in the next request (which the fake API checks as the real one does), kept in the transcript so
`--continue` sends them again; resources read by the model; structured content without base64;
tools that run only as tasks not offered. Against our demo server and the official ones
(`@modelcontextprotocol/server-everything`, `mcp-server-git`, `-time`, `-filesystem`, `-memory`)."""

from __future__ import annotations

import base64
import json
import re
import subprocess

import pytest
from agent_helpers import Recorder, allow_all, make_runner
from fake_anthropic import ModelSpec, text_reply, tool_reply
from mcp_servers.harness import settings_with, stdio_spec
from real_tools import real_tool

from cmdop_tui.agent.events import ToolEnd
from cmdop_tui.agent.messages import is_image, is_text, is_tool_result
from cmdop_tui.mcp.listing import describe
from cmdop_tui.mcp.server_tables import McpServerSpec
from cmdop_tui.session.session import Session

TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def everything() -> McpServerSpec:
    return McpServerSpec(name="everything", command=str(real_tool("mcp-server-everything")), timeout_s=30)


def result_of(request, index: int = 0) -> dict:
    """The tool result the request ends with (the `index`-th of its last message)."""
    return request.body["messages"][-1]["content"][index]


def parts(result: dict) -> tuple[str, list[dict]]:
    """A tool result's text and its image blocks."""
    content = result["content"]
    if isinstance(content, str):
        return content, []
    return "".join(part["text"] for part in content if is_text(part)), [part for part in content if is_image(part)]


async def test_an_image_reaches_the_model_as_an_image_block_the_api_takes(fake_api, attach, tmp_path):
    fake_api.enqueue(tool_reply("mcp__demo__image", {}), text_reply("a grey square"))
    runner, events = make_runner(fake_api, approve=allow_all()), Recorder()
    await attach(runner, stdio_spec())
    result = await runner.run("show me the picture", events)
    assert result.text == "a grey square" and fake_api.invalid_requests == []
    text, images = parts(result_of(fake_api.requests[1]))
    assert text == "[image: image/png, 12 kB, 109x109]"
    assert [image["source"]["media_type"] for image in images] == ["image/png"]
    assert base64.b64decode(images[0]["source"]["data"]).startswith(b"\x89PNG")
    assert events.of(ToolEnd)[0].output == "[image: image/png, 12 kB, 109x109]"  # the card's line
    usage = runner.context_usage()
    assert usage.tool_outputs < 200  # the image counts by its pixels (109 * 109 / 750), not its base64


async def test_the_official_everything_servers_results_reach_the_model(fake_api, attach):
    fake_api.enqueue(
        tool_reply("mcp__everything__get-tiny-image", {}),
        tool_reply("mcp__everything__get-structured-content", {"location": "New York"}),
        tool_reply("mcp__everything__get-resource-links", {"count": 2}),
        tool_reply("mcp__everything__get-resource-reference", {"resourceType": "Text", "resourceId": 1}),
        tool_reply("mcp__everything__get-resource-reference", {"resourceType": "Blob", "resourceId": 2}),
        tool_reply("mcp__everything__get-annotated-message", {"messageType": "success", "includeImage": True}),
        text_reply("seen it all"),
    )
    runner = make_runner(fake_api, approve=allow_all())
    servers = await attach(runner, everything())
    result = await runner.run("try the tools", Recorder())
    assert result.text == "seen it all" and fake_api.invalid_requests == []
    text, images = parts(result_of(fake_api.requests[1]))
    assert "\n[image: image/png, 4 kB, 20x20]\n" in text and len(images) == 1  # the MCP logo
    structured, _ = parts(result_of(fake_api.requests[2]))
    assert set(json.loads(structured)) == {"temperature", "conditions", "humidity"}
    links, _ = parts(result_of(fake_api.requests[3]))
    assert links.count("text/plain: read it with mcp__everything__read_resource]") == 2
    reference, _ = parts(result_of(fake_api.requests[4]))
    assert "[resource: demo://resource/dynamic/text/1, text/plain]\nResource 1: This is a plaintext" in reference
    blob, _ = parts(result_of(fake_api.requests[5]))  # a base64 blob of text/plain: decoded
    assert "[resource: demo://resource/dynamic/blob/2, text/plain]\nResource 2: This is a base64 blob" in blob
    annotated, images = parts(result_of(fake_api.requests[6]))
    assert annotated == "Operation completed successfully\n[image: image/png, 4 kB, 20x20]" and len(images) == 1
    names = servers.states()[0].tools
    assert all(TOOL_NAME.match(name) for name in names)
    assert "mcp__everything__read_resource" in names and "mcp__everything__list_resources" in names


async def test_a_resource_link_is_read_through_the_read_resource_tool(fake_api, attach):
    fake_api.enqueue(
        tool_reply("mcp__everything__list_resources", {}),
        tool_reply("mcp__everything__read_resource", {"uri": "demo://resource/static/document/instructions.md"}),
        text_reply("read it"),
    )
    runner = make_runner(fake_api)  # no approver: read-only tools need none
    await attach(runner, everything())
    assert (await runner.run("what resources are there", Recorder())).text == "read it"
    listing, _ = parts(result_of(fake_api.requests[1]))
    assert re.match(r"\d+ resources; read one with mcp__everything__read_resource\(uri\):\n", listing)
    assert "- demo://resource/static/document/instructions.md (instructions.md) [text/markdown]" in listing
    read, _ = parts(result_of(fake_api.requests[2]))
    assert not result_of(fake_api.requests[2]).get("is_error"), read
    assert read.startswith("[resource: demo://resource/static/document/instructions.md, text/markdown]\n# Everything")


async def test_a_tool_that_runs_only_as_a_task_is_not_offered_and_said(fake_api, attach):
    fake_api.enqueue(text_reply("fine"))
    runner = make_runner(fake_api)
    servers = await attach(runner, everything())
    await runner.run("hi", Recorder())
    offered = [tool["name"] for tool in fake_api.requests[0].body["tools"]]
    assert "mcp__everything__echo" in offered
    assert not any("simulate-research-query" in name for name in offered)
    assert servers.states()[0].hidden_lines() == [
        "not offered: simulate-research-query: runs only as a task, which this client does not do"
    ]
    listed = describe(servers.states()[0], servers.registry)  # what `cmdop-tui mcp list` prints
    assert listed[-1] == "    not offered: simulate-research-query: runs only as a task, which this client does not do"
    assert "    mcp__everything__read_resource  (read-only)" in listed


@pytest.mark.parametrize(
    ("program", "args", "tool", "arguments", "expected"),
    [
        ("mcp-server-time", (), "get_current_time", {"timezone": "UTC"}, '"timezone"'),
        ("mcp-server-memory", (), "read_graph", {}, "entities"),
        ("mcp-server-git", ("--repository", "{repo}"), "git_status", {"repo_path": "{repo}"}, "On branch"),
        ("mcp-server-filesystem", ("{repo}",), "list_directory", {"path": "{repo}"}, "README"),
    ],
)
async def test_the_other_official_servers_answer_through_the_loop(
    fake_api, attach, tmp_path, program, args, tool, arguments, expected
):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "README").write_text("hello\n")
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    fill = lambda text: text.replace("{repo}", str(repo))  # noqa: E731
    env = {"MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl")}
    spec = McpServerSpec(
        name="real", command=str(real_tool(program)), args=tuple(fill(a) for a in args), env=env, timeout_s=30
    )
    given = {key: fill(value) for key, value in arguments.items()}
    fake_api.enqueue(tool_reply(f"mcp__real__{tool}", given), text_reply("done"))
    runner = make_runner(fake_api, approve=allow_all())
    await attach(runner, spec)
    assert (await runner.run("go", Recorder())).text == "done" and fake_api.invalid_requests == []
    text, images = parts(result_of(fake_api.requests[1]))
    assert expected in text and images == [], text
    assert all(TOOL_NAME.match(tool["name"]) for tool in fake_api.requests[0].body["tools"])


async def test_continue_sends_the_image_again_from_the_transcript(fake_api, anthropic_env, tmp_path):
    settings = settings_with(stdio_spec())
    fake_api.enqueue(tool_reply("mcp__demo__image", {}), text_reply("a square"))
    async with Session(settings.with_run(auto_approve=True), platform="headless", cwd=tmp_path) as session:
        assert (await session.run("picture", Recorder())).text == "a square"
    _, sent = parts(result_of(fake_api.requests[1]))
    fake_api.enqueue(text_reply("still the square"))
    again = settings.with_run(continue_latest=True)
    async with Session(again, platform="headless", cwd=tmp_path) as session:
        assert (await session.run("and now?", Recorder())).text == "still the square"
    assert fake_api.invalid_requests == []
    history = fake_api.requests[2].body["messages"]
    results = [block for message in history for block in message["content"] if is_tool_result(block)]
    text, images = parts(results[0])
    assert text == "[image: image/png, 12 kB, 109x109]" and images == sent


async def test_a_model_that_takes_no_images_gets_their_lines_only(fake_api, anthropic_env, tmp_path):
    fake_api.enqueue(tool_reply("mcp__demo__image", {}), text_reply("I cannot see it"))
    settings = settings_with(stdio_spec()).with_run(auto_approve=True)
    async with Session(settings, platform="headless", cwd=tmp_path, record=False) as session:
        fake_api.models[session.runner.config.model] = ModelSpec(image_input=False)  # as the Models API says
        assert (await session.run("picture", Recorder())).text == "I cannot see it"
    text, images = parts(result_of(fake_api.requests[1]))
    assert images == [] and text == (
        "[image: image/png, 12 kB, 109x109]\n[1 image of this result not sent: this model takes no images]"
    )
