"""MCP servers as configured: `[mcp.NAME]` in the settings and a project's `.mcp.json` in every
spelling a user would try, `${VAR}` expansion, tool names the Messages API takes, permission
rules for `mcp__SERVER__TOOL`, and results read as text."""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import replace

import mcp_types as types
import pytest

from cmdop_tui.config.settings import FIRST_RUN_TEMPLATE, SettingsError, settings_from
from cmdop_tui.mcp.client import remote_tool
from cmdop_tui.mcp.configured import configured_servers
from cmdop_tui.mcp.names import McpName, extra_name, server_key, tool_names, unique_keys
from cmdop_tui.mcp.server_tables import McpServerSpec, mcp_server_from, settings_servers
from cmdop_tui.mcp.specs import expand, project_servers
from cmdop_tui.mcp.tools import RemoteTool, input_schema, mcp_tool, subject_of
from cmdop_tui.mcp.trust import trust
from cmdop_tui.permissions import Permissions
from cmdop_tui.tools.base import Subject, ToolResult

# --- the settings: [mcp.NAME] -------------------------------------------------------------------


def test_settings_take_stdio_and_http_servers():
    settings = settings_from(
        tomllib.loads(
            """
            [mcp.github]
            command = "npx"
            args = ["-y", "@modelcontextprotocol/server-github"]
            env = { GITHUB_TOKEN = "${GITHUB_TOKEN}", DEBUG = 1 }

            [mcp.docs]
            url = "https://mcp.example.com/mcp"
            headers = { Authorization = "Bearer ${DOCS_TOKEN}" }
            timeout = 5
            """
        )
    )
    github, docs = settings_servers(settings)
    assert github == McpServerSpec(
        name="github",
        command="npx",
        args=("-y", "@modelcontextprotocol/server-github"),
        env={"GITHUB_TOKEN": "${GITHUB_TOKEN}", "DEBUG": "1"},
    )
    assert (docs.transport, docs.url, docs.headers, docs.timeout_s) == (
        "http",
        "https://mcp.example.com/mcp",
        {"Authorization": "Bearer ${DOCS_TOKEN}"},
        5.0,
    )


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        ({"command": "npx -y srv"}, ("stdio", "npx", ("-y", "srv"), "")),
        ({"command": ["uvx", "srv", "--flag"]}, ("stdio", "uvx", ("srv", "--flag"), "")),
        ({"command": "srv", "args": "--port 3 --name 'a b'"}, ("stdio", "srv", ("--port", "3", "--name", "a b"), "")),
        ({"type": "stdio", "command": "srv", "args": [1, True]}, ("stdio", "srv", ("1", "true"), "")),
        ({"type": "http", "url": "http://h/mcp"}, ("http", "", (), "http://h/mcp")),
        ({"type": "streamable-http", "url": "http://h/mcp"}, ("http", "", (), "http://h/mcp")),
        ({"type": "streamableHttp", "url": "http://h/mcp"}, ("http", "", (), "http://h/mcp")),
        ({"transport": "streamable_http", "url": "http://h/mcp"}, ("http", "", (), "http://h/mcp")),
        ({"url": "https://h/mcp"}, ("http", "", (), "https://h/mcp")),
        ({"type": "sse", "url": "http://h/sse"}, ("sse", "", (), "http://h/sse")),
    ],
)
def test_every_spelling_of_a_server(table, expected):
    spec = mcp_server_from("x", table, "here")
    assert (spec.transport, spec.command, spec.args, spec.url) == expected


