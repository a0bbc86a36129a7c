"""The "Allow always" (and "This session") answer on a call over several machines (run_on_machines): the rule
is scoped to the machines the call named, its note names them, and it allows that call (or one
over fewer of them) and asks again for one that reaches another machine. Unit tests of the
permissions, then the app driven with Pilot over real sshd servers (tests/sshd.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fake_anthropic import text_reply, tool_reply

from cmdop_tui.permissions import Permissions, Rule, derive_rule
from cmdop_tui.tools.fanout import RUN_ON_MACHINES
from cmdop_tui.tools.placement import Placement, place


def call(*machines: str, command: str = "uptime -p") -> dict:
    return {"command": command, "machines": list(machines)}


def decide(perms: Permissions, args: dict, machine: str | None = None) -> str:
    where = place(args, None) if machine is None else Placement.one(machine)  # as the loop places it
    return perms.decide("run_on_machines", args, placement=where, spec=RUN_ON_MACHINES).verdict


def test_the_rule_is_scoped_to_the_machines_and_says_so():
    rule = derive_rule("run_on_machines", call("web1", "web2", "web1"), "3 machines", spec=RUN_ON_MACHINES)
    assert rule.text == "{web1,web2}:run_on_machines(uptime *)" and rule.note == "2 machines: web1, web2"
    one = derive_rule("run_on_machines", call("db1", command="rm -f /tmp/x"), "1 machines", spec=RUN_ON_MACHINES)
    assert one.text == "db1:run_on_machines(rm -f /tmp/x)" and one.note == "1 machine: db1"
    tagged = derive_rule("run_on_machines", call("web1", "tag:db"), "2 machines", spec=RUN_ON_MACHINES)
    assert tagged.text == "{web1,tag\\:db}:run_on_machines(uptime *)"
    assert tagged.note == "1 machine: web1; the machines tagged db"
    assert Rule.parse(tagged.text).machine == "{web1,tag\\:db}"  # it reads back as written
    anywhere = derive_rule("run_on_machines", call("a", "b"), "2 machines", any_machine=True, spec=RUN_ON_MACHINES)
    assert anywhere.machine is None


def test_it_allows_those_machines_only(tmp_path: Path):
    perms = Permissions(mode="default", path=tmp_path / "permissions.toml", audit=False)
    assert decide(perms, call("web1", "web2")) == "ask"
    saved = perms.allow_always("run_on_machines", call("web1", "web2"), "2 machines", spec=RUN_ON_MACHINES)
    reread = Permissions.load(tmp_path / "permissions.toml", audit=False)
    assert [(r.text, r.note) for r in reread.rules] == [(saved.text, "2 machines: web1, web2")]
    assert decide(reread, call("web2", "web1")) == "allow"
    assert decide(reread, call("web2")) == "allow"
    assert decide(reread, call("web1", "web3")) == "ask"  # web3 was never approved
    assert decide(reread, call("web1", "web2", command="reboot")) == "ask"  # another command
    assert reread.decide("execute_command", {"command": "uptime"}, machine="web1").verdict == "ask"


def test_a_tag_is_allowed_as_the_tag_it_was():
    perms = Permissions(mode="default", audit=False)
    perms.allow_always("run_on_machines", call("tag:web"), "1 machines", session=True, spec=RUN_ON_MACHINES)
    assert decide(perms, call("tag:web")) == "allow"
    assert decide(perms, call("tag:db")) == "ask"
    assert decide(perms, call("web1")) == "ask"  # a machine is not its tag


def test_a_host_scoped_deny_skips_that_host_and_an_unscoped_one_denies_the_call():
    perms = Permissions(mode="default", audit=False)
    perms.add_session_rule("{web1,web2}:run_on_machines(uptime *)")
    perms.add_session_rule("web2:run_on_machines(*)", "deny")
    # web2 is skipped when the call runs (host_rules); web1 is allowed: the call runs there
    assert decide(perms, call("web1", "web2")) == "allow"
    assert decide(perms, call("web2")) == "deny"  # nothing left to run
    perms.add_session_rule("tag\\:db:run_on_machines(*)", "deny")
    assert decide(perms, call("web1", "tag:db")) == "deny"  # a tag is not checked host by host
    perms.add_session_rule("run_on_machines(uptime *)", "deny")
    assert decide(perms, call("web1")) == "deny"


def test_the_floor_refuses_it_on_every_machine():
    perms = Permissions(mode="auto", audit=False)
    perms.add_session_rule("{web1,web2}:run_on_machines(*)")
    decision = perms.decide(
        "run_on_machines", call("web1", "web2", command="rm -rf /"), placement=Placement.fanout(["web1", "web2"])
    )
    assert decision.verdict == "deny" and decision.floor


def test_one_machine_of_the_call_is_judged_alone():
    """host_rules (session/gate.py) asks about each resolved host: the rule's scope is matched
    against that host, not against the call's selectors."""
    perms = Permissions(mode="default", audit=False)
    perms.add_session_rule("web1:run_on_machines(*)", "deny")
    assert decide(perms, call("tag:web"), machine="web1") == "deny"
    assert decide(perms, call("tag:web"), machine="web2") == "ask"


