"""Where a call runs as a value (tools/placement.py): judged by the machines it names, never by
its label. A machine called "3 machines" is one machine; a call over a tag is judged on each
machine the tag chooses."""

from __future__ import annotations

from cmdop_tui.machines.fleet import Fleet
from cmdop_tui.machines.inventory import Inventory
from cmdop_tui.machines.spec import MachineSpec
from cmdop_tui.machines.ssh import SshOptions
from cmdop_tui.permissions import Permissions, derive_rule
from cmdop_tui.tools.fanout import RUN_ON_MACHINES
from cmdop_tui.tools.placement import Placement, place

ODD = "3 machines"  # a machine whose name reads like a label


def fleet() -> Fleet:
    specs = [
        MachineSpec(ODD, "10.0.0.9"),
        MachineSpec("web1", "10.0.0.1", tags=("web",)),
        MachineSpec("web2", "10.0.0.2", tags=("web",)),
    ]
    return Fleet(Inventory.load(specs, None), SshOptions())


def test_the_constructors_and_the_label():
    one = Placement.one("web1")
    assert one.machines == ("web1",) and not one.fans_out and one.label == "web1" and one.single == "web1"
    many = Placement.fanout(["web1", "web2", "web1"], {"web1": ("tag:web",)}, named=["tag:web", "web2"])
    assert many.machines == ("web1", "web2") and many.fans_out and many.label == "2 machines"
    assert many.selectors == {"web1": ("tag:web",), "web2": ("web2",)} and many.named == ("tag:web", "web2")
    assert many.single is None and Placement.fanout(["db1"]).label == "db1"


def test_the_loop_places_a_call_once_with_tags_resolved():
    where = place({"command": "uptime", "machines": ["tag:web"]}, fleet())
    assert where.fans_out and where.machines == ("web1", "web2")
    assert where.selectors == {"web1": ("tag:web",), "web2": ("tag:web",)}
    assert place({"command": "ls", "machine": ODD}, fleet()) == Placement.one(ODD)
    assert place({"command": "x", "machines": ["zulu"]}, fleet()).machines == ("zulu",)  # unknown: as given
    assert place({"command": "ls"}, None) == Placement.one("local")


def test_a_machine_called_3_machines_is_judged_by_its_own_rules():
    perms = Permissions(mode="default", audit=False)
    perms.add_session_rule("web1:execute_command(rm *)")
    perms.add_session_rule("3\\ machines:execute_command(rm *)", "deny")
    args = {"command": "rm -f /tmp/x", "machine": ODD}
    where = place(args, fleet())
    assert not where.fans_out and where.label == ODD
    assert perms.decide("execute_command", args, placement=where).verdict == "deny"
    assert perms.decide("execute_command", args, machine=ODD).verdict == "deny"
    # named as the only machine of a fan-out, it is still that one machine
    fan = {"command": "rm -f /tmp/x", "machines": [ODD]}
    assert place(fan, fleet()).machines == (ODD,)
    assert perms.decide("run_on_machines", fan, placement=place(fan, fleet())).verdict != "allow"


def test_a_label_given_as_the_machine_is_one_machine_not_a_fan_out():
    perms = Permissions(mode="default", audit=False)
    perms.add_session_rule("{web1,web2}:run_on_machines(uptime *)")
    args = {"command": "uptime", "machines": ["web1", "web2"]}
    assert perms.decide("run_on_machines", args, placement=place(args, None), spec=RUN_ON_MACHINES).verdict == "allow"
    # "2 machines" is no machine these rules name: it is not read as the machines of the call
    assert perms.decide("run_on_machines", args, machine="2 machines", spec=RUN_ON_MACHINES).verdict == "ask"
    rule = derive_rule("execute_command", {"command": "ls -l"}, placement=Placement.one(ODD))
    assert rule.machine == ODD


def test_a_fan_out_over_a_tag_is_judged_on_every_machine_it_chooses():
    perms = Permissions(mode="default", audit=False)
    perms.add_session_rule("tag\\:web:run_on_machines(uptime *)")
    perms.add_session_rule("web2:run_on_machines(uptime *)", "ask")
    args = {"command": "uptime", "machines": ["tag:web"]}
    where = place(args, fleet())
    assert perms.decide("run_on_machines", args, placement=where, spec=RUN_ON_MACHINES).verdict == "ask"
    perms.add_session_rule("web1:run_on_machines(*)", "deny")  # web1 is skipped when it runs; web2 asks
    assert perms.decide("run_on_machines", args, placement=where, spec=RUN_ON_MACHINES).verdict == "ask"
    perms.add_session_rule("web2:run_on_machines(*)", "deny")  # nothing left to run
    assert perms.decide("run_on_machines", args, placement=where, spec=RUN_ON_MACHINES).verdict == "deny"


def test_ask_machines_is_denied_by_a_deny_on_any_of_its_hosts():
    from cmdop_tui.tools.ask import ASK_MACHINES

    perms = Permissions(mode="default", audit=False)
    perms.add_session_rule("ask_machines(*)")
    perms.add_session_rule("web2:ask_machines(*)", "deny")  # ask_machines checks no host itself
    args = {"hostnames": ["web1", "web2"], "prompt": "p"}
    decision = perms.decide("ask_machines", args, placement=place(args, fleet()), spec=ASK_MACHINES)
    assert decision.verdict == "deny"


def test_a_host_whose_rule_asks_is_left_out_when_no_person_approved_the_call():
    from cmdop_tui.agent.approval import ToolCall
    from cmdop_tui.session.gate import host_rules

    perms = Permissions(mode="default", audit=False)
    perms.add_session_rule("web1:run_on_machines(*)", "ask")
    args = {"command": "echo ran", "machines": ["tag:web"]}
    call = ToolCall("t1", "run_on_machines", args, RUN_ON_MACHINES, place(args, fleet()))
    denied = host_rules(perms, fleet())
    assert "asks for approval there and no one was asked" in (denied(call, "web1") or "")
    assert denied(call, "web2") is None