def test_other_tools_table_names_and_disabling_are_understood():
    settings = settings_from(
        {
            "mcp_servers": {"codex_style": {"command": "srv"}},
            "mcpServers": {"claude_style": {"command": "srv", "disabled": True}},
            "mcp": {"ours": {"command": "srv", "enabled": False}},
        }
    )
    assert {(s.name, s.enabled) for s in settings_servers(settings)} == {
        ("codex_style", True),
        ("claude_style", False),
        ("ours", False),
    }


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"command": "srv", "colour": 3}, "unknown key 'colour'"),
        ({"args": ["x"]}, "needs a command"),
        ({"type": "http"}, "needs a url starting with http"),
        ({"type": "http", "url": "ftp://h"}, "needs a url starting with http"),
        ({"type": "websocket", "url": "ws://h"}, "unknown transport 'websocket'"),
        ({"command": "srv", "timeout": 0}, "timeout must be a positive number"),
        ({"command": "srv", "env": ["A=1"]}, "env must be a table"),
        ({"command": "srv", "env": {"A": [1]}}, "env holds list"),
        ({"command": 3}, "command must be a string or a list"),
    ],
)
def test_a_server_table_that_cannot_be_used_is_a_settings_error(table, message):
    with pytest.raises(SettingsError, match=message) as raised:
        settings_servers(settings_from({"mcp": {"x": table}}))
    assert "[mcp.x]" in str(raised.value)


def test_the_first_run_template_still_changes_nothing():
    assert settings_servers(settings_from(tomllib.loads(FIRST_RUN_TEMPLATE))) == ()
    commented = "\n".join(line[2:] for line in FIRST_RUN_TEMPLATE.splitlines() if line.startswith("# [mcp"))
    assert commented  # the template shows an MCP server


# --- the project: .mcp.json ---------------------------------------------------------------------


def test_a_projects_mcp_json_in_claude_codes_format(tmp_path):
    (tmp_path / ".mcp.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "files": {"type": "stdio", "command": "npx", "args": ["-y", "fs"], "env": {"A": "1"}},
                    "api": {"type": "http", "url": "https://api/mcp", "headers": {"X-Key": "${KEY}"}},
                    "old": {"type": "sse", "url": "https://old/sse", "alwaysAllow": ["x"]},
                    "bad": {"type": "http"},
                    "odd": "not an object",
                }
            }
        )
    )
    specs, notes = project_servers(tmp_path)
    assert notes == []
    by_name = {spec.name: spec for spec in specs}
    assert by_name["files"].source == ".mcp.json" and by_name["files"].args == ("-y", "fs")
    assert by_name["api"].transport == "http" and by_name["api"].headers == {"X-Key": "${KEY}"}
    assert by_name["old"].transport == "sse" and by_name["old"].problem is None  # unknown keys: ignored
    assert "needs a url" in (by_name["bad"].problem or "")
    assert "must be a table" in (by_name["odd"].problem or "")


@pytest.mark.parametrize(
    ("text", "note"),
    [("{not json", "invalid JSON"), ('{"other": {}}', 'no "mcpServers" object'), ("[]", 'no "mcpServers"')],
)
def test_a_broken_mcp_json_is_a_note_not_a_failure(tmp_path, text, note):
    (tmp_path / ".mcp.json").write_text(text)
    specs, notes = project_servers(tmp_path)
    assert specs == [] and len(notes) == 1 and note in notes[0]


def test_vs_codes_servers_key_and_no_file_at_all(tmp_path):
    assert project_servers(tmp_path) == ([], [])
    (tmp_path / ".mcp.json").write_text('{"servers": {"x": {"command": "srv"}}}')
    assert [spec.name for spec in project_servers(tmp_path)[0]] == ["x"]


def test_the_project_wins_over_the_settings_for_the_same_name(tmp_path):
    settings = settings_from({"mcp": {"db": {"command": "mine"}, "kept": {"command": "k"}}})
    (tmp_path / ".mcp.json").write_text('{"mcpServers": {"db": {"command": "theirs"}}}')
    specs, _ = configured_servers(settings, tmp_path)
    assert [spec.command for spec in specs] == ["mine", "k"]  # not trusted yet: the user's own stay
    trust(tmp_path / ".mcp.json")
    specs, _ = configured_servers(settings, tmp_path)
    assert [(spec.name, spec.command, spec.source) for spec in specs] == [
        ("kept", "k", "settings"),
        ("db", "theirs", ".mcp.json"),
    ]