def test_a_machine_name_is_one_name_in_the_saved_rule(tmp_path: Path):
    """Names come from the model: a `,` must not split one into two machines, and `(` `)` `{`
    `}` quotes or spaces must neither widen the rule nor leave a file the next start cannot read."""
    perms = Permissions(mode="default", path=tmp_path / "permissions.toml", audit=False)
    comma = perms.allow_always("run_on_machines", call("x", "web1,db1"), "2 machines", spec=RUN_ON_MACHINES)
    assert comma.text == "{x,web1\\,db1}:run_on_machines(uptime *)"
    odd = ["a(b", "c)d", "e{f}", "g h", "i'j", 'k"l', "!m"]
    perms.allow_always("run_on_machines", call(*odd, "web2"), "8 machines", spec=RUN_ON_MACHINES)
    reread = Permissions.load(tmp_path / "permissions.toml", audit=False)  # the next start reads it
    assert [r.text for r in reread.rules] == [r.text for r in perms.rules]
    assert decide(reread, call("x", "web1,db1")) == "allow"
    for alone in ("web1", "db1", "x,web1"):
        assert decide(reread, call(alone)) == "ask", alone
    assert all(decide(reread, call(name)) == "allow" for name in [*odd, "web2"])
    assert decide(reread, call("a", "web2")) == "ask" and decide(reread, call("m")) == "ask"


def test_a_rule_that_would_not_read_back_is_not_saved(tmp_path: Path):
    from cmdop_tui.permissions import PermissionsError

    path = tmp_path / "permissions.toml"
    perms = Permissions(mode="default", path=path, audit=False)
    with pytest.raises(PermissionsError, match="would not read back as written"):
        perms.allow_always("my tool", {"command": "x"}, "web1")  # a tool name no rule can hold
    assert not path.exists() and not perms.rules and not perms.session_rules


# --- a call judged on the machines its selectors choose -----------------------------------------


def tagged_fleet(*hosts: tuple[str, str, tuple[str, ...]], config: Path | None = None):
    from cmdop_tui.machines.fleet import Fleet
    from cmdop_tui.machines.inventory import Inventory
    from cmdop_tui.machines.spec import MachineSpec
    from cmdop_tui.machines.ssh import SshOptions

    specs = [MachineSpec(name, host, tags=tags) for name, host, tags in hosts]
    return Fleet(Inventory.load(specs, config), SshOptions(config_file=config))


def db_rules() -> Permissions:
    """The global rules: ask on db1 whatever the command; echo anywhere is fine."""
    rules = [Rule.parse("db1:run_on_machines(*)", "ask"), Rule.parse("run_on_machines(echo *)", "allow")]
    return Permissions(rules, mode="default", audit=False)


def tool_call(machines: list[str], fleet, call_id: str = "toolu_1"):
    """The call as the loop builds it: placed on the machines `fleet` resolves its selectors to."""
    from cmdop_tui.agent.approval import ToolCall

    args = call(*machines, command="echo ran")
    return ToolCall(call_id, "run_on_machines", args, RUN_ON_MACHINES, place(args, fleet))


