"""A tool call as an editor shows it: its ACP kind, its title, the files it touches (locations,
so the editor can follow), the diff of an edit or a write, and its output.

Pure functions of the call's name, input and machine: the live stream (`updates.py`), the
approval question (`permission.py`) and a loaded session's replay (`replay.py`) all describe a
call through them, so it reads the same in each.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from acp import text_block, tool_content, tool_diff_content
from acp.schema import (
    ContentToolCallContent,
    FileEditToolCallContent,
    PlanEntry,
    TerminalToolCallContent,
    ToolCallLocation,
    ToolKind,
)

from cmdop_tui.support.text import inert_line

ToolContent = ContentToolCallContent | FileEditToolCallContent | TerminalToolCallContent
PlanStatus = Literal["pending", "in_progress", "completed"]

# What each built-in tool does, in ACP's words; an MCP server's tool is "other" (or "fetch").
KINDS: Mapping[str, ToolKind] = {
    "read_file": "read",
    "list_dir": "read",
    "recall": "read",
    "skill": "read",
    "grep": "search",
    "glob": "search",
    "write_file": "edit",
    "edit_file": "edit",
    "execute_command": "execute",
    "run_on_machines": "execute",
    "ask_machine": "other",
    "ask_machines": "other",
    "todo": "think",
}
TITLE_CHARS = 120  # an editor shows a title on one line
OUTPUT_CHARS = 20_000  # of a call's output sent to the editor (the model has it whole, capped by the tool)
PLAN_STATUS: Mapping[str, PlanStatus] = {"pending": "pending", "in_progress": "in_progress", "done": "completed"}


def tool_kind(name: str) -> ToolKind:
    """The ACP kind of tool `name` (an MCP tool's is `fetch` when its own name says so)."""
    if name in KINDS:
        return KINDS[name]
    if name.startswith("mcp__") and "fetch" in name.rsplit("__", 1)[-1].lower():
        return "fetch"
    return "other"


def tool_title(name: str, args: Mapping[str, Any], machine: str = "local") -> str:
    """One line that says what the call does: `Read src/app.py`, `Run \\`make\\` on web1`."""
    title = _title(name, args)
    where = "" if machine in ("local", "") or name in ("run_on_machines", "ask_machine", "ask_machines") else machine
    if where:
        title = f"{title} on {where}"
    return inert_line(title if len(title) <= TITLE_CHARS else title[: TITLE_CHARS - 1] + "…")


def _title(name: str, args: Mapping[str, Any]) -> str:
    path, command = _text(args, "path"), _text(args, "command")
    titles = {
        "read_file": f"Read {path}",
        "list_dir": f"List {path or '.'}",
        "write_file": f"Write {path}",
        "edit_file": f"Edit {path}",
        "grep": f"Search `{_text(args, 'pattern')}` in {path or '.'}",
        "glob": f"Find `{_text(args, 'pattern')}`",
        "execute_command": f"Run `{command}`",
        "run_on_machines": f"Run `{command}` on {', '.join(_texts(args, 'machines')) or 'machines'}",
        "ask_machine": f"Ask {_text(args, 'hostname')}: {_text(args, 'prompt')}",
        "ask_machines": f"Ask {', '.join(_texts(args, 'hostnames'))}: {_text(args, 'prompt')}",
        "todo": "Update the plan",
        "recall": f"Recall the output of {_text(args, 'id')}",
        "skill": f"Read skill {_text(args, 'name')}",
    }
    if name in titles:
        return titles[name]
    if name.startswith("mcp__"):
        server, _, tool = name[len("mcp__") :].partition("__")
        return f"{server}: {tool}"
    return name


def tool_locations(name: str, args: Mapping[str, Any], machine: str, cwd: Path) -> list[ToolCallLocation]:
    """The local files the call reads or changes, absolute (an editor opens them); none on
    another machine, whose paths the editor cannot open."""
    if machine not in ("local", "") or tool_kind(name) not in ("read", "edit", "search"):
        return []
    if name in ("recall", "skill"):
        return []
    path = _text(args, "path") or ("." if name in ("grep", "list_dir") else "")
    if not path:
        return []
    line = args.get("start") if name == "read_file" and isinstance(args.get("start"), int) else None
    return [ToolCallLocation(path=local_path(path, cwd), line=line)]


def local_path(path: str, cwd: Path) -> str:
    """`path` as the editor names it: absolute, `~` expanded, relative ones from `cwd`."""
    return os.path.normpath(os.path.join(cwd, os.path.expanduser(path)))


def diff_content(name: str, args: Mapping[str, Any], machine: str, cwd: Path) -> list[ToolContent]:
    """An edit's or a write's change as ACP diff content: edit_file its old and new strings,
    write_file the whole new text (the editor diffs it against its buffer). Other calls: none."""
    path = _text(args, "path")
    if name not in ("edit_file", "write_file") or not path:
        return []
    shown = local_path(path, cwd) if machine in ("local", "") else f"{machine}:{path}"
    if name == "write_file":
        return [tool_diff_content(shown, _text(args, "content"))]
    return [tool_diff_content(shown, _text(args, "new_string"), _text(args, "old_string"))]


def output_content(output: str) -> list[ToolContent]:
    """A call's output as text content, its tail kept when it is long."""
    if not output:
        return []
    if len(output) > OUTPUT_CHARS:
        output = f"[… {len(output) - OUTPUT_CHARS:,} characters before]\n{output[-OUTPUT_CHARS:]}"
    return [tool_content(text_block(output))]


def terminal_content(terminal_id: str) -> TerminalToolCallContent:
    """The editor's terminal `terminal_id`, embedded in a call: the editor shows it live."""
    return TerminalToolCallContent(type="terminal", terminal_id=terminal_id)


def nested_text(machine: str, event: Mapping[str, Any]) -> str:
    """What an event from another machine adds to a call's output as the editor shows it: a
    host of a fan-out changing state (`web1: done — 14:02 up 3 days`), the words of an agent
    working there (ask_machine), the tools it calls. Other events add nothing."""
    kind = event.get("type")
    if kind == "host":
        line = event.get("line")
        said = f" — {line}" if isinstance(line, str) and line else ""
        return f"{event.get('hostname', machine)}: {event.get('state', '')}{said}\n"
    if kind == "token" and isinstance(event.get("text"), str):
        return str(event["text"])
    if kind == "tool_start" and isinstance(event.get("name"), str):
        return f"\n[{machine}: {event['name']}]\n"
    return ""


def plan_entries(args: Mapping[str, Any]) -> list[PlanEntry] | None:
    """The todo tool's checklist as ACP plan entries; None when its input is not one."""
    items = args.get("items")
    if not isinstance(items, list):
        return None
    entries = []
    for item in items:
        if isinstance(item, dict) and isinstance(item.get("text"), str):
            status = PLAN_STATUS.get(str(item.get("status")), "pending")
            entries.append(PlanEntry(content=item["text"], priority="medium", status=status))
    return entries


def _text(args: Mapping[str, Any], key: str) -> str:
    value = args.get(key)
    return value if isinstance(value, str) else ""


def _texts(args: Mapping[str, Any], key: str) -> list[str]:
    value = args.get(key)
    return [str(item) for item in value] if isinstance(value, list) else []
