"""How a tool call ended, decided where the fact is known: the command's exit code and its own
timeout, the sandbox's refusal, the gate (a person, a rule, the floor, no one to ask), the
approval question's timeout, a Stop; carried on the tool_end event, never read back from text."""

from __future__ import annotations

import asyncio
import json

import mcp_types as types
import pytest
from agent_helpers import Recorder, make_runner
from fake_anthropic import text_reply, tool_reply

from cmdop_tui.agent.approval import Approval, ToolCall
from cmdop_tui.agent.events import ToolEnd, ToolStart
from cmdop_tui.machines.machine import MachineResult, SandboxRefusal
from cmdop_tui.mcp.results import tool_result
from cmdop_tui.permissions import Permissions
from cmdop_tui.session.gate import permission_gate
from cmdop_tui.tools.base import ToolResult
from cmdop_tui.tools.fanout import Outcome, call_outcome
from cmdop_tui.tools.outcome import OK, OutcomeKind, ToolOutcome, command_outcome
from cmdop_tui.tools.registry import builtin_tools
from cmdop_tui.tui.vocabulary.tool_records import ToolRecord, describe_nested, nested_outcome


def test_a_commands_outcome_is_its_exit_code_or_its_timeout():
    assert command_outcome(0) == OK
    failed = command_outcome(3)
    assert (failed.kind, failed.exit_code, failed.word, failed.label) == (
        OutcomeKind.FAILED,
        3,
        "exit 3",
        "failed (exit code 3)",
    )
    killed = command_outcome(-9)
    assert killed.kind is OutcomeKind.FAILED and "signal 9" in killed.reason
    late = command_outcome(None, timed_out=True, timeout_ms=1500)
    assert late.kind is OutcomeKind.TIMED_OUT and late.label == "timed out" and "1,500 ms" in late.reason


def test_a_machines_answer_becomes_the_outcome_by_its_typed_fields_not_its_text():
    # The text says exit 0; the typed field says 1: the field decides.
    assert ToolResult.of(MachineResult("exit code: 0\n\n(no output)", exit_code=1)).settled.exit_code == 1
    assert ToolResult.of(MachineResult("exit code: 1", exit_code=0)).settled == OK
    assert (
        ToolResult.of(MachineResult("error: ...", is_error=True, timed_out_ms=10)).settled.kind is OutcomeKind.TIMED_OUT
    )
    refused = ToolResult.of(MachineResult.denied("...", SandboxRefusal("write", ("/etc/hosts",))))
    assert refused.settled.kind is OutcomeKind.REFUSED_BY_SANDBOX and "write /etc/hosts" in refused.settled.reason
    assert ToolResult.error("boom\nmore").settled == ToolOutcome(OutcomeKind.FAILED, "boom")


def test_an_mcp_tools_error_says_the_servers_first_line():
    said = types.CallToolResult(content=[types.TextContent(type="text", text="disk full\nat /srv")], is_error=True)
    assert tool_result(said).settled == ToolOutcome(OutcomeKind.FAILED, "the tool reported an error: disk full")
    assert tool_result(types.CallToolResult(content=[types.TextContent(type="text", text="fine")])).settled == OK


def test_every_kind_has_a_short_word_and_a_label_and_knows_whether_it_ran():
    for kind in OutcomeKind:
        assert kind.word and kind.label and len(kind.word) <= 9  # a narrow row keeps room for the rest
    assert {kind for kind in OutcomeKind if kind.ran} == {
        OutcomeKind.OK,
        OutcomeKind.FAILED,
        OutcomeKind.TIMED_OUT,
        OutcomeKind.CANCELLED,
    }
    said = ToolOutcome(OutcomeKind.DENIED_BY_RULE, "denied by rule execute_command(rm *)")
    assert said.described() == "denied by a rule: denied by rule execute_command(rm *)"


async def ended(fake_api, tmp_path, command: str, approve=None, **config) -> ToolEnd:
    fake_api.enqueue(tool_reply("execute_command", {"command": command}), text_reply("done"))
    runner = make_runner(fake_api, cwd=tmp_path, approve=approve, **config)
    recorder = Recorder()
    await runner.run("go", recorder)
    (end,) = recorder.of(ToolEnd)
    return end


async def test_a_command_that_exits_1_ends_failed_with_its_code(fake_api, tmp_path):
    end = await ended(fake_api, tmp_path, "echo nope; exit 1")
    assert end.outcome.kind is OutcomeKind.FAILED and end.outcome.exit_code == 1
    assert not end.is_error  # the model's result is as before: the exit code is in its text
    wire = json.loads(json.dumps(end.to_json()))
    assert wire["outcome"] == {"kind": "failed", "reason": "the command exited with code 1", "exit_code": 1}


async def test_a_command_past_its_own_timeout_ends_timed_out(fake_api, tmp_path):
    fake_api.enqueue(tool_reply("execute_command", {"command": "sleep 30.5173", "timeout_ms": 200}), text_reply("done"))
    recorder = Recorder()
    await make_runner(fake_api, cwd=tmp_path).run("go", recorder)
    (end,) = recorder.of(ToolEnd)
    assert end.outcome.kind is OutcomeKind.TIMED_OUT and "200 ms" in end.outcome.reason