def test_variables_are_expanded_when_a_server_starts(monkeypatch):
    spec = McpServerSpec(
        name="x",
        command="~/bin/${TOOL}",
        args=("--token=${TOKEN}", "${MISSING:-none}", "$PLAIN"),
        env={"T": "${TOKEN}"},
        url="https://${HOST:-h}/mcp",
        headers={"Authorization": "Bearer ${TOKEN}"},
    )
    environ = {"TOOL": "srv", "TOKEN": "t0k", "HOME": "/home/u"}
    monkeypatch.setenv("HOME", "/home/u")
    expanded = expand(spec, environ)
    assert expanded.command == "/home/u/bin/srv"
    assert expanded.args == ("--token=t0k", "none", "$PLAIN")
    assert expanded.env == {"T": "t0k"} and expanded.headers == {"Authorization": "Bearer t0k"}
    assert expanded.url == "https://h/mcp"
    with pytest.raises(ValueError, match="TOKEN is not set"):
        expand(spec, {"TOOL": "srv"})


# --- names the Messages API takes ----------------------------------------------------------------


def test_tool_names_are_sanitised_bounded_unique_and_stable():
    def names(server: str, *tools: str, key: str = "") -> dict[str, McpName]:
        return tool_names(server, key or server_key(server), list(tools))

    assert names("github", "create_issue") == {"create_issue": McpName("mcp__github__create_issue")}
    assert names("fs", "read.file v2")["read.file v2"] == McpName("mcp__fs__read_file_v2")
    long = names("fs", "x" * 300)["x" * 300]
    assert len(long.name) == 64 and re.fullmatch(r"mcp__fs__x{48}_[0-9a-f]{6}", long.name)
    assert long.full == "mcp__fs__" + "x" * 300  # rules written against it still apply
    # two tools spelled alike: the one already spelled so keeps its name, in either order
    clash = names("fs", "a.b", "a_b")
    assert clash["a_b"] == McpName("mcp__fs__a_b") and clash["a.b"].name.startswith("mcp__fs__a_b_")
    assert names("fs", "a_b", "a.b") == clash and clash["a.b"].full is None
    assert server_key("my server.v2") == "my_server_v2"
    assert server_key("a__b") == "a_b" and server_key("!!!") == "server"
    assert re.fullmatch(r"a_very_long_serve_[0-9a-f]{6}", server_key("a_very_long_server_name_indeed"))
    assert unique_keys(["db", "d.b", "d_b"]) == unique_keys(["d_b", "d.b", "db"])  # the order changes nothing
    keys = unique_keys(["db", "d.b", "d_b"])
    assert keys["db"] == "db" and keys["d_b"] == "d_b" and re.fullmatch(r"d_b_[0-9a-f]{6}", keys["d.b"])
    every = names("a-server-with-a-rather-long-name", *(f"tool.{n}" * 9 for n in range(50)))
    assert len({name.name for name in every.values()}) == 50
    assert all(re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", name.name) for name in every.values())
    assert all(
        name.name.startswith(f"mcp__{server_key('a-server-with-a-rather-long-name')}__") for name in every.values()
    )
    assert extra_name("fs", "read_resource", ["mcp__fs__echo"]) == "mcp__fs__read_resource"
    assert re.fullmatch(
        r"mcp__fs__read_resource_[0-9a-f]{6}", extra_name("fs", "read_resource", ["mcp__fs__read_resource"])
    )


def test_a_rule_written_against_the_full_name_applies_to_the_shortened_one():
    async def never(name, args, ctx):
        raise AssertionError

    server, remote = "an-mcp-server-whose-name-is-long", "fetch_the_report_of_the_quarter_in_every_format"
    full = f"mcp__{server}__{remote}"
    spec = mcp_tool(server, server_key(server), RemoteTool(remote), never)
    assert len(full) > 64 and len(spec.name) <= 64 and spec.aliases == {full}
    for rule, verdict in ((full, "deny"), (f"mcp__{server}", "allow"), (f"mcp__{server}__*", "deny")):
        permissions = Permissions(audit=False)
        permissions.add_session_rule(rule, verdict)
        assert permissions.decide(spec.name, {}, spec=spec).verdict == verdict
    assert Permissions(audit=False).decide(spec.name, {}, spec=spec).verdict == "ask"


def test_a_tool_declares_what_the_floor_and_the_rules_judge():
    assert subject_of(input_schema({"properties": {"command": {"type": "string"}}})) == Subject(
        "command", "command", every_string=True
    )
    assert subject_of(input_schema({"properties": {"file_path": {"type": "string"}}})) == Subject(
        "path", "file_path", reads_content=True, reach="parent", every_string=True
    )
    assert subject_of(input_schema({"properties": {"path": {"type": "array"}}})) == Subject(
        "path", "", every_string=True
    )
    assert input_schema({"type": "string"}) == {"type": "object", "properties": {}}
    assert input_schema(None) == {"type": "object", "properties": {}}


async def test_a_tool_with_no_description_says_whose_it_is():
    async def call(name, args, ctx):
        return ToolResult(name)

    tool = mcp_tool("my.db", "my_db", RemoteTool("q"), call)
    assert tool.description == "The tool q of the MCP server my.db."
    assert tool.tags == {"mcp", "mcp:my_db"} and tool.mutating
    assert tool.subject == Subject("path", "", every_string=True)  # the floor judges every string
    assert (await tool.run({}, None)).content == "q"  # type: ignore[arg-type]


# --- permission rules for mcp__SERVER__TOOL --------------------------------------------------------


def decide(rules: list[tuple[str, str]], tool: str, *, read_only: bool = False, mode: str = "default") -> str:
    permissions = Permissions(mode=mode, audit=False)
    for text, verdict in rules:
        permissions.add_session_rule(text, verdict)

    async def never(name, args, ctx):
        raise AssertionError

    server, _, remote = tool.removeprefix("mcp__").partition("__")
    spec = mcp_tool(server, server, RemoteTool(remote, read_only=read_only), never)
    assert spec.name == tool
    return permissions.decide(tool, {}, spec=spec).verdict


@pytest.mark.parametrize(
    ("rules", "tool", "verdict"),
    [
        ([], "mcp__demo__slow", "ask"),  # mutating unless the server says read-only
        ([], "mcp__demo__echo", "ask"),
        ([("mcp__demo__*", "allow")], "mcp__demo__slow", "allow"),
        ([("mcp__demo", "allow")], "mcp__demo__slow", "allow"),  # Claude Code's spelling
        ([("mcp__demo", "allow")], "mcp__demonic__slow", "ask"),
        ([("mcp__de", "allow")], "mcp__demo__slow", "ask"),
        ([("mcp__demo__slow", "deny")], "mcp__demo__slow", "deny"),
        ([("mcp__demo__*", "allow"), ("mcp__demo__slow", "deny")], "mcp__demo__slow", "deny"),
        ([("mcp__*", "deny")], "mcp__demo__slow", "deny"),
        ([("mcp__demo__*", "ask")], "mcp__demo__slow", "ask"),
    ],
)
def test_rules_name_mcp_tools_as_they_name_built_in_ones(rules, tool, verdict):
    assert decide(rules, tool) == verdict


def test_read_only_tools_run_without_asking_and_modes_apply():
    assert decide([], "mcp__demo__echo", read_only=True) == "allow"
    assert decide([], "mcp__demo__slow", mode="strict") == "deny"
    assert decide([], "mcp__demo__slow", mode="auto") == "allow"
    assert decide([("mcp__demo", "deny")], "mcp__demo__echo", read_only=True, mode="auto") == "deny"


def test_a_spec_is_a_value():
    spec = McpServerSpec(name="a", command="x")
    assert replace(spec, name="b").name == "b" and spec.enabled and spec.source == "settings"


def test_only_a_tool_that_runs_only_as_a_task_is_held_back():
    def listed(support: str | None) -> RemoteTool:
        execution = types.ToolExecution(task_support=support) if support else None
        return remote_tool(types.Tool(name="t", input_schema={"type": "object"}, execution=execution))

    assert [listed(support).task_only for support in (None, "forbidden", "optional", "required")] == [
        False,
        False,
        False,
        True,
    ]
