"""The permission modes between asking and not asking: accept_edits lets file edits in the working
tree through and nothing else; plan refuses every call that changes something, whatever allows
it; the round Shift+Tab goes, and the names every surface says."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cmdop_tui.config.model import PERMISSION_MODES
from cmdop_tui.permissions import Permissions, Rule
from cmdop_tui.session.modes import next_mode


def permissions(mode: str, tree: Path | None, *rules: Rule) -> Permissions:
    perms = Permissions(rules, mode=mode, audit=False)
    perms.working_tree = str(tree) if tree is not None else None
    return perms


def edit(path: str, **extra: str) -> dict[str, str]:
    return {"path": path, "old_string": "a", "new_string": "b", **extra}


def test_the_mode_names_are_the_stable_ones() -> None:
    assert PERMISSION_MODES == ("default", "accept_edits", "plan", "auto", "strict")
    with pytest.raises(ValueError, match="unknown permission mode"):
        Permissions(mode="yolo")


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("edit_file", edit("notes.txt")),
        ("edit_file", edit("src/deep/module.py")),
        ("write_file", {"path": "new.txt", "content": "x"}),
    ],
)
def test_accept_edits_lets_an_edit_in_the_tree_through(tmp_path: Path, tool: str, args: dict) -> None:
    tree = tmp_path / "project"
    tree.mkdir()
    decision = permissions("accept_edits", tree).decide(tool, args)
    assert decision.verdict == "allow" and "accept_edits" in decision.reason
    absolute = {**args, "path": str(tree / args["path"])}
    assert permissions("accept_edits", tree).decide(tool, absolute).verdict == "allow"
    assert permissions("default", tree).decide(tool, args).verdict == "ask"  # the mode did it


def test_accept_edits_asks_for_everything_else(tmp_path: Path) -> None:
    tree = tmp_path / "project"
    (tree / ".git" / "hooks").mkdir(parents=True)
    (tree / "escape").symlink_to(tmp_path)
    perms = permissions("accept_edits", tree)
    asked = [
        ("execute_command", {"command": "echo hi > notes.txt"}),
        ("edit_file", edit("../outside.txt")),
        ("edit_file", edit(str(tmp_path / "outside.txt"))),
        ("edit_file", edit("escape/outside.txt")),  # a link in the tree to outside it
        ("write_file", {"path": ".git/hooks/pre-commit", "content": "#!/bin/sh"}),
        ("edit_file", edit(".git/config")),
        ("edit_file", edit("~/notes.txt")),
        ("edit_file", edit("notes.txt", machine="web1")),  # another machine's tree is not this one
        ("ask_machine", {"machine": "web1", "task": "edit notes.txt"}),
    ]
    for tool, args in asked:
        assert perms.decide(tool, args).verdict == "ask", (tool, args)
    assert perms.decide("read_file", {"path": "notes.txt"}).verdict == "allow"


def test_accept_edits_keeps_the_floor_and_the_rules(tmp_path: Path) -> None:
    tree = tmp_path / "project"
    tree.mkdir()
    deny = Rule.parse("edit_file(**/locked.txt)", "deny")
    perms = permissions("accept_edits", tree, deny)
    floor = perms.decide("write_file", {"path": ".env", "content": "KEY=1"})
    assert floor.verdict == "deny" and floor.floor
    assert perms.decide("edit_file", edit("locked.txt")).verdict == "deny"


@pytest.mark.parametrize("tree", ["/", "~"])
def test_the_root_or_the_home_is_no_working_tree(tree: str) -> None:
    perms = permissions("accept_edits", Path(os.path.expanduser(tree)))
    assert perms.decide("edit_file", edit("notes.txt")).verdict == "ask"


def test_plan_mode_refuses_every_change_whatever_allows_it(tmp_path: Path) -> None:
    allow = Rule.parse("execute_command(echo *)", "allow")
    perms = permissions("plan", tmp_path, allow)
    for tool, args in [
        ("execute_command", {"command": "echo hi"}),
        ("write_file", {"path": "plan.md", "content": "x"}),
        ("edit_file", edit("notes.txt")),
        ("mcp__srv__do", {"anything": 1}),  # declared by no one: it may change things
    ]:
        decision = perms.decide(tool, args)
        assert decision.verdict == "deny", tool
        assert decision.reason.startswith(f"plan mode: {tool} was not run") and "present your plan" in decision.reason
    assert perms.decide("read_file", {"path": "notes.txt"}).verdict == "allow"
    assert perms.decide("grep", {"pattern": "x"}).verdict == "allow"
    floor = perms.decide("execute_command", {"command": "rm -rf /"})
    assert floor.floor  # the floor's reason comes first


def test_the_round_of_modes() -> None:
    assert [next_mode(m, None) for m in ("default", "accept_edits", "plan")] == ["accept_edits", "plan", "default"]
    assert next_mode("plan", "auto") == "auto" and next_mode("auto", "auto") == "default"
    assert next_mode("strict", "strict") == "default" and next_mode("plan", "strict") == "strict"
    assert next_mode("auto", None) == "default"  # out of the round: back to its start
