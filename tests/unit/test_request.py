import json
from typing import Any

from cmdop_tui.agent.context import CACHE_BOUNDARY, SessionFacts, build_system_prompt, split_at_boundary
from cmdop_tui.agent.request import RequestOptions, build_request
from cmdop_tui.agent.routing import ToolPolicy, intent_router_enabled, parse_route, resolve_tools
from cmdop_tui.tools.base import Tool, ToolResult


def count_cache_breakpoints(request: dict[str, Any]) -> int:
    """How many blocks carry cache_control (the API allows at most 4)."""
    blocks: list[Any] = [*request.get("tools", []), *request.get("system", [])]
    for message in request.get("messages", []):
        if isinstance(message.get("content"), list):
            blocks.extend(message["content"])
    return sum(1 for block in blocks if isinstance(block, dict) and "cache_control" in block)


FACTS = SessionFacts(hostname="box", os_name="Linux", timezone="UTC", user="me", cwd="/tmp")


async def _noop(args, ctx):
    return ToolResult("")


def tool(name, tags=(), core=False):
    return Tool(name, f"{name} tool", {"type": "object", "properties": {}}, _noop, frozenset(tags), core)


def history(n):
    messages = []
    for i in range(n):
        messages.append({"role": "user", "content": [{"type": "text", "text": f"q{i}"}]})
        messages.append({"role": "assistant", "content": [{"type": "text", "text": f"a{i}"}]})
    messages.append({"role": "user", "content": [{"type": "text", "text": "last"}]})
    return messages


def test_request_has_temperature_in_body_and_auto_tool_choice():
    request = build_request(RequestOptions(model="m"), "static" + CACHE_BOUNDARY + "session", history(1), [tool("a")])
    assert request["extra_body"] == {"temperature": 0.3}
    assert request["tool_choice"] == {"type": "auto"}
    assert [t["name"] for t in request["tools"]] == ["a"]
    assert "thinking" not in request


def test_no_tools_means_no_tools_key_and_no_tool_choice():
    request = build_request(RequestOptions(model="m"), "s", history(1), [])
    assert "tools" not in request and "tool_choice" not in request


def test_thinking_drops_temperature_and_leaves_room_for_the_answer():
    request = build_request(RequestOptions(model="m", max_tokens=2000, thinking_budget=4000), "s", history(1), [])
    assert "extra_body" not in request
    assert request["thinking"] == {"type": "enabled", "budget_tokens": 4000}
    assert request["max_tokens"] > 4000


def test_cache_breakpoints_static_prefix_and_last_two_user_turns_never_more_than_four():
    messages = history(50)
    request = build_request(RequestOptions(model="m"), "static" + CACHE_BOUNDARY + "session", messages, [tool("a")])
    assert count_cache_breakpoints(request) == 3
    assert request["system"][0] == {"type": "text", "text": "static", "cache_control": {"type": "ephemeral"}}
    assert "cache_control" not in request["system"][1]
    marked = [i for i, m in enumerate(request["messages"]) if "cache_control" in m["content"][-1]]
    assert marked == [len(messages) - 3, len(messages) - 1]


def test_history_is_not_mutated_or_copied_beyond_the_marked_messages():
    messages = history(20)
    snapshot = json.dumps(messages)
    request = build_request(RequestOptions(model="m"), "s", messages, [])
    assert json.dumps(messages) == snapshot
    assert request["messages"][0] is messages[0]


def test_system_prompt_identity_environment_and_boundary():
    prompt = build_system_prompt(FACTS, tools_available=True)
    static, session = split_at_boundary(prompt)
    assert "I'm CMDOP Operator on box." in session
    assert "Environment: Linux; timezone UTC; user me" in session
    assert "box" not in static  # the static prefix is the same on every host: cacheable
    assert "cmdop://" in static
    assert "No tools are available" not in prompt


def test_remote_target_suppresses_local_environment_and_no_tools_adds_honesty():
    facts = SessionFacts("box", "Linux", "UTC", "me", "/tmp", target_machine="vps-foo")
    prompt = build_system_prompt(facts, tools_available=False)
    assert "vps-foo" in prompt
    assert "Environment:" not in prompt
    assert "Never invent command output" in prompt


def test_turn1_allowlist_keeps_tagged_and_core_tools_then_clears():
    tools = [tool("shell", {"shell"}), tool("read", {"files"}, core=True), tool("web", {"net"})]
    policy = ToolPolicy(turn1_allow_tags=frozenset({"net"}))
    assert [t.name for t in resolve_tools(tools, turn=1, policy=policy)] == ["read", "web"]
    assert [t.name for t in resolve_tools(tools, turn=2, policy=policy)] == ["shell", "read", "web"]


def test_hide_map_applies_last_even_to_core_tools_and_direct_route_sends_none():
    tools = [tool("read", {"files"}, core=True), tool("web", {"net"})]
    policy = ToolPolicy(turn1_allow_tags=frozenset({"files"}), hidden=frozenset({"read"}))
    assert resolve_tools(tools, turn=1, policy=policy) == []
    assert resolve_tools(tools, turn=2, policy=ToolPolicy(), route="direct") == []


def test_route_parsing_fails_open_and_env_switch():
    assert parse_route("DIRECT") == "direct"
    assert parse_route(" direct.") == "direct"
    assert parse_route("AGENT") == "agent"
    assert parse_route("I think so") == "agent"
    assert intent_router_enabled({"CMDOP_INTENT_ROUTER": "on"})
    assert not intent_router_enabled({})
