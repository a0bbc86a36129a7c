"""An MCP result cut for the model is kept whole beside the transcript (our demo server, a real
stdio MCP server); the model gets the same bounded text as before."""

from __future__ import annotations

from agent_helpers import Recorder
from fake_anthropic import text_reply, tool_reply
from mcp_servers.harness import settings_with, stdio_spec

from cmdop_tui.mcp.results import OUTPUT_LIMIT
from cmdop_tui.session.session import Session
from cmdop_tui.support.text import truncate_middle


async def test_an_mcp_result_cut_for_the_model_is_kept_whole(fake_api, anthropic_env, tmp_path):
    big = "".join(f"row {n}\n" for n in range(20000))
    fake_api.enqueue(tool_reply("mcp__demo__echo", {"text": big}, id="toolu_echo"), text_reply("echoed"))
    settings = settings_with(stdio_spec()).with_run(auto_approve=True)
    async with Session(settings, platform="headless", cwd=tmp_path) as session:
        assert (await session.run("echo it", Recorder())).text == "echoed"
        outputs = session.recorder.outputs
        assert outputs is not None
        kept = outputs.existing("toolu_echo")
    sent = fake_api.requests[1].body["messages"][-1]["content"][0]["content"]
    assert sent == truncate_middle(big, OUTPUT_LIMIT)  # what the model gets is unchanged
    assert kept is not None and kept.read_text() == big
