"""Hooks as data: the settings' tables and Claude Code's JSON read into one shape (and what is
wrong said with where), matchers by tool name (Claude Code's names too) and by machine, tag or
group, and what a hook's exit code and output mean, alone and with others."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cmdop_tui.hooks.decisions import HookWord, combined, read_run
from cmdop_tui.hooks.matching import machine_matches, matching, tool_matches
from cmdop_tui.hooks.running import HookRun, hook_environment
from cmdop_tui.hooks.shape import HookCommand, HookGroup, HookShapeError, from_json, from_settings
from cmdop_tui.tools.placement import Placement

CLAUDE_CODE_FILE = {
    "hooks": {
        "PreToolUse": [
            {
                "matcher": "Bash|execute_command",
                "machines": "tag:prod",
                "hooks": [{"type": "command", "command": "~/bin/check", "timeout": 30, "on_failure": "block"}],
            }
        ],
        "Stop": [{"hooks": [{"type": "command", "command": "~/bin/done"}]}],
    }
}


def test_claude_codes_json_and_the_settings_tables_read_to_the_same_hooks():
    from_file = from_json(json.dumps(CLAUDE_CODE_FILE), "hooks.json")
    table = {
        "PreToolUse": [
            {
                "matcher": "Bash|execute_command",
                "machines": "tag:prod",
                "command": "~/bin/check",
                "timeout": 30,
                "on_failure": "block",
            }
        ],
        "Stop": [{"command": "~/bin/done"}],
    }
    from_toml = from_settings(table, "config.toml")
    [group] = from_file.for_event("PreToolUse")
    assert group.hooks == (HookCommand("~/bin/check", 30.0, "block", "hooks.json"),)
    assert group.machines == ("tag:prod",) and group.matcher == "Bash|execute_command"
    assert from_toml.for_event("PreToolUse")[0].hooks[0] == HookCommand("~/bin/check", 30.0, "block", "settings")
    assert from_toml.for_event("Stop")[0].hooks[0].timeout_s == 60.0  # the default
    assert len(from_file.joined(from_toml).for_event("PreToolUse")) == 2


@pytest.mark.parametrize(
    ("table", "says"),
    [
        ({"PreToolUse": [{"command": "x", "colour": "red"}]}, "unknown key 'colour'"),
        ({"BeforeEverything": [{"command": "x"}]}, "unknown event 'BeforeEverything'"),
        ({"PreToolUse": [{"command": "x", "matcher": "("}]}, "no regular expression"),
        ({"PreToolUse": [{"command": "x", "timeout": 0}]}, "timeout must be a positive number"),
        ({"PreToolUse": [{"command": "x", "on_failure": "maybe"}]}, "on_failure must be continue or block"),
        ({"PreToolUse": [{"command": ""}]}, "needs a command"),
        ({"PreToolUse": {"command": "x"}}, "array of tables"),
    ],
)
def test_a_hook_that_cannot_be_read_is_said_with_where(table, says):
    with pytest.raises(HookShapeError, match=says) as caught:
        from_settings(table, "config.toml")
    assert str(caught.value).startswith("config.toml: ")


def test_a_json_file_of_another_shape_is_refused():
    for text in ("[1]", '{"PreToolUse": []}', "{nope", '{"hooks": {"Stop": [{"hooks": [{"type": "prompt"}]}]}}'):
        with pytest.raises(HookShapeError):
            from_json(text, "hooks.json")


def group(matcher: str = "", machines: tuple[str, ...] = ()) -> HookGroup:
    shape = from_settings({"PreToolUse": [{"command": "x", "matcher": matcher, "machines": list(machines)}]}, "s")
    return shape.for_event("PreToolUse")[0]


def test_a_matcher_is_a_whole_regular_expression_over_our_names_and_claude_codes():
    assert tool_matches(group("Bash"), "execute_command")  # Claude Code's name of it
    assert tool_matches(group("execute_command"), "execute_command")
    assert not tool_matches(group("execute"), "execute_command")  # whole, not a prefix
    assert tool_matches(group("mcp__.*"), "mcp__github__create_issue")
    assert tool_matches(group("Edit|Write"), "write_file") and not tool_matches(group("Edit|Write"), "read_file")
    assert tool_matches(group(""), "anything") and tool_matches(group("*"), None)
    assert not tool_matches(group("Bash"), None)  # an event without a tool: only catch-alls
    assert tool_matches(group("BashOutput|KillShell"), "job_output") and tool_matches(group("KillShell"), "job_kill")


def test_machines_match_by_name_tag_or_group_and_a_fan_out_by_any_of_its_hosts():
    scopes = {"db1": ["tag:prod", "databases"], "web1": ["tag:staging"]}.get
    prod = group(machines=("tag:prod",))
    assert machine_matches(prod, Placement.one("db1"), lambda m: scopes(m) or [])
    assert not machine_matches(prod, Placement.one("web1"), lambda m: scopes(m) or [])
    assert machine_matches(prod, Placement.fanout(["web1", "db1"]), lambda m: scopes(m) or [])
    assert machine_matches(group(machines=("databases",)), Placement.one("db1"), lambda m: scopes(m) or [])
    assert machine_matches(group(machines=("web1",)), Placement.one("web1"))
    assert machine_matches(group(machines=("*",)), Placement.one("anything"))
    assert not machine_matches(prod, None)
    assert matching([prod, group("Bash")], "execute_command", Placement.one("web1")) == [group("Bash")]


def run(exit_code: int | None = 0, stdout: str = "", stderr: str = "", *, on_failure="continue", error=None) -> HookRun:
    return HookRun(HookCommand("check", on_failure=on_failure), exit_code, stdout, stderr, error=error)


def out(data: dict) -> str:
    return json.dumps(data)


def test_what_a_hook_says_is_read_as_claude_code_reads_it():
    deny = out({"hookSpecificOutput": {"permissionDecision": "deny", "permissionDecisionReason": "not today"}})
    assert read_run(run(stdout=deny), "PreToolUse") == HookWord("deny", "not today")
    change = out({"hookSpecificOutput": {"permissionDecision": "allow", "updatedInput": {"command": "ls"}}})
    assert read_run(run(stdout=change), "PreToolUse") == HookWord("allow", updated_input={"command": "ls"})
    assert read_run(run(stdout=out({"decision": "block", "reason": "lint"})), "PostToolUse") == HookWord("deny", "lint")
    assert read_run(run(stdout=out({"decision": "approve"})), "PreToolUse").decision == "allow"
    assert read_run(run(stdout=out({"continue": False, "stopReason": "halt"})), "Stop") == HookWord("deny", "halt")
    permission = out({"hookSpecificOutput": {"decision": {"behavior": "deny", "message": "no"}}})
    assert read_run(run(stdout=permission), "PermissionRequest") == HookWord("deny", "no")
    context = out({"hookSpecificOutput": {"additionalContext": "on call: Ann"}, "systemMessage": "hi"})
    assert read_run(run(stdout=context), "SessionStart") == HookWord(context="on call: Ann", message="hi")
    assert read_run(run(stdout="plain words"), "UserPromptSubmit").context == "plain words"
    assert read_run(run(stdout="plain words"), "PreToolUse") == HookWord()  # ignored there
    assert read_run(run(2, stderr="blocked by policy"), "PreToolUse") == HookWord("deny", "blocked by policy")


@pytest.mark.parametrize(
    "broken",
    [
        run(1, stderr="Traceback\nKeyError: x"),
        run(0, "{oops"),
        run(0, '{"a": 1} and more'),
        run(None, error="timed out after 1 s"),
    ],
)
def test_a_failure_goes_on_unless_the_hook_fails_closed(broken):
    word = read_run(broken, "PreToolUse")
    assert word.decision is None and word.failure and word.summary == "failed"
    closed = read_run(
        HookRun(
            HookCommand("check", on_failure="block"), broken.exit_code, broken.stdout, broken.stderr, error=broken.error
        ),
        "PreToolUse",
    )
    assert closed.decision == "deny" and "on_failure = block" in closed.reason and closed.summary == "failed, blocked"


def test_of_several_hooks_deny_wins_then_ask_then_allow_and_the_last_change_wins():
    verdict = combined([HookWord("allow", "fine"), HookWord("ask", "check it"), HookWord(updated_input={"a": 1})])
    assert (verdict.decision, verdict.reason, verdict.updated_input) == ("ask", "check it", {"a": 1})
    verdict = combined(
        [HookWord("deny", "one"), HookWord("ask", "two"), HookWord("deny", "three"), HookWord(failure="f")]
    )
    assert verdict.blocked and verdict.reason == "one; three" and verdict.failures == ("f",)
    assert combined([]).decision is None


def test_a_hooks_environment_holds_no_credential_under_any_name(tmp_path: Path):
    environ = {"ANTHROPIC_API_KEY": "sk-secret", "ANTHROPIC_AUTH_TOKEN": "tok", "MY_COPY": "sk-secret", "PATH": "/bin"}
    env = hook_environment(tmp_path, environ)
    assert env == {"PATH": "/bin", "CMDOP_PROJECT_DIR": str(tmp_path), "CLAUDE_PROJECT_DIR": str(tmp_path)}


def test_the_settings_file_refuses_a_hook_it_cannot_read_in_one_line():
    from cmdop_tui.config.loading import settings_from
    from cmdop_tui.config.model import SettingsError

    with pytest.raises(SettingsError, match=r"^settings: \[\[hooks.PreToolUse\]\]: unknown key 'colour'"):
        settings_from({"hooks": {"PreToolUse": [{"command": "x", "colour": 1}]}})
    loaded = settings_from({"hooks": {"Stop": [{"command": "~/bin/done"}]}})
    assert loaded.hooks.for_event("Stop")[0].hooks[0].command == "~/bin/done"
