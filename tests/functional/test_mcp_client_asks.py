"""What MCP servers ask of the client, through a real Session, the real agent loop and the fake
Messages API, against the official `mcp-server-everything`: the roots (the workspace), sampling
(the session's model, asked like a tool call, its cost counted) and elicitation (the surface's
question; a clear refusal when there is no one to ask)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator

import pytest
from agent_helpers import Recorder, make_runner
from fake_anthropic import text_reply, tool_reply
from mcp_servers.harness import free_port, serving, settings_with
from real_tools import real_tool

from cmdop_tui import Operator
from cmdop_tui.agent.approval import Approval, ToolCall
from cmdop_tui.agent.events import ToolEnd, Usage
from cmdop_tui.mcp import McpServers
from cmdop_tui.mcp.asks import ClientAnswers, ElicitationRequest, Elicited, Root
from cmdop_tui.mcp.listing import list_servers_text
from cmdop_tui.mcp.server_tables import McpServerSpec
from cmdop_tui.session.session import Session

SAMPLE = "mcp__everything__trigger-sampling-request"
ELICIT = "mcp__everything__trigger-elicitation-request"
ROOTS = "mcp__everything__get-roots-list"


def everything() -> McpServerSpec:
    return McpServerSpec(name="everything", command=str(real_tool("mcp-server-everything")), timeout_s=30)


class Asked:
    """An approver that records each call asked and answers `allow`."""

    def __init__(self, allow: bool) -> None:
        self.allow = allow
        self.calls: list[ToolCall] = []

    async def __call__(self, call: ToolCall) -> Approval:
        self.calls.append(call)
        return Approval(self.allow, "" if self.allow else "the user chose Deny", by_person=True)


def tool_output(events: Recorder, name: str) -> str:
    return next(end.output for end in events.of(ToolEnd) if end.name == name)


async def test_the_servers_tools_that_need_roots_sampling_and_elicitation_are_offered(
    fake_api, anthropic_env, tmp_path
):
    fake_api.enqueue(tool_reply(ROOTS, {}), text_reply("listed"))
    events = Recorder()
    async with Session(settings_with(everything()), platform="headless", cwd=tmp_path, record=False) as session:
        result = await session.run("which roots?", events)
    assert result.text == "listed"
    offered = {tool["name"] for tool in fake_api.requests[0].body["tools"]}
    assert {SAMPLE, ELICIT, ROOTS} <= offered  # declared: the server registered them
    listed = tool_output(events, ROOTS)
    assert "Current MCP Roots (1 total)" in listed and f"URI: {tmp_path.resolve().as_uri()}" in listed


async def test_sampling_goes_to_the_sessions_model_once_allowed_and_counts_in_its_cost(
    fake_api, anthropic_env, tmp_path
):
    fake_api.enqueue(
        tool_reply(SAMPLE, {"prompt": "say something kind", "maxTokens": 100_000}),
        text_reply("kind words from the model"),  # the sampling request
        text_reply("the server got its answer"),
    )
    asked, events = Asked(allow=True), Recorder()
    settings = settings_with(everything())
    async with Session(settings, platform="headless", ask=asked, cwd=tmp_path, record=False) as session:
        result = await session.run("sample", events)
        spent = session.spent_usd
    assert result.text == "the server got its answer"
    sampling = asked.calls[-1]
    assert sampling.name == "mcp__everything__sampling" and sampling.tool is None
    assert sampling.input["server"] == "everything" and sampling.input["max_tokens"] == 4096  # capped
    assert "user: Resource trigger-sampling-request context: say something kind" in sampling.input["messages"]
    sampled = fake_api.requests[1].body
    assert sampled["model"] == "claude-sonnet-5-5" and sampled["max_tokens"] == 4096 and not sampled.get("stream")
    assert sampled["system"] == "You are a helpful test server."
    assert sampled["messages"][0]["content"][0]["text"].endswith("say something kind")
    assert sampled["temperature"] == 0.7
    assert fake_api.api_key in str(fake_api.requests[1].headers)  # the session's own key
    assert "kind words from the model" in tool_output(events, SAMPLE)
    costs = [usage for usage in events.of(Usage) if usage.purpose == "sampling"]
    assert len(costs) == 1 and costs[0].cost_usd and spent >= costs[0].cost_usd
    assert costs[0].session_cost_usd == pytest.approx(spent, rel=0.5)


async def test_a_denied_sampling_tells_the_server_why_and_the_model_is_not_asked(fake_api, anthropic_env, tmp_path):
    fake_api.enqueue(tool_reply(SAMPLE, {"prompt": "hi", "maxTokens": 10}), text_reply("it was refused"))
    events = Recorder()

    async def decide(call: ToolCall) -> Approval:
        return Approval(call.name != "mcp__everything__sampling", "the user chose Deny", by_person=True)

    async with Session(settings_with(everything()), platform="headless", ask=decide, cwd=tmp_path, record=False) as s:
        await s.run("sample", events)
    assert len(fake_api.requests) == 2  # the turn, and the next: no sampling request
    output = tool_output(events, SAMPLE)
    assert "the MCP server 'everything' was not allowed to sample the model: the user chose Deny" in output


async def test_with_no_one_to_ask_an_elicitation_is_refused_clearly(fake_api, anthropic_env, tmp_path):
    fake_api.enqueue(tool_reply(ELICIT, {}), text_reply("nobody answered"))
    events = Recorder()
    settings = settings_with(everything()).with_run(auto_approve=True)  # --yes: the tool call runs
    async with Session(settings, platform="headless", cwd=tmp_path, record=False) as session:
        await session.run("ask me", events)
    output = tool_output(events, ELICIT)
    assert "no one is there to answer" in output


async def test_an_elicitation_is_answered_by_the_surfaces_function_and_checked_against_its_form(
    fake_api, anthropic_env, tmp_path
):
    fake_api.enqueue(tool_reply(ELICIT, {}), text_reply("answered"), tool_reply(ELICIT, {}), text_reply("bad"))
    questions: list[ElicitationRequest] = []
    answers = iter([{"name": "Ada", "check": True, "integer": 7}, {"integer": 7}])

    async def elicit(request: ElicitationRequest) -> Elicited:
        questions.append(request)
        return Elicited("accept", next(answers))

    events = Recorder()
    settings = settings_with(everything()).with_run(auto_approve=True)
    async with Session(settings, platform="headless", elicit=elicit, cwd=tmp_path, record=False) as session:
        await session.run("ask me", events)
        await session.run("ask me again", events)
    form = questions[0]
    assert form.server == "everything" and form.message == "Please provide inputs for the following fields:"
    fields = {field.name: field for field in form.fields}
    assert fields["name"].required and fields["integer"].kind == "integer" and fields["integer"].maximum == 100
    assert fields["untitledSingleSelectEnum"].kind == "choice" and fields["titledMultipleSelectEnum"].kind == "choices"
    first, second = (end.output for end in events.of(ToolEnd))
    assert "- Name: Ada" in first and "- Favorite Integer: 7" in first
    assert "the answer does not fit the form: String: required" in second  # `name` left out


def test_the_librarys_answer_function_fills_a_form_and_sees_a_url_it_is_never_sent_to(
    fake_api, anthropic_env, tmp_path
):
    url = "https://example.com/authorize?session=1"
    fake_api.enqueue(
        tool_reply(ELICIT, {}),
        tool_reply("mcp__everything__trigger-url-elicitation", {"url": url, "message": "Log in there."}),
        text_reply("both answered"),
    )
    asked: list[ElicitationRequest] = []

    def answer(request: ElicitationRequest) -> dict[str, object] | None:
        asked.append(request)
        return {"name": "Grace"} if not request.is_url else None  # the URL: declined

    events: list[dict] = []
    with Operator(
        settings=settings_with(everything()), cwd=tmp_path, record=False, approval="auto", elicit=answer
    ) as op:
        assert op.chat("ask me twice", on_event=events.append) == "both answered"
    form, link = asked
    assert not form.is_url and form.fields and link.is_url and link.url == url and link.message == "Log in there."
    outputs = [event["output"] for event in events if event["type"] == "tool_end"]
    assert "- Name: Grace" in outputs[0]
    assert '"action": "decline"' in outputs[1]


async def test_a_change_of_the_roots_is_told_and_the_server_asks_again(fake_api, tmp_path):
    first, second = tmp_path / "one", tmp_path / "two"
    first.mkdir()
    second.mkdir()
    roots = [Root.of(first, "one")]
    asked = asyncio.Event()

    def current() -> list[Root]:
        asked.set()
        return list(roots)

    fake_api.enqueue(tool_reply(ROOTS, {}), text_reply("one"), tool_reply(ROOTS, {}), text_reply("two"))
    events = Recorder()
    runner = make_runner(fake_api, approve=Asked(allow=True))
    servers = McpServers([everything()], runner.tools, cwd=tmp_path, answers=ClientAnswers(roots=current))
    servers.start()
    try:
        assert await servers.wait(30)
        await runner.run("roots?", events)
        roots.append(Root.of(second, "two"))
        asked.clear()
        await servers.roots_changed()
        await asyncio.wait_for(asked.wait(), 10)  # the server asked for them again
        await runner.run("roots now?", events)
    finally:
        await servers.close()
    before, after = (end.output for end in events.of(ToolEnd))
    assert "(1 total)" in before and "(2 total)" in after and second.as_uri() in after


async def test_mcp_list_declares_what_a_session_does_so_it_lists_the_same_tools(tmp_path):
    text = await list_servers_text(settings_with(everything()), tmp_path, timeout=30)
    assert "  connected: " in text
    for name in (SAMPLE, ELICIT, ROOTS):
        assert f"    {name}" in text.splitlines() or f"    {name}  (read-only)" in text.splitlines()


@contextlib.contextmanager
def everything_over_http() -> Iterator[str]:
    """mcp-server-everything over streamable HTTP on a free port: its URL; ended after."""
    port = free_port()
    with serving([str(real_tool("mcp-server-everything")), "streamableHttp"], port, {"PORT": str(port)}):
        yield f"http://127.0.0.1:{port}/mcp"


async def test_over_streamable_http_too_the_roots_and_sampling_are_answered(fake_api, anthropic_env, tmp_path):
    fake_api.enqueue(
        tool_reply(ROOTS, {}),
        tool_reply(SAMPLE, {"prompt": "over http", "maxTokens": 20}),
        text_reply("sampled over http"),
        text_reply("both done"),
    )
    events = Recorder()
    with everything_over_http() as url:
        spec = McpServerSpec(name="everything", transport="http", url=url, timeout_s=30)
        settings = settings_with(spec).with_run(auto_approve=True)  # --yes: the sampling too
        async with Session(settings, platform="headless", cwd=tmp_path, record=False) as session:
            result = await session.run("roots and a sample", events)
    assert result.text == "both done"
    assert tmp_path.resolve().as_uri() in tool_output(events, ROOTS)
    assert "sampled over http" in tool_output(events, SAMPLE)
    assert fake_api.requests[2].body["messages"][0]["content"][0]["text"].endswith("over http")


async def test_a_working_directory_that_holds_the_home_is_not_told_as_a_root(
    fake_api, anthropic_env, tmp_path, monkeypatch
):
    # The official filesystem server takes the roots in place of the folders it was given: told
    # the home, it would read all of it for a prompt-injected model, where commands may not.
    home = tmp_path / "home"
    (home / "private").mkdir(parents=True)
    diary = home / "private" / "diary.txt"
    diary.write_text("MY SECRETS")
    docs = home / "docs"
    docs.mkdir()
    monkeypatch.setenv("HOME", str(home))
    server = McpServerSpec(name="fs", command=str(real_tool("mcp-server-filesystem")), args=(str(docs),), timeout_s=30)
    read = "mcp__fs__read_text_file"
    fake_api.enqueue(tool_reply(read, {"path": str(diary)}), text_reply("done"))
    events = Recorder()
    settings = settings_with(server).with_run(auto_approve=True)
    async with Session(settings, platform="headless", cwd=home, record=False) as session:
        await session.run("read the diary", events)
    output = tool_output(events, read)
    assert "MY SECRETS" not in output and "outside allowed directories" in output
