"""`cmdop-tui machines list` over a real sshd: each machine's host, user, port and jump (from
`ssh -G` for an ssh_config alias), code forges apart and never probed, ssh_config's problems said."""

from __future__ import annotations

import asyncio

from sshd import current_user

from cmdop_tui.machines.fleet import Fleet
from cmdop_tui.machines.inventory import Inventory
from cmdop_tui.machines.spec import MachineSpec
from cmdop_tui.machines.ssh import SshOptions
from cmdop_tui.machines.ssh_resolve import SshResolver
from cmdop_tui.machines_cli import listing


def config_around(lab, tmp_path):
    """The lab's aliases by Include, a forge, a machine behind alpha, one whose user only a
    `Match exec` sets (our reading cannot know it; ssh -G can), and a line ssh would refuse."""
    config = tmp_path / "ssh_config"
    config.write_text(
        f'Include "{lab.config}"\n'
        "Host gh\n  HostName github.com\n  User git\n"
        "Host=jumped\n  HostName 127.0.0.1\n  Port 1\n  ProxyJump alpha\n  BatchMode yes\n"
        "Match originalhost viaexec exec true\n  User execuser\n"
        "Host viaexec\n  HostName 127.0.0.1\n  Port 1\n  BatchMode yes\n"
    )
    return config


def rows(table: str) -> dict[str, list[str]]:
    return {line.split()[0]: line.split() for line in table.splitlines() if line and not line.startswith(" ")}


async def test_machines_list_shows_what_each_connection_will_do(ssh_hosts, tmp_path):
    lab = ssh_hosts(1)
    config = config_around(lab, tmp_path)
    inventory = Inventory.load([MachineSpec("box", "127.0.0.5", user="ops", port=1)], config)
    assert "gh" not in inventory.names()  # a forge is no machine: nothing probes it
    table = await listing(inventory, SshOptions(config_file=config))
    by_name = rows(table)
    assert by_name["NAME"][:5] == ["NAME", "HOST", "USER", "PORT", "JUMP"]
    port = str(lab.servers[0].port)
    assert by_name["alpha"][1:5] == ["127.0.0.1", current_user(), port, "-"]
    assert by_name["alpha"][6] in ("online", "degraded")
    assert by_name["jumped"][1:5] == ["127.0.0.1", current_user(), "1", "alpha"]
    assert by_name["viaexec"][2] == "execuser"  # ssh -G ran the Match exec; our own reading could not
    assert by_name["box"][1:5] == ["127.0.0.5", "ops", "1", "-"]  # from the settings
    assert "code forges in ssh_config, not machines (never probed): gh" in table


async def test_the_answers_of_ssh_g_are_asked_once_and_kept(tmp_path):
    config = tmp_path / "ssh_config"
    config.write_text("Host web1 web2\n  HostName %h.example.com\n  User ops\n  Port 2200\n")
    resolver = SshResolver(config, jobs=1)
    assert resolver.known("web1") is None
    first, again = await asyncio.gather(resolver.resolve("web1"), resolver.resolve("web1"))
    assert first is again and first.connection is not None
    assert (first.connection.hostname, first.connection.user, first.connection.port) == (
        "web1.example.com",
        "ops",
        2200,
    )
    assert resolver.known("web1") is first
    answers = await resolver.resolve_all(["web1", "web2"])
    assert answers["web1"] is first and answers["web2"].connection.hostname == "web2.example.com"


async def test_a_config_ssh_refuses_is_said_in_one_line_and_the_fleet_still_loads(tmp_path, ssh_hosts):
    # (ssh_hosts: skips where OpenSSH is missing; no server is started)
    config = tmp_path / "ssh_config"
    config.write_text("Host web1\n  HostName 127.0.0.1\n  Port 1\n  UseKeychain yes\n")
    resolver = SshResolver(config)
    answer = await resolver.resolve("web1")
    assert answer.connection is None and "bad configuration option" in answer.error.lower()
    inventory = Inventory.load([], config)
    fleet = Fleet(inventory, SshOptions(config_file=config))
    assert fleet.inventory.names() == ["local", "web1"]
    table = await listing(inventory, SshOptions(config_file=config))
    assert rows(table)["web1"][1:4] == ["127.0.0.1", current_user(), "1"]  # our own reading stands in
    assert "ssh -G: " in table and "terminating" in table