async def test_a_rule_that_asks_on_a_machine_is_not_passed_by_its_tag():
    from cmdop_tui.agent.approval import Approval
    from cmdop_tui.session.gate import permission_gate, selection

    fleet = tagged_fleet(("db1", "10.0.0.1", ("db",)), ("db2", "10.0.0.2", ("db",)), ("web1", "10.0.0.3", ()))
    perms, asked = db_rules(), []

    async def ask(tool_call) -> Approval:
        asked.append(tool_call.input["machines"])
        return Approval(True)

    gate = permission_gate(perms, ask, fleet)
    assert selection(tool_call(["tag:db", "web1"], fleet), fleet) == {
        "db1": ["tag:db"],
        "db2": ["tag:db"],
        "web1": ["web1"],
    }
    assert (await gate(tool_call(["db1", "db2"], fleet))).allowed
    assert (await gate(tool_call(["tag:db"], fleet))).allowed
    assert asked == [["db1", "db2"], ["tag:db"]]  # asked both times: db1 is in either
    assert (await gate(tool_call(["db2", "web1"], fleet))).allowed and len(asked) == 2  # no db1: allowed
    nobody = permission_gate(perms, None, fleet)
    assert not (await nobody(tool_call(["tag:db"], fleet))).allowed


async def test_always_on_a_tag_of_one_machine_is_the_rule_its_next_call_meets():
    """The loop labels a call whose tag chooses one machine by that machine (`db1`): the rule
    saved (`tag\\:solo:...`) must allow that same call next time, with or without the fleet."""
    from cmdop_tui.session.gate import permission_gate

    fleet = tagged_fleet(("db1", "10.0.0.1", ("solo",)), ("db2", "10.0.0.2", ()))
    perms = Permissions(mode="default", audit=False)
    first = tool_call(["tag:solo"], fleet)
    assert not (await permission_gate(perms, None, fleet)(first)).allowed  # asks: nobody here
    rule = perms.allow_always(first.name, first.input, placement=first.placement, session=True, spec=RUN_ON_MACHINES)
    assert rule.text == "tag\\:solo:run_on_machines(echo *)"
    for gate in (permission_gate(perms, None, fleet), permission_gate(perms, None)):
        assert (await gate(tool_call(["tag:solo"], fleet, "toolu_2"))).allowed
    # The rule says the machines tagged solo: given the fleet, db1 named alone is one of them;
    # without it nothing says db1 is tagged solo, and it is not approved.
    assert (await permission_gate(perms, None, fleet)(tool_call(["db1"], fleet, "toolu_3"))).allowed
    assert not (await permission_gate(perms, None)(tool_call(["db1"], fleet, "toolu_4"))).allowed


async def test_a_tag_scoped_deny_is_not_skipped_host_by_host():
    from cmdop_tui.session.gate import permission_gate

    fleet = tagged_fleet(("db1", "10.0.0.1", ("db",)), ("web1", "10.0.0.3", ()))
    perms = Permissions([Rule.parse("run_on_machines(echo *)")], mode="default", audit=False)
    perms.add_session_rule("tag\\:db:run_on_machines(*)", "deny")
    approval = await permission_gate(perms, None, fleet)(tool_call(["tag:db", "web1"], fleet))
    assert not approval.allowed and "tag\\:db:run_on_machines(*)" in approval.reason


def one_call(tool: str, args: dict, machine: str, call_id: str = "toolu_1"):
    from cmdop_tui.agent.approval import ToolCall

    return ToolCall(call_id, tool, args, None, Placement.one(machine))


def db_fleet():
    """db1 tagged db and in the group ops (through a nested group), web1 neither."""
    from cmdop_tui.machines.fleet import Fleet
    from cmdop_tui.machines.inventory import Inventory
    from cmdop_tui.machines.spec import MachineSpec
    from cmdop_tui.machines.ssh import SshOptions

    specs = [MachineSpec("db1", "10.0.0.1", tags=("db",)), MachineSpec("web1", "10.0.0.3")]
    groups = {"ops": ["core", "nosuch"], "core": ["db1"]}  # a stray member hides no one's rules
    return Fleet(Inventory.load(specs, None, groups), SshOptions())


