"""Only a person lets a call out of the sandbox, or answers what the floor leaves to a person.

Tried as a hostile library caller would: an approval function that says yes to everything, in
every spelling of yes; `approval="auto"`; a rule that allows every command; `--yes`. None of them
lets a refused command run outside the sandbox, or runs a call the floor left to a person. Every
command here only touches files under the test's temporary directory.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from fake_anthropic import text_reply, tool_reply

from cmdop_tui.agent.approval import Approval, ToolCall
from cmdop_tui.config.settings import RunOptions, Settings
from cmdop_tui.headless import EXIT_NO_ONE_TO_ASK, HeadlessOptions, run_headless
from cmdop_tui.machines.machine import SandboxRefusal
from cmdop_tui.machines.sandbox import bubblewrap
from cmdop_tui.permissions import Decision, Permissions
from cmdop_tui.permissions.store import audit_path
from cmdop_tui.session.gate import NO_ESCALATION, permission_gate
from cmdop_tui.session.operator import Operator
from cmdop_tui.tools.outcome import OutcomeKind
from cmdop_tui.tools.registry import builtin_tools

needs_bwrap = pytest.mark.skipif(bubblewrap() is None, reason="bubblewrap cannot run here")

FLOOR_REASON = "the floor cannot tell what `eval` runs here, and it could reach ~/.bashrc"
UNREADABLE = "eval"  # a command with this word is one the floor leaves to a person (see person_only)
EXECUTE = next(tool for tool in builtin_tools() if tool.name == "execute_command")


@pytest.fixture
def person_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """The floor leaves any command that says `eval` to a person (as it will for what it cannot
    read); every other call is decided as usual."""
    decide = Permissions.decide

    def deciding(self: Permissions, tool: str, args: Any, **kwargs: Any) -> Decision:
        command = args.get("command") if isinstance(args, dict) else None
        if isinstance(command, str) and UNREADABLE in command:
            return Decision("ask", FLOOR_REASON, person_only=True)
        return decide(self, tool, args, **kwargs)

    monkeypatch.setattr(Permissions, "decide", deciding)


def command_call(command: str, **fields: Any) -> ToolCall:
    return ToolCall("call-1", "execute_command", {"command": command}, EXECUTE, **fields)


def tool_results(fake_api: Any) -> list[dict[str, Any]]:
    """Every tool result the model was sent, in order."""
    last = fake_api.requests[-1].body["messages"]
    return [
        block
        for message in last
        if message["role"] == "user" and isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]


# --- the gate ------------------------------------------------------------------------------------


def gate_for(mode: str, ask: Callable[[ToolCall], Any] | None, *rules: str):
    permissions = Permissions(mode=mode, audit=False)
    for rule in rules:
        permissions.add_session_rule(rule)
    return permission_gate(permissions, ask)


@pytest.mark.parametrize(("mode", "rules"), [("auto", ()), ("default", ("execute_command(*)",)), ("auto", ("*",))])
async def test_with_no_one_to_ask_what_the_floor_leaves_to_a_person_is_denied(person_only, mode, rules):
    approval = await gate_for(mode, None, *rules)(command_call("eval $(cat cmd)"))
    assert not approval.allowed
    assert FLOOR_REASON in approval.reason and "a person must decide" in approval.reason
    assert (await gate_for(mode, None, *rules)(command_call("echo fine"))).allowed  # only those


async def test_the_person_is_asked_what_the_floor_leaves_to_them_even_in_auto_mode(person_only):
    asked: list[ToolCall] = []

    async def ask(call: ToolCall) -> Approval:
        asked.append(call)
        return Approval(False, "the user said no", by_person=True)

    approval = await gate_for("auto", ask, "execute_command(*)")(command_call("eval $(cat cmd)"))
    assert approval == Approval(False, "the user said no", by_person=True)
    (call,) = asked
    assert call.person_only == FLOOR_REASON and call.needs_person and call.escalation is None
    assert (await gate_for("auto", ask)(command_call("echo fine"))).allowed and len(asked) == 1


async def test_a_person_only_decision_that_says_allow_still_asks(monkeypatch):
    """However the floor spells it, person_only means a person decides (a deny still denies)."""
    for verdict in ("allow", "ask"):
        monkeypatch.setattr(Permissions, "decide", lambda *a, v=verdict, **k: Decision(v, "unsure", person_only=True))
        approval = await gate_for("auto", None)(command_call("anything"))
        assert not approval.allowed and "a person must decide" in approval.reason
    monkeypatch.setattr(Permissions, "decide", lambda *a, **k: Decision("deny", "no", floor=True, person_only=True))
    floor = OutcomeKind.REFUSED_BY_FLOOR
    assert await gate_for("auto", None)(command_call("anything")) == Approval(False, "no", denied_as=floor)


async def test_leaving_the_sandbox_is_never_answered_by_rules_or_auto_mode():
    refusal = SandboxRefusal("write", ("/etc/hosts",), "only /work is writable here")
    for mode, rules in (("auto", ()), ("default", ("execute_command(*)",)), ("auto", ("*",))):
        approval = await gate_for(mode, None, *rules)(command_call("touch /etc/hosts", escalation=refusal))
        assert approval == Approval(False, NO_ESCALATION, denied_as=OutcomeKind.NO_ONE_TO_ASK)


async def test_the_floor_refuses_outside_the_sandbox_without_asking(monkeypatch):
    asked: list[ToolCall] = []

    async def ask(call: ToolCall) -> Approval:
        asked.append(call)
        return Approval(True, by_person=True)

    monkeypatch.setattr(Permissions, "decide", lambda *a, **k: Decision("deny", "catastrophic", floor=True))
    refusal = SandboxRefusal("write", ("/",))
    assert await gate_for("auto", ask)(command_call("rm -rf /", escalation=refusal)) == Approval(
        False, "catastrophic", denied_as=OutcomeKind.REFUSED_BY_FLOOR
    )
    assert asked == []


# --- the library: Operator(approval=...) ---------------------------------------------------------


async def _async_yes(call: ToolCall) -> bool:
    return True


YES_IN_EVERY_SPELLING = [
    lambda call: True,
    lambda call: Approval(True),
    lambda call: Approval(True, "go ahead"),
    lambda call: 1,
    lambda call: "yes",
    _async_yes,
]


@pytest.mark.parametrize("yes", YES_IN_EVERY_SPELLING)
def test_an_approve_everything_function_does_not_answer_for_a_person(
    fake_api, anthropic_env, tmp_path, person_only, yes
):
    marker = tmp_path / "ran"
    fake_api.enqueue(tool_reply("execute_command", {"command": f"eval 'touch {marker}'"}), text_reply("not run"))
    seen: list[ToolCall] = []

    def approve(call: ToolCall) -> Any:
        seen.append(call)
        return yes(call)

    with Operator(cwd=tmp_path, record=False, approval=approve) as operator:
        assert operator.chat("go") == "not run"
    assert not marker.exists()
    assert [call.person_only for call in seen] == [FLOOR_REASON]  # it was told what kind of call it was
    (result,) = tool_results(fake_api)
    assert result["is_error"] and "Approval(True, by_person=True)" in result["content"]


def test_a_function_that_says_a_person_decided_answers(fake_api, anthropic_env, tmp_path, person_only):
    marker = tmp_path / "ran"
    fake_api.enqueue(tool_reply("execute_command", {"command": f"eval 'touch {marker}'"}), text_reply("ran"))

    def approve(call: ToolCall) -> Approval:
        return Approval(True, by_person=call.needs_person)

    settings = Settings(run=RunOptions(sandbox_mode="off"))  # what is asked here is the floor's, not the sandbox's
    with Operator(settings=settings, cwd=tmp_path, record=False, approval=approve) as operator:
        assert operator.chat("go") == "ran"
    assert marker.exists()


@pytest.mark.parametrize("mode", ["auto", "default", "strict"])
def test_no_mode_answers_what_the_floor_leaves_to_a_person(fake_api, anthropic_env, tmp_path, person_only, mode):
    marker = tmp_path / "ran"
    Permissions.load().add_rule("execute_command(*)")  # and a rule that allows every command
    fake_api.enqueue(tool_reply("execute_command", {"command": f"eval 'touch {marker}'"}), text_reply("not run"))
    with Operator(cwd=tmp_path, record=False, approval=mode) as operator:  # type: ignore[arg-type]
        operator.chat("go")
    assert not marker.exists()
    (result,) = tool_results(fake_api)
    assert "a person must decide" in result["content"] and FLOOR_REASON in result["content"]


@needs_bwrap
@pytest.mark.parametrize("yes", YES_IN_EVERY_SPELLING)
def test_an_approve_everything_function_does_not_let_a_command_out(fake_api, anthropic_env, tmp_path, yes):
    work, outside = tmp_path / "work", tmp_path / "outside"
    work.mkdir()
    outside.mkdir()
    fake_api.enqueue(tool_reply("execute_command", {"command": f"touch {outside}/made"}), text_reply("held"))
    seen: list[ToolCall] = []

    def approve(call: ToolCall) -> Any:
        seen.append(call)
        return yes(call)

    settings = Settings(run=RunOptions(sandbox_mode="strict"))
    with Operator(settings=settings, cwd=work, record=False, approval=approve) as operator:
        assert operator.chat("make it") == "held"
    assert not (outside / "made").exists()
    first, second = seen  # once to run it, once to leave the sandbox
    assert first.escalation is None and second.escalation is not None and second.needs_person
    assert second.escalation.action and f"{outside}/made" in second.escalation.paths  # the sandbox's word
    (result,) = tool_results(fake_api)
    assert "did not allow it outside the sandbox" in result["content"] and "by_person=True" in result["content"]


@needs_bwrap
def test_a_command_leaves_the_sandbox_when_the_function_says_a_person_decided(fake_api, anthropic_env, tmp_path):
    work, outside = tmp_path / "work", tmp_path / "outside"
    work.mkdir()
    outside.mkdir()
    fake_api.enqueue(tool_reply("execute_command", {"command": f"touch {outside}/made"}), text_reply("made"))
    settings = Settings(run=RunOptions(sandbox_mode="strict"))
    approve = lambda call: Approval(True, by_person=call.escalation is not None)  # noqa: E731
    with Operator(settings=settings, cwd=work, record=False, approval=approve) as operator:
        assert operator.chat("make it") == "made"
    assert (outside / "made").exists()


@needs_bwrap
def test_auto_and_rules_never_let_a_command_out(fake_api, anthropic_env, tmp_path):
    work, outside = tmp_path / "work", tmp_path / "outside"
    work.mkdir()
    outside.mkdir()
    Permissions.load().add_rule("execute_command(*)")
    settings = Settings(run=RunOptions(sandbox_mode="strict"))
    for approval in ("auto", "default"):
        fake_api.enqueue(tool_reply("execute_command", {"command": f"touch {outside}/made"}), text_reply("held"))
        with Operator(settings=settings, cwd=work, record=False, approval=approval) as operator:  # type: ignore[arg-type]
            assert operator.chat("make it") == "held"
        assert not (outside / "made").exists()
        (result,) = tool_results(fake_api)
        assert "only a person can allow it outside the sandbox" in result["content"]


# --- headless: --yes, nobody at a terminal -------------------------------------------------------


async def test_yes_does_not_answer_what_the_floor_leaves_to_a_person(
    fake_api, anthropic_env, tmp_path, person_only, monkeypatch, capsys
):
    marker = tmp_path / "ran"
    monkeypatch.chdir(tmp_path)
    fake_api.enqueue(tool_reply("execute_command", {"command": f"eval 'touch {marker}'"}), text_reply("not run"))
    settings = Settings(run=RunOptions(auto_approve=True))
    code = await run_headless(settings, HeadlessOptions("go", "stream-json"))
    assert code == EXIT_NO_ONE_TO_ASK and not marker.exists()
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    (end,) = [event for event in events if event["type"] == "tool_end"]
    assert end["is_error"] and "a person must decide" in end["output"]
    assert end["outcome"]["kind"] == "no_one_to_ask" and "a person must decide" in end["outcome"]["reason"]


def test_the_audit_log_says_a_person_was_needed(fake_api, anthropic_env, tmp_path, person_only):
    fake_api.enqueue(tool_reply("execute_command", {"command": "eval 'true'"}), text_reply("not run"))
    with Operator(cwd=tmp_path, record=False, approval="auto") as operator:
        operator.chat("go")
    (line,) = [json.loads(line) for line in audit_path().read_text().splitlines() if "eval" in line]
    assert line["outcome"] == "denied" and line["reason"] == FLOOR_REASON and line["verdict"] == "ask"
