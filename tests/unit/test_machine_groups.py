"""Tags, groups and Ansible inventories: parsing, resolving, and the settings that name them."""

from __future__ import annotations

from pathlib import Path

import pytest

from cmdop_tui.config.settings import SettingsError, settings_from
from cmdop_tui.machines.ansible import read_ansible_inventory
from cmdop_tui.machines.ansible_hosts import expand
from cmdop_tui.machines.inventory import Inventory
from cmdop_tui.machines.spec import MachineError, MachineSpec

INI = """\
# a comment
mail.example.com

[webservers]
web[01:03].example.com ansible_user=deploy
front ansible_host=10.0.0.9 ansible_port=2222 ansible_user="ops team"

[dbservers]
db1 ansible_host=10.0.1.1
db2:2200

[eu:children]
webservers
dbservers

[prod:children]
eu

[dbservers:vars]
ansible_user = postgres

[all:vars]
ansible_port=22
"""

YAML = """\
all:
  hosts:
    mail.example.com:
  vars:
    ansible_user: root
  children:
    webservers:
      hosts:
        web[1:2]:
          ansible_host: 10.0.0.1
        front:
          ansible_host: 10.0.0.9
          ansible_port: 2222
          ansible_user: ops
    prod:
      children:
        webservers:
        dbservers:
          hosts:
            db1:
          vars:
            ansible_user: postgres
"""


def by_name(specs: tuple[MachineSpec, ...]) -> dict[str, MachineSpec]:
    return {spec.name: spec for spec in specs}


def read_text(folder: Path, name: str, text: str) -> tuple[MachineSpec, ...]:
    """The machines of an inventory file holding `text` (read without Ansible)."""
    path = folder / name
    path.write_text(text)
    found = read_ansible_inventory(path, None)
    assert found.notices == () and found.reader == "built-in"
    return found.machines


def test_ranges_expand_with_their_padding():
    assert expand("web[01:03].x") == ["web01.x", "web02.x", "web03.x"]
    assert expand("n[8:10]") == ["n8", "n9", "n10"]
    assert expand("plain") == ["plain"]


def test_an_ini_inventory_gives_hosts_their_address_user_port_and_groups_as_tags(tmp_path):
    machines = by_name(read_text(tmp_path, "hosts", INI))
    assert list(machines) == [
        "mail.example.com", "web01.example.com", "web02.example.com", "web03.example.com", "front", "db1", "db2",
    ]  # fmt: skip
    assert machines["mail.example.com"] == MachineSpec(
        "mail.example.com", "mail.example.com", port=22, source="ansible"
    )
    web = machines["web02.example.com"]
    assert (web.host, web.user, web.port) == ("web02.example.com", "deploy", 22)
    assert set(web.tags) == {"webservers", "eu", "prod"}  # nested children carry their parents' tags
    front = machines["front"]
    assert (front.host, front.user, front.port) == ("10.0.0.9", "ops team", 2222)
    db1, db2 = machines["db1"], machines["db2"]
    assert (db1.host, db1.user, db1.port) == ("10.0.1.1", "postgres", 22)  # the group's user
    assert (db2.user, db2.port) == ("postgres", 2200)
    assert set(db1.tags) == {"dbservers", "eu", "prod"}


def test_a_yaml_inventory_reads_the_same_way(tmp_path):
    machines = by_name(read_text(tmp_path, "hosts.yml", YAML))
    assert list(machines) == ["mail.example.com", "web1", "web2", "front", "db1"]
    assert machines["mail.example.com"].user == "root" and machines["mail.example.com"].tags == ()
    assert machines["web1"].host == "10.0.0.1" and machines["web1"].user == "root"
    assert set(machines["web1"].tags) == {"webservers", "prod"}
    front = machines["front"]
    assert (front.host, front.user, front.port) == ("10.0.0.9", "ops", 2222)
    assert machines["db1"].user == "postgres" and set(machines["db1"].tags) == {"dbservers", "prod"}


def test_loading_a_file_picks_the_format_and_says_what_is_wrong(tmp_path):
    assert all(spec.source == "ansible" for spec in read_text(tmp_path, "hosts", INI))
    assert [spec.name for spec in read_text(tmp_path, "hosts.yml", YAML)][:2] == ["mail.example.com", "web1"]
    assert read_ansible_inventory(tmp_path / "missing", None).notices == (
        f"the Ansible inventory {tmp_path / 'missing'} is not read: no such file or folder",
    )
    bad = tmp_path / "bad.yml"
    bad.write_text("all:\n  hosts:\n    h1:\n      ansible_port: many\n")
    assert read_ansible_inventory(bad, None).notices == (
        "Ansible host h1 is left out: ansible_port 'many' is not a port number",
    )


def inventory() -> Inventory:
    return Inventory(
        [
            MachineSpec("local", "here", source="local"),
            MachineSpec("web1", "10.0.0.1", tags=("web", "eu")),
            MachineSpec("web2", "10.0.0.2", tags=("web",)),
            MachineSpec("db1", "10.0.1.1", tags=("db",)),
            MachineSpec("cache", "10.0.2.1"),
        ],
        groups={"front": ["tag:web"], "everything": ["front", "tag:db", "cache"], "loop": ["loop"], "bad": ["zulu"]},
    )