@pytest.mark.parametrize(
    ("approval", "kind", "model_says"),
    [
        (Approval(False, "the user chose Deny", by_person=True), OutcomeKind.DENIED, "The user denied"),
        (
            Approval(False, "no answer in time (asked for 60 s)", denied_as=OutcomeKind.APPROVAL_TIMEOUT),
            OutcomeKind.APPROVAL_TIMEOUT,
            "did not answer in time",
        ),
        (
            Approval(False, "denied by rule execute_command(touch *)", denied_as=OutcomeKind.DENIED_BY_RULE),
            OutcomeKind.DENIED_BY_RULE,
            "denied by the permission rules",
        ),
        (
            Approval(False, "it needs approval", denied_as=OutcomeKind.NO_ONE_TO_ASK),
            OutcomeKind.NO_ONE_TO_ASK,
            "no person could be asked",
        ),
        (
            Approval(False, "catastrophic", denied_as=OutcomeKind.REFUSED_BY_FLOOR),
            OutcomeKind.REFUSED_BY_FLOOR,
            "refused by the safety floor",
        ),
    ],
)
async def test_a_denial_is_drawn_and_told_by_who_said_no(fake_api, tmp_path, approval, kind, model_says):
    async def answer(call: ToolCall) -> Approval:
        return approval

    end = await ended(fake_api, tmp_path, f"touch {tmp_path / 'never'}", approve=answer)
    assert end.outcome == ToolOutcome(kind, approval.reason)
    assert not (tmp_path / "never").exists()
    result = fake_api.requests[1].body["messages"][-1]["content"][0]
    assert result["is_error"] and model_says in result["content"] and approval.reason in result["content"]


async def test_a_broken_approval_prompt_is_no_one_to_ask(fake_api, tmp_path):
    async def broken(call: ToolCall) -> Approval:
        raise RuntimeError("the terminal went away")

    end = await ended(fake_api, tmp_path, "true", approve=broken)
    assert end.outcome.kind is OutcomeKind.NO_ONE_TO_ASK and "the terminal went away" in end.outcome.reason


async def test_a_stopped_call_ends_cancelled(fake_api, tmp_path):
    fake_api.enqueue(tool_reply("execute_command", {"command": "sleep 30.5179"}), text_reply("never"))
    runner = make_runner(fake_api, cwd=tmp_path)
    recorder = Recorder()
    run = asyncio.create_task(runner.run("go", recorder))
    await recorder.wait_for(ToolStart)
    runner.ui_cancel.fire()
    await run
    (end,) = recorder.of(ToolEnd)
    assert end.outcome.kind is OutcomeKind.CANCELLED


def call(command: str) -> ToolCall:
    tool = next(tool for tool in builtin_tools() if tool.name == "execute_command")
    return ToolCall("t1", "execute_command", {"command": command}, tool)


async def test_the_gate_says_who_said_no():
    permissions = Permissions(mode="default", audit=False)
    permissions.add_session_rule("execute_command(touch *)", "deny")
    gate = permission_gate(permissions, None)
    assert (await gate(call("touch x"))).denied_as is OutcomeKind.DENIED_BY_RULE
    assert (await gate(call("rm -rf /"))).denied_as is OutcomeKind.REFUSED_BY_FLOOR
    assert (await gate(call("make build"))).denied_as is OutcomeKind.NO_ONE_TO_ASK


def test_a_fan_out_call_fails_when_any_host_did_not_succeed_and_says_how_each_ended():
    outcomes = [
        Outcome.of("web1", MachineResult("exit code: 0", exit_code=0)),
        Outcome.of("web2", MachineResult("exit code: 3", exit_code=3)),
        Outcome.of("web3", MachineResult("error: timed out", is_error=True, timed_out_ms=100)),
        Outcome("db1", "denied by rule x", kind=OutcomeKind.DENIED_BY_RULE),
        Outcome.failed("db2", "cannot reach db2 over ssh", unreachable=True),
    ]
    assert [outcome.state for outcome in outcomes] == ["done", "failed", "timed out", "denied", "offline"]
    whole = call_outcome(outcomes)
    assert whole.kind is OutcomeKind.FAILED
    assert whole.reason == "4 of 5 hosts did not succeed: 1 exit 3, 1 timed out, 1 denied, 1 offline"
    assert call_outcome(outcomes[:1]) == OK


def test_a_remote_agents_outcome_is_read_checked_and_inert():
    event = {"type": "tool_end", "name": "execute_command", "duration_s": 0.5, "is_error": False}
    assert describe_nested("tool_end", {**event, "outcome": {"kind": "failed", "exit_code": 2}}) == (
        "✗ execute_command exit 2 0.5 s"
    )
    hostile = {"kind": "ok\x1b[2J", "exit_code": "1"}
    assert nested_outcome({**event, "outcome": hostile}) == OK  # not a kind: by is_error
    denied = nested_outcome({**event, "outcome": {"kind": "denied", "reason": "no\x1b[31m way", "exit_code": True}})
    assert denied.kind is OutcomeKind.DENIED and "\x1b" not in denied.reason and denied.exit_code is None


def test_a_denied_writes_diff_is_not_shown_as_applied():
    record = ToolRecord("t1", "write_file", {"path": "a.txt"}, diff="--- a.txt\n+++ a.txt\n@@ -0,0 +1 @@\n+new\n")
    assert record.applied_diff is not None and record.diff_summary == "+1 -0"  # before it is decided
    record.finish("The user denied this tool call; it was not run.", ToolOutcome(OutcomeKind.DENIED), 0.0)
    assert record.applied_diff is None and record.diff_summary == ""
    assert record.shown_output.startswith("[not applied: the call denied by you;")
    assert record.glyph == "⊘" and record.outcome_word == "denied"
