"""How a tool call, a plan and a prompt look on the ACP side (cmdop_tui/acp/tool_calls.py,
prompts.py): kinds, titles, locations an editor can open, diffs, plan entries, prompt blocks."""

from __future__ import annotations

from pathlib import Path

from acp import resource_block, resource_link_block, text_block
from acp.schema import ImageContentBlock, TextResourceContents

from cmdop_tui.acp.prompts import prompt_text
from cmdop_tui.acp.tool_calls import (
    diff_content,
    nested_text,
    output_content,
    plan_entries,
    tool_kind,
    tool_locations,
    tool_title,
)

CWD = Path("/work/project")


def test_kinds_of_our_tools_and_of_mcp_tools() -> None:
    kinds = {name: tool_kind(name) for name in ("read_file", "grep", "edit_file", "execute_command", "todo")}
    assert kinds == {
        "read_file": "read",
        "grep": "search",
        "edit_file": "edit",
        "execute_command": "execute",
        "todo": "think",
    }
    assert tool_kind("run_on_machines") == "execute"
    assert tool_kind("mcp__web__fetch_page") == "fetch"
    assert tool_kind("mcp__git__status") == "other"


def test_titles_say_what_runs_where_on_one_line() -> None:
    assert tool_title("execute_command", {"command": "make test"}) == "Run `make test`"
    assert tool_title("execute_command", {"command": "uptime"}, "web1") == "Run `uptime` on web1"
    assert tool_title("run_on_machines", {"command": "df -h", "machines": ["web1", "web2"]}, "2 machines") == (
        "Run `df -h` on web1, web2"
    )
    assert tool_title("edit_file", {"path": "src/a.py"}) == "Edit src/a.py"
    assert "\n" not in tool_title("execute_command", {"command": "echo a\necho b"})
    assert len(tool_title("execute_command", {"command": "x" * 500})) <= 120


def test_locations_are_local_absolute_paths_only() -> None:
    [read] = tool_locations("read_file", {"path": "src/a.py", "start": 40}, "local", CWD)
    assert (read.path, read.line) == ("/work/project/src/a.py", 40)
    assert tool_locations("read_file", {"path": "/etc/hosts"}, "web1", CWD) == []  # not the editor's to open
    assert tool_locations("execute_command", {"command": "ls"}, "local", CWD) == []
    assert [loc.path for loc in tool_locations("grep", {"pattern": "x"}, "local", CWD)] == ["/work/project"]


def test_edits_and_writes_are_diffs() -> None:
    [edit] = diff_content("edit_file", {"path": "a.py", "old_string": "x = 1", "new_string": "x = 2"}, "local", CWD)
    assert (edit.path, edit.old_text, edit.new_text) == ("/work/project/a.py", "x = 1", "x = 2")
    [write] = diff_content("write_file", {"path": "/etc/motd", "content": "hi"}, "web1", CWD)
    assert (write.path, write.old_text, write.new_text) == ("web1:/etc/motd", None, "hi")
    assert diff_content("read_file", {"path": "a.py"}, "local", CWD) == []


def test_long_output_keeps_its_tail() -> None:
    [content] = output_content("a" * 30_000 + "THE END")
    assert content.content.text.endswith("THE END") and len(content.content.text) < 21_000
    assert output_content("") == []


def test_the_checklist_is_a_plan() -> None:
    items = [{"text": "a", "status": "done"}, {"text": "b", "status": "in_progress"}, {"text": "c", "status": "?"}]
    entries = plan_entries({"items": items})
    assert entries is not None and [(e.content, e.status) for e in entries] == [
        ("a", "completed"),
        ("b", "in_progress"),
        ("c", "pending"),
    ]
    assert plan_entries({"items": "not a list"}) is None


def test_a_prompts_blocks_as_text() -> None:
    blocks = [
        text_block("look at"),
        resource_link_block("a.py", "file:///work/project/src/a.py"),
        resource_link_block("b", "file:///other/place/my%20notes.txt"),
        resource_block(TextResourceContents(uri="file:///work/project/c.py", text="print(1)")),
        ImageContentBlock(type="image", data="AAAA", mime_type="image/png"),
    ]
    text = prompt_text(blocks, CWD)
    assert text.startswith('look at @src/a.py @"/other/place/my notes.txt"')
    assert "file:///work/project/c.py" in text and "print(1)" in text
    assert "an attachment of type image was left out" in text


def test_what_other_machines_say_joins_the_output() -> None:
    host = {"type": "host", "hostname": "web1", "state": "done", "line": "up 3 days", "elapsed_s": 1.2}
    assert nested_text("2 machines", host) == "web1: done — up 3 days\n"
    assert nested_text("db1", {"type": "token", "text": "Disk is "}) == "Disk is "
    assert nested_text("db1", {"type": "tool_start", "name": "execute_command"}) == "\n[db1: execute_command]\n"
    assert nested_text("db1", {"type": "usage", "input_tokens": 3}) == ""
