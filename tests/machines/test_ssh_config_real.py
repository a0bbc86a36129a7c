"""ssh configs in the shapes of public ones (tests/data/ssh_config/, each with its SOURCE) read as
OpenSSH reads them: the aliases we list, and the HostName, User, Port and ProxyJump we read for
each, against `ssh -G`."""

from __future__ import annotations

import os
import shutil

import pytest
from ssh_oracle import DATA, case_names, compare, lay_out

from cmdop_tui.machines.ssh_config import Connection, read_ssh_config

# What ssh itself refuses, and what it says then: macOS's UseKeychain on Linux, a misspelt
# keyword, a negation as a Match attribute, an Include of itself.
REFUSED_BY_SSH = {
    "keychain-refused": "Bad configuration option: usekeychain",
    "equals-sign-refused": "Bad configuration option: prot",
    "match-negation-refused": "Bad Match condition",
    "include-self": "Too many recursive configuration includes",
}


def needs_ssh() -> None:
    if shutil.which("ssh") is None:
        if os.environ.get("CI"):
            pytest.fail("ssh is not installed", pytrace=False)
        pytest.skip("ssh is not installed")


def test_every_case_is_written_for_this_project_and_names_its_shape():
    names = case_names()
    assert len(names) >= 10 and set(REFUSED_BY_SSH) <= set(names)
    for name in names:
        source = (DATA / name / "SOURCE").read_text()
        assert source.startswith("Written for this project"), name


@pytest.mark.parametrize("name", case_names())
async def test_what_we_read_is_what_ssh_reads(name, tmp_path):
    needs_ssh()
    comparison = await compare(name, tmp_path)
    if name in REFUSED_BY_SSH:
        assert comparison.refused, f"ssh read {name}, which it is expected to refuse"
        assert REFUSED_BY_SSH[name] in comparison.refused, comparison.refused
        return
    assert comparison.differences == ()


async def test_the_oracle_catches_a_misreading(tmp_path, monkeypatch):
    """The comparison can fail: with Host lines read word by word (the old reader: `Host=web1`
    and quotes misread, negations and conditional Includes ignored), it finds the differences."""
    needs_ssh()
    from cmdop_tui.machines import ssh_config

    original = ssh_config.read_ssh_config

    def careless(path, **kwargs):
        read = original(path, **kwargs)
        misread = Connection(hostname="wrong.example", user="nobody")
        hosts = tuple(ssh_config.SshHost(h.alias, h.path, h.line, misread) for h in read.hosts)
        return ssh_config.SshConfig(hosts, read.files, read.problems)

    import ssh_oracle

    monkeypatch.setattr(ssh_oracle, "read_ssh_config", careless)
    comparison = await compare("forms", tmp_path)
    assert len(comparison.differences) == len(comparison.ours.hosts) > 5


def test_the_forms_case_reads_every_host_form(tmp_path):
    """Without ssh: the aliases and what they do, read by hand from forms/config."""
    config = lay_out("forms", tmp_path)
    read = read_ssh_config(config, home=tmp_path, user="me")
    assert read.aliases == [
        "lab1", "lab2", "web1", "web2", "db1", "db2", "web4", "bastion",
        "gateway.internal", "app.internal", "work-db", "ci", "gh", "jump-uri", "jump-address", "jump-chain",
    ]  # fmt: skip
    hosts = {host.alias: host.connection for host in read.hosts}
    assert hosts["web2"] == Connection("10.0.0.web2", "deploy")
    assert (hosts["db1"].port, hosts["db2"].port) == (5432, 6432)  # Match originalhost; Match host + user
    assert hosts["lab1"] == Connection("lab1.lab.example.net", "fallback", proxy_jump="ops@bastion:2222")
    assert hosts["app.internal"].proxy_jump == "bastion" and hosts["gateway.internal"].proxy_jump is None
    assert hosts["work-db"].hostname == "db.work.example.com"  # included inside `Host work-*`
    assert hosts["ci"].proxy_command == "ssh -W %h:%p bastion"
    jumps = [hosts[name].proxy_jump for name in ("jump-uri", "jump-address", "jump-chain")]
    assert jumps == [
        "ops@bastion.example.com:2222",
        "admin@[192.0.2.7]:22",
        "first.example.com,second.example.com:2200",
    ]
    assert [host.alias for host in read.forges] == ["gh"]
    assert "not-included" not in read.aliases and "other" not in read.aliases