async def test_the_machines_panel_shows_where_each_connection_goes(fake_api, ssh_hosts, tmp_path):
    from tui_helpers import make_app, wait_until

    from cmdop_tui.config.settings import Settings
    from cmdop_tui.tui.widgets.machines_panel import MachinesPanel

    lab = ssh_hosts(1)
    config = config_around(lab, tmp_path)
    app = make_app(fake_api, settings=Settings(ssh_config=config))
    async with app.run_test(size=(160, 40)) as pilot:
        panel = app.query_one(MachinesPanel)
        await wait_until(pilot, lambda: app.session is not None, what="the engine")
        fleet = app.session.runner.machines
        assert "gh" not in panel.remotes  # the forge is not shown as a machine, nor probed
        await wait_until(pilot, lambda: fleet.connections.known("viaexec") is not None, what="ssh -G")

        def text(name: str) -> str:
            return str(panel.options.get_option(name).prompt)

        await wait_until(pilot, lambda: "execuser@127.0.0.1:1" in text("viaexec"), what="ssh -G's user")
        assert f"{current_user()}@127.0.0.1:{lab.servers[0].port}" in text("alpha")
        assert "via alpha" in text("jumped")
        await wait_until(pilot, lambda: "jumped" in panel.health, what="the probes")
        assert "gh" not in fleet.health


async def test_without_a_runnable_ssh_the_answer_says_so(tmp_path, monkeypatch):
    config = tmp_path / "ssh_config"
    config.write_text("Host web1\n")
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))
    answer = await SshResolver(config).resolve("web1")
    assert (answer.connection, answer.error) == (None, "ssh is not installed")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ssh").write_text("not a program")  # there, but not executable
    monkeypatch.setenv("PATH", str(bin_dir))
    answer = await SshResolver(config).resolve("web1")
    assert answer.connection is None and answer.error.startswith("cannot run ssh")


async def test_machines_list_prints_no_terminal_sequence_an_ssh_config_holds(tmp_path):
    # A config from a dotfiles repository: controls in a HostName, a User and an included file's name.
    included = tmp_path / "conf.d" / "evil\x1b]0;owned\x07"
    included.parent.mkdir()
    included.write_text("Host other\n  HostName 127.0.0.1\n  Port 1\n")
    included.chmod(0o666)  # ssh refuses it: the problem names the file
    config = tmp_path / "ssh_config"
    config.write_text(
        f"Include {tmp_path}/conf.d/*\n"
        "Host evil\n  HostName 127.0.0.1\x1b[2J\n  User ops\x1b]52;c;b3duZWQ=\x07\n  Port 1\n  BatchMode yes\n"
    )
    inventory = Inventory.load([], config)
    table = await listing(inventory, SshOptions(config_file=config))
    assert "evil" in table and "owned" in table  # shown, inert
    assert "\x1b" not in table and "\x07" not in table


async def test_the_machines_panel_shows_no_terminal_sequence_an_ssh_config_holds(fake_api, tmp_path):
    from tui_helpers import make_app, wait_until

    from cmdop_tui.config.settings import Settings
    from cmdop_tui.tui.widgets.machines_panel import MachinesPanel

    config = tmp_path / "ssh_config"
    config.write_text("Host evil\n  HostName 127.0.0.1\n  User ops\x1b[2J\n  Port 1\n  BatchMode yes\n")
    app = make_app(fake_api, settings=Settings(ssh_config=config))
    async with app.run_test(size=(160, 40)) as pilot:
        panel = app.query_one(MachinesPanel)
        await wait_until(pilot, lambda: app.session is not None, what="the engine")
        fleet = app.session.runner.machines
        await wait_until(pilot, lambda: fleet.connections.known("evil") is not None, what="ssh -G")
        await wait_until(pilot, lambda: "evil" in panel.health, what="the probe")
        shown = str(panel.options.get_option("evil").prompt)
        assert "ops" in shown and "127.0.0.1" in shown and "\x1b" not in shown


async def test_an_ssh_g_that_hangs_is_given_up_and_what_it_ran_ended(tmp_path, monkeypatch):
    # ssh -G runs a `Match exec` (our own reading never does): one that hangs must not hold on.
    from mcp_servers.harness import new_tag, wait_gone

    from cmdop_tui.machines import ssh_resolve

    tag = new_tag()
    monkeypatch.setattr(ssh_resolve, "RESOLVE_TIMEOUT_S", 0.5)
    config = tmp_path / "ssh_config"
    config.write_text(f'Match exec "sleep 60 # {tag}"\n  User execuser\nHost web1\n  HostName 127.0.0.1\n')
    answer = await SshResolver(config).resolve("web1")
    assert answer.connection is None and "did not answer within" in answer.error
    assert wait_gone(tag, timeout=5) == []


def test_a_host_name_that_reads_as_an_option_is_no_machine(tmp_path):
    config = tmp_path / "ssh_config"
    config.write_text("Host -oProxyCommand=touch\\ /tmp/owned web1\n  HostName 127.0.0.1\n")
    inventory = Inventory.load([], config)
    assert "web1" in inventory.names() and not any(name.startswith("-") for name in inventory.names())