@pytest.mark.parametrize("mode", ["default", "auto"])
async def test_a_tag_scoped_deny_holds_when_the_call_names_the_machine(mode):
    from cmdop_tui.session.gate import permission_gate

    perms = Permissions([Rule.parse("run_on_machines(echo *)")], mode=mode, audit=False)
    perms.add_session_rule("tag\\:db:run_on_machines(*)", "deny")
    fleet = db_fleet()
    gate = permission_gate(perms, None, fleet)
    for machines in (["tag:db"], ["db1"], ["db1", "web1"]):
        approval = await gate(tool_call(machines, fleet))
        assert not approval.allowed and "tag\\:db:run_on_machines(*)" in approval.reason, machines
    assert (await gate(tool_call(["web1"], fleet))).allowed  # not tagged db


@pytest.mark.parametrize("scope", ["tag\\:db", "ops", "core"])
async def test_a_tag_or_group_scoped_rule_applies_to_a_one_machine_tool_there(scope):
    from cmdop_tui.session.gate import permission_gate

    perms = Permissions([Rule.parse("execute_command(echo *)")], mode="auto", audit=False)
    perms.add_session_rule(f"{scope}:execute_command(*)", "deny")
    gate = permission_gate(perms, None, db_fleet())
    approval = await gate(one_call("execute_command", {"command": "echo hi", "machine": "db1"}, "db1"))
    assert not approval.allowed and scope in approval.reason
    assert (await gate(one_call("execute_command", {"command": "echo hi", "machine": "web1"}, "web1"))).allowed


async def test_a_tag_scoped_allow_covers_the_machine_by_its_name():
    from cmdop_tui.session.gate import permission_gate

    perms = Permissions(mode="default", audit=False)
    perms.add_session_rule("tag\\:db:execute_command(uptime *)")
    gate = permission_gate(perms, None, db_fleet())
    assert (await gate(one_call("execute_command", {"command": "uptime -p", "machine": "db1"}, "db1"))).allowed
    denied = await gate(one_call("execute_command", {"command": "uptime -p", "machine": "web1"}, "web1"))
    assert not denied.allowed  # asks there, and nobody can be asked


def test_host_rules_apply_a_tag_scoped_execute_command_rule_to_the_machine_by_name():
    from cmdop_tui.session.gate import host_rules

    perms = Permissions([Rule.parse("run_on_machines(*)")], mode="default", audit=False)
    perms.add_session_rule("tag\\:db:execute_command(systemctl *)", "deny")
    call_ = one_call("run_on_machines", call("db1", "web1", command="systemctl restart x"), "2 machines")
    denied = host_rules(perms, db_fleet())
    assert denied(call_, "db1") == "denied by rule tag\\:db:execute_command(systemctl *)"
    assert denied(call_, "web1") is None


async def test_through_the_loop_a_host_whose_rule_asks_is_not_run_unasked(fake_api, lab, tmp_path):
    """The loop places the call over the tag on db1 and db2, so the gate asks (db1's rule asks)
    with or without its own fleet: a gate without one can no longer allow it by the rule over
    its selector. Once approved the call runs on both."""
    from agent_helpers import Recorder, make_runner

    from cmdop_tui.agent.approval import Approval
    from cmdop_tui.session.gate import host_rules, permission_gate

    fleet = tagged_fleet(("db1", "alpha", ("db",)), ("db2", "bravo", ("db",)), config=lab.config)
    asked: list[str] = []

    async def ask(tool_call) -> Approval:
        asked.append(tool_call.id)
        return Approval(True)

    async def run(wired: bool) -> str:
        perms = db_rules()
        fake_api.enqueue(tool_reply("run_on_machines", call("tag:db", command="echo ran")), text_reply("done"))
        runner = make_runner(fake_api, cwd=tmp_path, approve=permission_gate(perms, ask, fleet if wired else None))
        runner.machines, runner.host_rules = fleet, host_rules(perms, fleet if wired else None)
        runner.tools = type(runner.tools)([*runner.tools, RUN_ON_MACHINES])
        await runner.run("echo on the db machines", Recorder())
        return fake_api.requests[-1].body["messages"][-1]["content"][0]["content"]

    try:
        unwired = await run(wired=False)
        assert len(asked) == 1 and "2 hosts (db1, db2): exit 0" in unwired and "ran" in unwired
        wired = await run(wired=True)
        assert len(asked) == 2 and "2 hosts (db1, db2): exit 0" in wired
    finally:
        await fleet.close()