def test_tags_and_groups_select_machines_in_inventory_order():
    machines = inventory()
    assert [m.name for m in machines.select(["tag:db", "tag:web"])] == ["web1", "web2", "db1"]
    assert [m.name for m in machines.select(["everything"])] == ["web1", "web2", "db1", "cache"]
    assert [m.name for m in machines.select(["cache", "web2", "cache"])] == ["web2", "cache"]
    with pytest.raises(MachineError, match="no machine is tagged 'nope'; tags: db, eu, web"):
        machines.select(["tag:nope"])
    with pytest.raises(MachineError, match="contains itself"):
        machines.select(["loop"])
    with pytest.raises(MachineError, match="unknown machine 'zulu'"):
        machines.select(["bad"])


def test_a_machine_argument_may_be_a_tag_or_group_that_names_one_machine():
    machines = inventory()
    assert machines.resolve("tag:eu").name == "web1"
    assert machines.resolve("tag:db").name == "db1"
    with pytest.raises(MachineError, match=r"'front' names 2 machines \(web1, web2\)"):
        machines.resolve("front")


def test_settings_read_groups_and_the_ansible_inventory(tmp_path):
    source = tmp_path / "config.toml"
    settings = settings_from(
        {"groups": {"web": ["web1", "tag:db"]}, "inventory": {"ansible": "inventory/hosts"}}, source=source
    )
    assert settings.groups == {"web": ("web1", "tag:db")}
    assert settings.ansible_inventory == tmp_path / "inventory" / "hosts"
    assert settings_from({"inventory": {"ansible": "/etc/ansible/hosts"}}).ansible_inventory == Path(
        "/etc/ansible/hosts"
    )
    with pytest.raises(SettingsError, match=r"\[groups\] 'web' must be a list"):
        settings_from({"groups": {"web": "web1"}})
    with pytest.raises(SettingsError, match=r"\[inventory\] has no setting 'chef'"):
        settings_from({"inventory": {"chef": "x"}})


def test_the_session_fleet_has_the_ansible_hosts_and_the_groups(tmp_path):
    from cmdop_tui.config.settings import Settings
    from cmdop_tui.session.assembly import build_fleet

    hosts = tmp_path / "hosts"
    hosts.write_text(INI)
    empty_ssh = tmp_path / "ssh_config"
    empty_ssh.write_text("")
    settings = Settings(ansible_inventory=hosts, groups={"db": ("tag:dbservers",)}, ssh_config=empty_ssh)
    fleet = build_fleet(settings)
    assert [m.name for m in fleet.inventory.select(["db"])] == ["db1", "db2"]
    assert fleet.inventory.resolve("front").host == "10.0.0.9"


def test_a_fan_out_is_placed_on_the_machines_its_selectors_name(fake_api):
    from agent_helpers import make_runner

    from cmdop_tui.agent.approval import ToolCall
    from cmdop_tui.machines.fleet import Fleet
    from cmdop_tui.machines.ssh import SshOptions

    runner = make_runner(fake_api)
    runner.machines = Fleet(inventory(), SshOptions())

    def label(*machines: str) -> str:
        return runner.placement(
            ToolCall("t1", "run_on_machines", {"command": "uptime", "machines": list(machines)}, None)
        ).label

    assert label("tag:web") == "2 machines" and label("front", "db1") == "3 machines"
    assert label("tag:db") == "db1"  # one machine: its name, not "1 machines"
    assert label("zulu") == "zulu"  # unknown: as given (the tool says what is wrong)


def test_a_host_ssh_would_read_as_an_option_is_refused_wherever_it_comes_from(tmp_path):
    option = "-oProxyCommand=true"
    with pytest.raises(MachineError, match="not a host name"):
        MachineSpec("web1", option)
    with pytest.raises(SettingsError, match=r"\[machines.web1\].*not a host name"):
        settings_from({"machines": {"web1": {"host": option}}}, tmp_path / "config.toml")
    hosts = tmp_path / "hosts"
    hosts.write_text(f"[web]\nweb1 ansible_host={option}\n")
    assert read_ansible_inventory(hosts, None).notices == (
        f"Ansible host web1 is left out: {option!r} is not a host name or address",
    )
    config = tmp_path / "ssh_config"
    config.write_text(f"Host {option} web2\n  HostName 10.0.0.2\n")
    from cmdop_tui.machines.inventory import ssh_config_hosts

    assert ssh_config_hosts(config) == ["web2"]


def test_an_odd_ssh_config_alias_is_skipped_and_the_inventory_still_loads(tmp_path, monkeypatch):
    # A zero-width space pasted from a web page after an alias: ssh could not use that alias,
    # and it must not keep the session from opening.
    config = tmp_path / "ssh_config"
    config.write_text("Host web1\u200b db1\n  HostName 10.0.0.1\nHost web2\n  HostName 10.0.0.2\n")
    from cmdop_tui.machines import inventory

    assert inventory.ssh_config_hosts(config) == ["db1", "web2"]
    assert Inventory.load([], config).names() == ["local", "db1", "web2"]
    # This machine is not reached by ssh: whatever its hostname, start-up goes on.
    monkeypatch.setattr(inventory.socket, "gethostname", lambda: "")
    assert Inventory.load([], config).resolve("local").is_local
