"""Schema validation, the tool registry and run_tool's error handling."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from cmdop_tui.tools.base import Tool, ToolContext, ToolResult
from cmdop_tui.tools.registry import ToolRegistry, builtin_tools, run_tool
from cmdop_tui.tools.schema import object_schema, prop, validate

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "command": {"type": "string"},
        "timeout_ms": {"type": "integer", "minimum": 1, "maximum": 600_000},
        "ratio": {"type": "number"},
        "verbose": {"type": "boolean"},
        "mode": {"enum": ["fast", "safe", 1]},
        "paths": {"type": "array", "items": {"type": "string"}},
        "opts": {
            "type": "object",
            "properties": {"name": {"type": "string"}},
            "required": ["name"],
        },
        "note": {"type": ["string", "null"]},
    },
    "required": ["command"],
    "additionalProperties": False,
}


# --- schema.validate ---------------------------------------------------------------------------


def test_valid_input_has_no_problems() -> None:
    instance = {
        "command": "ls",
        "timeout_ms": 5,
        "ratio": 0.5,
        "verbose": True,
        "mode": "safe",
        "paths": ["a", "b"],
        "opts": {"name": "x", "other": 1},
        "note": None,
    }
    assert validate(instance, SCHEMA) == []
    assert validate({"command": "ls", "ratio": 2}, SCHEMA) == []


@pytest.mark.parametrize(
    ("instance", "problems"),
    [
        ({}, ["missing required field 'command'"]),
        ({"command": 1}, ["'command' must be a string"]),
        ({"command": "x", "timeout_ms": "5"}, ["'timeout_ms' must be an integer"]),
        ({"command": "x", "timeout_ms": 5.0}, ["'timeout_ms' must be an integer"]),
        ({"command": "x", "timeout_ms": True}, ["'timeout_ms' must be an integer"]),
        ({"command": "x", "ratio": False}, ["'ratio' must be a number"]),
        ({"command": "x", "verbose": 1}, ["'verbose' must be a boolean"]),
        ({"command": "x", "timeout_ms": 0}, ["'timeout_ms' must be >= 1"]),
        ({"command": "x", "timeout_ms": 600_001}, ["'timeout_ms' must be <= 600000"]),
        ({"command": "x", "mode": "slow"}, ['\'mode\' must be one of "fast", "safe", 1']),
        ({"command": "x", "mode": True}, ['\'mode\' must be one of "fast", "safe", 1']),
        ({"command": "x", "paths": "a"}, ["'paths' must be an array"]),
        ({"command": "x", "paths": ["a", 2]}, ["'paths[1]' must be a string"]),
        ({"command": "x", "opts": {}}, ["missing required field 'opts.name'"]),
        ({"command": "x", "note": 3}, ["'note' must be a string or null"]),
        ({"command": "x", "extra": 1}, ["unexpected field 'extra'"]),
        ("ls", ["input must be an object"]),
        (
            {"timeout_ms": "x", "extra": 1},
            [
                "missing required field 'command'",
                "'timeout_ms' must be an integer",
                "unexpected field 'extra'",
            ],
        ),
    ],
)
def test_problems_name_the_field(instance: Any, problems: list[str]) -> None:
    assert validate(instance, SCHEMA) == problems


def test_additional_properties_schema() -> None:
    schema = {"type": "object", "additionalProperties": {"type": "integer"}}
    assert validate({"a": 1}, schema) == []
    assert validate({"a": "1"}, schema) == ["'a' must be an integer"]


def test_builtin_schemas_accept_typical_input() -> None:
    registry = ToolRegistry(builtin_tools())
    examples = {
        "execute_command": {"command": "ls", "cwd": "/", "timeout_ms": 1_000},
        "read_file": {"path": "a", "start": 1, "end": 2},
        "list_dir": {"path": "."},
        "write_file": {"path": "a", "content": ""},
        "edit_file": {"path": "a", "old_string": "x", "new_string": "y", "replace_all": True},
        "grep": {"pattern": "x", "path": ".", "glob": "*.py"},
        "glob": {"pattern": "**/*", "cwd": "."},
    }
    assert set(examples) == set(registry.names())
    for name, example in examples.items():
        tool = registry.get(name)
        assert tool is not None and validate(example, tool.input_schema) == [], name


# --- ToolRegistry ------------------------------------------------------------------------------


def make_tool(name: str, run: Any = None) -> Tool:
    async def ok(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return ToolResult(f"ran {name} with {args}")

    schema = object_schema({"n": prop("integer", "A number.")})
    return Tool(name=name, description=f"{name} tool", input_schema=schema, run=run or ok)


def test_builtin_tools() -> None:
    names = [tool.name for tool in builtin_tools()]
    assert names == ["execute_command", "read_file", "list_dir", "write_file", "edit_file", "grep", "glob"]


def test_registry_lookup_and_order() -> None:
    registry = ToolRegistry([make_tool("b"), make_tool("a"), make_tool("c")])
    assert registry.names() == ["b", "a", "c"]
    assert [tool.name for tool in registry] == ["b", "a", "c"]
    assert len(registry) == 3
    assert "a" in registry and "z" not in registry
    assert registry.get("a") is not None and registry.get("z") is None
    definitions = registry.definitions(["c", "b", "unknown"])
    assert [definition["name"] for definition in definitions] == ["b", "c"]
    assert set(definitions[0]) == {"name", "description", "input_schema"}


def test_registry_rejects_duplicates() -> None:
    with pytest.raises(ValueError, match="duplicate tool name 'a'"):
        ToolRegistry([make_tool("a"), make_tool("a")])


# --- run_tool ----------------------------------------------------------------------------------


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(call_id="t", cwd=tmp_path)


async def test_run_tool_runs_valid_input(ctx: ToolContext) -> None:
    result = await run_tool(make_tool("a"), {"n": 1}, ctx)
    assert result == ToolResult("ran a with {'n': 1}")


async def test_run_tool_reports_invalid_input_without_running(ctx: ToolContext) -> None:
    calls: list[dict[str, Any]] = []

    async def record(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        calls.append(args)
        return ToolResult("ran")

    result = await run_tool(make_tool("a", record), {"n": "one", "m": 2}, ctx)
    assert result.is_error
    assert result.content == ("invalid input for tool 'a':\n- 'n' must be an integer\n- unexpected field 'm'")
    assert calls == []


async def test_run_tool_turns_exceptions_into_error_results(ctx: ToolContext) -> None:
    async def boom(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        raise RuntimeError("kaput")

    result = await run_tool(make_tool("boom", boom), {}, ctx)
    assert result == ToolResult.error("tool 'boom' failed: RuntimeError: kaput")


async def test_run_tool_rejects_a_non_result(ctx: ToolContext) -> None:
    async def wrong(args: dict[str, Any], ctx: ToolContext) -> Any:
        return "just a string"

    result = await run_tool(make_tool("wrong", wrong), {}, ctx)
    assert result.is_error and "not a ToolResult" in result.content


@pytest.mark.parametrize("exception", [asyncio.CancelledError, KeyboardInterrupt, SystemExit])
async def test_run_tool_never_swallows_base_exceptions(ctx: ToolContext, exception: type[BaseException]) -> None:
    async def stop(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        raise exception()

    with pytest.raises(exception):
        await run_tool(make_tool("stop", stop), {}, ctx)


async def test_run_tool_validates_builtin_limits(ctx: ToolContext) -> None:
    shell = ToolRegistry(builtin_tools()).get("execute_command")
    assert shell is not None
    result = await run_tool(shell, {"command": "true", "timeout_ms": 0}, ctx)
    assert result.is_error and "'timeout_ms' must be >= 1" in result.content
    result = await run_tool(shell, {"command": "echo ok"}, ctx)
    assert result == ToolResult("exit code: 0\n\nstdout:\nok")