# --- the app ------------------------------------------------------------------------------------


@pytest.fixture
def lab(ssh_hosts):
    return ssh_hosts(2)


async def test_always_in_the_app_saves_a_rule_for_those_machines(fake_api, lab, isolated_home):
    from textual.widgets import Static
    from tui_helpers import finish_turn, make_app, notices, showing, submit, wait_until

    from cmdop_tui.config.settings import Settings
    from cmdop_tui.permissions import rules_path
    from cmdop_tui.tui.screens.approval import ApprovalScreen

    offline = lab.offline_alias
    fake_api.enqueue(
        tool_reply("run_on_machines", call("alpha", "bravo", command="echo hi")),
        text_reply("first"),
        tool_reply("run_on_machines", call("bravo", "alpha", command="echo again")),
        text_reply("second"),
        tool_reply("run_on_machines", call("alpha", offline, command="echo hi")),
        text_reply("third"),
    )
    app = make_app(fake_api, settings=Settings(ssh_config=lab.config, approval_timeout_s=20))
    async with app.run_test(size=(140, 40)) as pilot:
        await submit(pilot, "say hi on both")
        await wait_until(pilot, lambda: showing(app, ApprovalScreen), what="the approval modal")
        scope = str(app.screen.query_one("#approval-scope", Static).render())
        assert scope == "On 2 machines: alpha, bravo. This session and Always allow it on these only."
        await pilot.press("p")
        await finish_turn(pilot)
        assert "Allowed from now on (saved): {alpha,bravo}:run_on_machines(echo *)" in notices(app)
        saved = rules_path().read_text()
        assert (
            'rule = "{alpha,bravo}:run_on_machines(echo *)"' in saved and 'note = "2 machines: alpha, bravo"' in saved
        )

        await submit(pilot, "again, other order")  # the same machines: not asked
        await finish_turn(pilot)
        second = fake_api.requests[3].body["messages"][-1]["content"][0]["content"]
        assert "2 hosts (alpha, bravo): exit 0" in second and "again" in second

        await submit(pilot, "now with the offline one")  # another machine: asked again
        await wait_until(pilot, lambda: showing(app, ApprovalScreen), what="the approval modal again")
        scope = str(app.screen.query_one("#approval-scope", Static).render())
        assert scope.startswith(f"On 2 machines: alpha, {offline}.")
        await pilot.press("n")
        await finish_turn(pilot)
        third = fake_api.requests[5].body["messages"][-1]["content"][0]
        assert third["is_error"] and "denied" in third["content"]


def test_ask_machines_is_scoped_by_its_hosts_not_by_the_label():
    from cmdop_tui.tools.ask import ASK_MACHINES

    args = {"hostnames": ["web1", "web2"], "prompt": "p"}
    rule = derive_rule("ask_machines", args, placement=place(args, None), spec=ASK_MACHINES)
    assert rule.text == "ask_machines({web1,web2})" and rule.note == "2 machines: web1, web2"
    perms = Permissions(mode="default", audit=False)
    perms.add_session_rule(rule)
    ask = {"prompt": "p", "hostnames": ["web2"]}
    assert perms.decide("ask_machines", ask, placement=place(ask, None), spec=ASK_MACHINES).verdict == "allow"
    ask["hostnames"] = ["web2", "db1"]
    assert perms.decide("ask_machines", ask, placement=place(ask, None), spec=ASK_MACHINES).verdict == "ask"


async def test_the_dialog_names_the_machines_of_ask_machines_too():
    from textual.app import App
    from textual.widgets import Static

    from cmdop_tui.tui.screens.approval import ApprovalScreen

    screen = ApprovalScreen("ask_machines", "2 machines", {"hostnames": ["web1", "db1"], "prompt": "p"})
    app: App[None] = App()
    async with app.run_test() as pilot:
        app.push_screen(screen)
        await pilot.pause()
        scope = str(screen.query_one("#approval-scope", Static).render())
    assert scope == "On 2 machines: web1, db1. This session and Always allow it on these only."
