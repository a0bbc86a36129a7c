"""The Ansible inventories under tests/data/ansible, read twice: by Ansible itself (`ansible-inventory
--list`, the oracle) and by the built-in reader (ansible-inventory out of reach). Both must give
the same machines (address, user, port, groups, key, ssh options, connection) and leave out the
same hosts; and what they give must be what the inventory means (the table below)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from real_tools import real_tool

from cmdop_tui.config.settings import Settings
from cmdop_tui.machines.ansible import AnsibleMachines, read_ansible_inventory
from cmdop_tui.machines.spec import MachineSpec
from cmdop_tui.session.inventory import inventory_of

DATA = Path(__file__).resolve().parents[1] / "data" / "ansible"
INVENTORIES = [
    line.strip()
    for line in (DATA / "inventories.txt").read_text().splitlines()
    if line.strip() and not line.startswith("#")
]

# What each inventory means, host by host: (address, user, port, tags); and the hosts left out.
EXPECTED: dict[str, tuple[dict[str, tuple[str, str | None, int | None, tuple[str, ...]]], set[str]]] = {
    "k8s-cluster/inventory.ini": (
        {
            "node1": ("203.0.113.11", "ubuntu", None, ("etcd", "k8s_cluster", "kube_control_plane")),
            "node6": ("203.0.113.16", "ubuntu", None, ("k8s_cluster", "kube_node")),
            # Ansible gives a host's own vars to the group of the same name, which group_vars/all beats
            "bastion": ("198.51.100.7", "ubuntu", None, ("bastion",)),
        },
        set(),
    ),
    "vagrant-lab/hosts.ini": (
        {
            "192.168.56.16": ("192.168.56.16", "vagrant", None, ("db", "multi")),
            "master": ("192.168.56.12", "vagrant", None, ("k8s-master", "multi")),
        },
        set(),
    ),
    "docs-ini/hosts": (
        {
            "www49.example.com": ("www49.example.com", None, None, ("webservers",)),
            "db-f.example.com": ("db-f.example.com", None, None, ("dbservers",)),
            "bar.example.com": ("bar.example.com", None, 2222, ("webservers",)),
            "jumper": ("192.0.2.50", None, 5555, ("other",)),
            "host2": ("host2", None, None, ("atlanta", "raleigh", "southeast", "usa")),
        },
        set(),
    ),
    "docs-yaml/hosts.yml": (
        {
            "foo.example.com": ("foo.example.com", None, None, ("east", "prod", "webservers")),
            "host1": ("host1", "deploy", 5556, ("atlanta",)),
        },
        set(),
    ),
    "plain-yaml/inventory": (
        {
            "2001:db8::1": ("2001:db8::1", "admin", 2200, ("routers",)),
            "2001:db8::2": ("2001:db8::2", "admin", None, ("routers",)),
            "edge-2": ("2001:db8:0:1::10", "admin", None, ("routers",)),
            "nas.example.org": ("192.0.2.80", "backup", 2222, ("storage",)),
        },
        set(),
    ),
    "ssh-options/hosts.ini": (
        {
            "app1": ("10.20.0.11", "ops", None, ("behind_bastion",)),
            "old1": ("192.0.2.21", "root", 2201, ("legacy",)),
            "old2": ("192.0.2.22", None, None, ("legacy",)),
        },
        {"win1", "evil1", "tty1", "word1", "noport", "cport"},
    ),
    "script-meta/inventory.sh": (
        {
            "192.168.56.72": ("192.168.56.72", "vagrant", 2222, ("group",)),
            "db-replica.internal": ("10.1.0.5", None, None, ("databases", "replicas")),
        },
        set(),
    ),
    "script-host/inventory": ({"w2": ("10.9.0.2", "www", 2022, ("web",)), "d1": ("d1", None, None, ("db",))}, set()),
    "folder": (
        {
            "web3": ("10.5.0.3", "www", 2200, ("web",)),
            "cache1": ("10.5.2.1", "admin", 22, ("cache",)),
            "vm-1": ("172.16.9.1", "www", 2200, ("cloud", "web")),
        },
        set(),
    ),
    "precedence/hosts.yml": (
        {
            "deep1": ("deep1", "from-site", 2002, ("aaa", "region", "site")),
            "flat1": ("flat1", "from-aaa", 2002, ("aaa", "zzz")),
            "web1": ("web1", "from-host", 2003, ("web",)),
            "web2": ("web2", "from-group-vars-web", 2004, ("web",)),
        },
        set(),
    ),
    "templated/hosts.yml": (
        {
            "app1": ("app1", None, 2200, ("app",)),
            "app2": ("app2.internal.example.com", None, None, ("app",)),
            "app7": ("app7", "deploy", None, ("app",)),
        },
        {"app3", "app4", "app5", "app6"},
    ),
    "toml/hosts.toml": (
        {
            "eu2.example.org": ("eu2.example.org", "ops", None, ("web", "web_eu")),
            "eu-lb.example.org": ("eu-lb.example.org", "lb", 2222, ("web", "web_eu")),
            "db1": ("198.51.100.31", "ops", 5022, ("db",)),
        },
        set(),
    ),
}


def fields(spec: MachineSpec) -> tuple[object, ...]:
    return (spec.host, spec.user, spec.port, spec.tags, spec.connection, spec.identity_file, spec.ssh_options)


def by_name(read: AnsibleMachines) -> dict[str, tuple[object, ...]]:
    return {spec.name: fields(spec) for spec in read.machines}


@pytest.fixture(scope="module")
def ansible_inventory() -> Path:
    return real_tool("ansible-inventory")


@pytest.mark.parametrize("entry", INVENTORIES)
def test_the_built_in_reader_gives_what_ansible_inventory_gives(entry, ansible_inventory):
    by_ansible = read_ansible_inventory(DATA / entry, ansible_inventory)
    built_in = read_ansible_inventory(DATA / entry, None)
    assert (by_ansible.reader, built_in.reader) == ("ansible-inventory", "built-in")
    assert by_ansible.machines, "an inventory under test with no machine tests nothing"
    assert by_name(built_in) == by_name(by_ansible)
    assert [host.name for host in built_in.left_out] == [host.name for host in by_ansible.left_out]
    assert [host.reason for host in built_in.left_out] == [host.reason for host in by_ansible.left_out]


@pytest.mark.parametrize("entry", sorted(EXPECTED))
def test_each_inventory_means_what_it_says(entry):
    expected, left_out = EXPECTED[entry]
    read = read_ansible_inventory(DATA / entry, None)
    found = {spec.name: (spec.host, spec.user, spec.port, spec.tags) for spec in read.machines}
    assert {name: found.get(name) for name in expected} == expected
    assert {host.name for host in read.left_out} == left_out


def test_what_only_the_connection_vars_say_is_kept():
    specs = {spec.name: spec for spec in read_ansible_inventory(DATA / "k8s-cluster/inventory.ini", None).machines}
    assert specs["node3"].ssh_options == (
        "ProxyCommand=ssh -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -W %h:%p -q jump@198.51.100.7",
    )
    assert specs["bastion"].ssh_options == ()  # not in k8s_cluster: reached directly
    vagrant = {spec.name: spec for spec in read_ansible_inventory(DATA / "vagrant-lab/hosts.ini", None).machines}
    assert vagrant["master"].identity_file == "~/.vagrant.d/insecure_private_key"
    assert vagrant["master"].ssh_options == ("StrictHostKeyChecking=no",)
    local = read_ansible_inventory(DATA / "local-node/hosts.ini", None).machines
    assert [(spec.name, spec.is_local, spec.tags) for spec in local] == [
        ("node1", True, ("etcd", "kube_control_plane", "kube_node"))
    ]
    assert all(spec.is_local for spec in read_ansible_inventory(DATA / "complex/hosts", None).machines)


def test_a_file_ansible_cannot_parse_is_its_notice_and_the_folders_others_are_read(ansible_inventory):
    read = read_ansible_inventory(DATA / "folder", ansible_inventory)
    assert len(read.machines) == 7
    assert any("04-broken.ini" in notice for notice in read.problems)


def test_the_session_reads_through_ansible_inventory_when_it_is_on_the_path(ansible_inventory, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", f"{ansible_inventory.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    empty_ssh = tmp_path / "ssh_config"
    empty_ssh.write_text("")
    machines = inventory_of(Settings(ansible_inventory=DATA / "ssh-options/hosts.ini", ssh_config=empty_ssh))
    assert [spec.name for spec in machines.inventory if spec.source == "ansible"] == [
        "app1", "app2", "app3", "old1", "old2",
    ]  # fmt: skip
    assert len(machines.notices) == 6 and all(n.startswith("Ansible host ") for n in machines.notices)


def test_a_hung_inventory_script_under_ansible_inventory_ends_at_the_deadline(ansible_inventory, tmp_path):
    script = tmp_path / "inventory"
    script.write_text("#!/bin/sh\nexec sleep 600\n")
    script.chmod(0o755)
    read = read_ansible_inventory(script, ansible_inventory, timeout_s=5.0)
    assert read.machines == ()
    assert read.notices == (f"the Ansible inventory {script} is not read: ansible-inventory did not finish within 5 s",)


def test_when_ansible_inventory_fails_the_built_in_reader_reads_instead(ansible_inventory, tmp_path):
    hosts = tmp_path / "hosts"
    hosts.write_text("[web]\nweb1 ansible_host=192.0.2.1\n[db]\ndb1 ansible_host=192.0.2.2\n")
    (tmp_path / "group_vars").mkdir()
    vaulted = tmp_path / "group_vars" / "web.yml"
    vaulted.write_text("$ANSIBLE_VAULT;1.1;AES256\n6231336539666234306139346433616338\n")  # no vault password here
    read = read_ansible_inventory(hosts, ansible_inventory)
    assert read.reader == "built-in" and [spec.host for spec in read.machines] == ["192.0.2.2"]
    assert read.problems == (
        f"ansible-inventory failed (Attempting to decrypt but no vault secrets found.): {hosts} is read without it",
    )
    assert [host.notice for host in read.left_out] == [
        f"Ansible host web1 is left out: {vaulted} is encrypted with Ansible Vault"
    ]


def test_ansible_inventory_and_its_scripts_get_no_api_key(ansible_inventory, tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-never-handed-to-ansible")
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "never-handed-either")
    script = tmp_path / "inventory"
    script.write_text(
        '#!/bin/sh\necho "{\\"g\\": {\\"hosts\\": [\\"h1\\"], '
        '\\"vars\\": {\\"ansible_user\\": \\"${ANTHROPIC_API_KEY:-none}${ANTHROPIC_AUTH_TOKEN:-}\\"}}}"\n'
    )
    script.chmod(0o755)
    read = read_ansible_inventory(script, ansible_inventory)
    assert read.reader == "ansible-inventory" and [spec.user for spec in read.machines] == ["none"]
