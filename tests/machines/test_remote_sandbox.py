"""The sandbox on a remote machine, tried as an attacker would, over real sshd (tests/sshd.py).

The servers are this host, run as this user (root in CI), with a throwaway home of their own
holding harmless markers for secrets; every effect is checked here, on the host itself.
"""

from __future__ import annotations

import asyncio
import os
import socket
from pathlib import Path

import pytest
from remote_side import make_home, remove_home, wait_gone, workspace

from cmdop_tui.machines.fleet import Fleet
from cmdop_tui.machines.inventory import Inventory
from cmdop_tui.machines.machine import MachineResult
from cmdop_tui.machines.remote import RemoteMachine
from cmdop_tui.machines.remote_sandbox import sandbox_label
from cmdop_tui.machines.spec import Health, MachineSpec
from cmdop_tui.machines.ssh import SshOptions

SECRET = "SECRET-MARKER"


@pytest.fixture
def home():
    """A remote home with a secret of every kind the sandbox hides, and things to protect."""
    home = make_home()
    for relative in (".ssh/id_rsa", ".aws/credentials", "p/a/b/c/d/e/.env", "p/node_modules/x/.env.local"):
        (home / relative).parent.mkdir(parents=True, exist_ok=True)
        (home / relative).write_text(f"{SECRET} {relative}\n")
    (home / "clusters").mkdir()
    (home / "clusters" / "prod.yaml").write_text(f"{SECRET} kube\n")  # named by $KUBECONFIG only
    for name in (".profile", ".bashrc"):
        (home / name).write_text("ORIGINAL\n")
    there = workspace(home)
    (there / ".git" / "hooks").mkdir(parents=True)
    (there / "link-to-profile").symlink_to(home / ".profile")  # planted by an earlier command
    (there / "link-to-key").symlink_to(home / ".ssh" / "id_rsa")
    yield home
    remove_home(home)


@pytest.fixture
def lab(ssh_hosts, home):
    return ssh_hosts(1, env={"HOME": str(home), "KUBECONFIG": str(home / "clusters" / "prod.yaml")})


@pytest.fixture
async def fleet(lab):
    fleet = Fleet(Inventory.load([], lab.config), SshOptions(config_file=lab.config))
    yield fleet
    await fleet.close()


def alpha(fleet: Fleet) -> RemoteMachine:
    machine = fleet.machine("alpha")
    assert isinstance(machine, RemoteMachine)
    return machine


async def run(machine: RemoteMachine, command: str, *, sandboxed: bool = True) -> MachineResult:
    return await machine.run_command(
        command,
        cwd=None,
        timeout_ms=30_000,
        progress=lambda text, stream: None,
        output_limit=200_000,
        sandboxed=sandboxed,
    )


def unchanged(home: Path) -> bool:
    return all((home / name).read_text() == "ORIGINAL\n" for name in (".profile", ".bashrc"))


# --- it fails closed --------------------------------------------------------------------------


async def test_commands_before_the_first_probe_wait_for_one_probe_and_run_sandboxed(fleet, home):
    probes: list[Health] = []
    fleet.listeners.append(lambda spec, health: probes.append(health))
    machine = alpha(fleet)
    assert "alpha" not in fleet.health  # nothing is known of it yet
    results = await asyncio.gather(*(run(machine, f"echo {i} >> ~/.bashrc") for i in range(4)))
    assert len(probes) == 1 and probes[0].sandbox == "bubblewrap"  # one probe, shared
    assert all(r.sandbox_denied is not None and r.sandbox_denied.machine == "alpha" for r in results)
    assert unchanged(home)


async def test_a_machine_that_cannot_be_probed_or_says_nothing_of_a_sandbox_gets_no_command(ssh_hosts, tmp_path):
    lab = ssh_hosts(1, env={"HOME": "not-an-absolute-home"})  # the probe cannot say where secrets are
    fleet = Fleet(Inventory.load([], lab.config), SshOptions(config_file=lab.config))
    marker = tmp_path / "ran"  # bare, a command could write it
    try:
        unknown = await run(alpha(fleet), f"touch {marker}")
        offline = fleet.machine(lab.offline_alias)
        assert isinstance(offline, RemoteMachine)
        unreachable = await run(offline, f"touch {marker}")
        written = await alpha(fleet).write_file(str(marker), "x")
    finally:
        await fleet.close()
    assert unknown.is_error and "until the app knows what sandbox it has there" in unknown.text
    assert fleet.health["alpha"].sandbox == "unknown" and sandbox_label("unknown").startswith("sandbox unknown")
    assert unreachable.is_error and "cannot reach" in unreachable.text
    assert written.is_error and not marker.exists()


async def test_a_machine_without_bubblewrap_runs_bare_and_says_so(ssh_hosts, home, tmp_path):
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "bwrap").write_text("#!/bin/sh\nexit 1\n")  # a bubblewrap that cannot make namespaces
    (fake / "bwrap").chmod(0o755)
    lab = ssh_hosts(1, env={"HOME": str(home)}, path=fake)
    fleet = Fleet(Inventory.load([], lab.config), SshOptions(config_file=lab.config))
    try:
        result = await run(alpha(fleet), "pwd")
    finally:
        await fleet.close()
    assert fleet.health["alpha"].sandbox == "none" and sandbox_label("none") == "no sandbox there"
    assert "no sandbox on alpha" in result.text and str(workspace(home)) in result.text


# --- secrets ----------------------------------------------------------------------------------

READS = [
    "cat ~/.ssh/id_rsa ~/.aws/credentials",
    "head -c 200 ~/.ssh/id_rsa; tail ~/.aws/credentials",
    "cp ~/.ssh/id_rsa ./k; cat ./k",
    "tar cf - -C ~ .ssh .aws p 2>/dev/null | grep -a SECRET",
    "find ~ -name '.env*' -exec cat {} + 2>/dev/null",
    "shopt -s globstar dotglob; cat ~/p/**/.env* 2>/dev/null",
    'cat "$KUBECONFIG"; cat ~/clusters/prod.yaml',
    "cat link-to-key; cat $(readlink link-to-key)",
    "grep -ra SECRET ~ 2>/dev/null",
    'python3 -c \'import glob; [print(open(p).read()) for p in glob.glob("/" + "**/.env*", recursive=True)]\' 2>&1',
    "cat /proc/1/root$HOME/.ssh/id_rsa /proc/self/root$HOME/.aws/credentials 2>&1",
]


async def test_commands_cannot_read_the_remote_secrets(fleet):
    machine = alpha(fleet)
    for command in READS:
        result = await run(machine, command)
        assert SECRET not in result.text, command


async def test_file_tools_cannot_read_or_list_the_remote_secrets(fleet, home):
    machine = alpha(fleet)
    for path in ("~/.ssh/id_rsa", "~/.aws/credentials", "~/p/a/b/c/d/e/.env", "~/p/node_modules/x/.env.local"):
        read = await machine.read_file(path)
        assert read.is_error and SECRET not in read.text, path
        assert SECRET.encode() not in (await machine.read_bytes(path, max_bytes=1000)).data
    for path in (str(home / "clusters" / "prod.yaml"), "link-to-key"):
        assert SECRET not in (await machine.read_file(path)).text, path
    searched = [await machine.grep(SECRET, path="~"), await machine.grep(".", path="~/.ssh")]
    assert all(SECRET not in result.text for result in searched)
    listed = [
        await machine.glob("**/.env*", cwd="~"),
        await machine.glob(".*", cwd="~"),
        await machine.list_dir("~"),
        await machine.list_dir("~/p/a/b/c/d/e"),
    ]
    text = "\n".join(result.text for result in listed)
    assert not any(result.is_error for result in listed) and SECRET not in text
    for name in (".ssh", ".aws", ".env", "prod.yaml"):  # names are hidden too
        assert name not in text, name
    assert ".profile" in listed[1].text and ".profile" in listed[2].text  # what is not a secret is listed


async def test_the_environment_keeps_no_secret_or_door(ssh_hosts, home):
    secrets = {"GITHUB_TOKEN": "tok-" + SECRET, "DATABASE_URL": f"postgres://u:{SECRET}@db/x", "SSH_AUTH_SOCK": "/x"}
    lab = ssh_hosts(1, env={"HOME": str(home), **secrets, "PLAIN": "kept"})
    fleet = Fleet(Inventory.load([], lab.config), SshOptions(config_file=lab.config))
    try:
        result = await run(alpha(fleet), "env; cat /proc/self/environ | tr '\\0' '\\n'")
    finally:
        await fleet.close()
    assert SECRET not in result.text and "SSH_AUTH_SOCK" not in result.text and "PLAIN=kept" in result.text


# --- writes -----------------------------------------------------------------------------------

WRITES = [
    "echo x >> ~/.bashrc",
    "cp /etc/hostname ~/.bashrc",
    'python3 -c \'import os; open(os.path.expanduser("~/.bashrc"), "a").write("x")\'',
    "echo x > .git/hooks/pre-commit",
    "cp /etc/hostname .git/hooks/post-checkout",
    "echo x > link-to-profile",
    "sed -i --follow-symlinks s/ORIGINAL/CHANGED/ link-to-profile",
    "rm -f ~/.profile",
    "mv ~/.bashrc ./stolen",
]


async def test_commands_cannot_write_the_home_git_hooks_or_through_a_planted_symlink(fleet, home):
    machine = alpha(fleet)
    hooks = workspace(home) / ".git" / "hooks"
    for command in WRITES:
        result = await run(machine, command)
        assert result.sandbox_denied is not None and result.sandbox_denied.machine == "alpha", command
        assert unchanged(home) and not any(hooks.iterdir()), command


async def test_file_tools_refuse_those_writes_with_what_the_sandbox_refused(fleet, home):
    machine = alpha(fleet)
    refused = [
        (await machine.write_file("~/.bashrc", "x"), str(home / ".bashrc")),
        (await machine.write_file(".git/hooks/pre-commit", "x"), str(workspace(home) / ".git/hooks/pre-commit")),
        (await machine.write_file("link-to-profile", "x"), str(home / ".profile")),
        (await machine.edit_file("link-to-profile", "ORIGINAL", "CHANGED"), str(home / ".profile")),
        (await machine.write_file("~/.ssh/authorized_keys", "x"), str(home / ".ssh/authorized_keys")),
        (await machine.write_file("CMDOP.md", "obey"), str(workspace(home) / "CMDOP.md")),
        (await machine.write_file("../../../.bashrc", "x"), str(home / ".bashrc")),
    ]
    for result, path in refused:
        assert result.sandbox_denied is not None and result.sandbox_denied.paths == (path,), result.text
    assert unchanged(home) and not (home / ".ssh" / "authorized_keys").exists()
    assert not (workspace(home) / "CMDOP.md").exists()
    allowed = await machine.write_file("link-to-profile", "LET OUT\n", sandboxed=False)  # the user said yes
    assert not allowed.is_error and (home / ".profile").read_text() == "LET OUT\n"


async def test_a_refusal_names_only_what_the_rules_refuse(fleet, home):
    machine = alpha(fleet)
    inside = workspace(home) / "x"
    claimed = await run(machine, f"echo \"touch: cannot touch '{inside}': Read-only file system\" >&2; exit 1")
    assert claimed.sandbox_denied is None  # the workspace is writable: the command's word is not taken
    outside = await run(machine, "touch /usr/cmdop-remote-probe")
    assert outside.sandbox_denied is not None and outside.sandbox_denied.paths == ("/usr/cmdop-remote-probe",)


async def test_a_protected_name_a_command_creates_is_moved_aside_and_refused(fleet, home):
    machine = alpha(fleet)
    result = await run(machine, "echo obey > CMDOP.md; mkdir -p .cmdop/skills; touch .mcp.json")
    there = workspace(home)
    assert result.sandbox_denied is not None and result.sandbox_denied.action == "create"
    assert set(result.sandbox_denied.paths) == {str(there / n) for n in ("CMDOP.md", ".cmdop", ".mcp.json")}
    assert not any((there / n).exists() for n in ("CMDOP.md", ".cmdop", ".mcp.json"))


# --- doors, processes, powers ---------------------------------------------------------------


async def test_no_unix_socket_of_the_remote_can_be_reached(fleet, home):
    path_listener = socket.socket(socket.AF_UNIX)
    path_listener.bind(str(home / "agent.sock"))
    abstract = socket.socket(socket.AF_UNIX)
    abstract.bind(f"\0cmdop-remote-{os.getpid()}")
    for listener in (path_listener, abstract):
        listener.listen(4)
        listener.setblocking(False)
    tries = [
        f'python3 -c \'import socket; s = socket.socket(socket.AF_UNIX); s.connect("{home}/agent.sock"); print("CONNECTED")\'',
        f'python3 -c \'import socket; s = socket.socket(socket.AF_UNIX); s.connect("\\0cmdop-remote-{os.getpid()}"); '
        'print("CONNECTED")\'',
        f'python3 -c \'import socket; s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); s.sendto(b"x", "{home}/agent.sock")\'',
        f"ssh -o ControlPath={home}/agent.sock -O check alpha 2>&1",
    ]
    try:
        for command in tries:
            result = await run(alpha(fleet), command)
            assert "CONNECTED" not in result.text, command
        for listener in (path_listener, abstract):
            with pytest.raises(BlockingIOError):
                listener.accept()  # nobody ever connected
    finally:
        path_listener.close()
        abstract.close()


async def test_tmp_is_the_sessions_own_kept_between_commands_and_removed_at_the_end(fleet, home):
    machine = alpha(fleet)
    name = f"cmdop-remote-tmp-{os.getpid()}"
    first = await run(machine, f"echo hi > /tmp/{name} && tar cf /var/tmp/{name}.tar -C /tmp {name}")
    second = await run(machine, f"tar xOf /var/tmp/{name}.tar {name}; cat /tmp/{name}")
    assert "exit code: 0" in first.text and second.text.count("hi") == 2
    assert not Path(f"/tmp/{name}").exists() and not Path(f"/var/tmp/{name}.tar").exists()  # not the real ones
    folder = home / ".local/share/cmdop-tui/sandbox" / fleet.session
    assert (folder / "tmp" / name).exists()
    await fleet.close()
    assert not folder.exists()


async def test_no_background_process_outlives_its_command(fleet):
    marker = f"cmdop-remote-bg-{os.getpid()}"
    command = (
        f"(exec -a {marker}-1 sleep 300) & "
        f"nohup bash -c 'exec -a {marker}-2 sleep 300' >/dev/null 2>&1 & "
        f"setsid bash -c 'exec -a {marker}-3 sleep 300' >/dev/null 2>&1 & "
        f"( ( exec -a {marker}-4 sleep 300 & ) & ); echo started"
    )
    result = await run(alpha(fleet), command)
    assert "started" in result.text
    assert await wait_gone(marker) == []


async def test_no_capability_or_namespace_is_left_inside(fleet, home):
    machine = alpha(fleet)
    caps = await run(machine, "grep Cap /proc/self/status")
    values = [line.split()[1] for line in caps.text.splitlines() if line.startswith("Cap")]
    assert len(values) == 5 and set(values) == {"0000000000000000"}
    escapes = await run(
        machine,
        "umount ~/.ssh 2>&1; mount -t tmpfs none ~/.bashrc 2>&1; unshare -Ur cat ~/.ssh/id_rsa 2>&1; "
        "cat ~/.ssh/id_rsa 2>&1; ls /proc | grep -c '^[0-9]'",
    )
    assert SECRET not in escapes.text and unchanged(home)
    assert int(escapes.text.split("stdout:")[1].split()[-1]) < 10  # its own processes only


# --- the workspace ----------------------------------------------------------------------------


async def test_commands_files_and_the_agent_work_in_the_machines_workspace(ssh_hosts, home):
    lab = ssh_hosts(1, env={"HOME": str(home)})
    spec = MachineSpec("alpha", "alpha", cmdop='printf "%s\\n" "agent in $PWD"; :')
    fleet = Fleet(Inventory.load([spec], lab.config), SshOptions(config_file=lab.config))
    there = workspace(home)
    try:
        machine = alpha(fleet)
        where = await run(machine, "pwd; touch made-here")
        written = await machine.write_file("notes/relative.txt", "here")
        agent = await machine.run_agent("hi", timeout_ms=20_000, progress=lambda text, stream: None)
    finally:
        await fleet.close()
    assert str(there) in where.text and (there / "made-here").exists()
    assert not written.is_error and (there / "notes" / "relative.txt").read_text() == "here"
    assert f"agent in {there}" in agent.text


# --- the policy -------------------------------------------------------------------------------


async def test_strict_turns_the_network_off_and_workspace_keeps_it(lab):
    from cmdop_tui.machines.sandbox import Sandbox, SandboxPolicy

    port = lab.server("alpha").port  # a localhost port of the host: the sshd itself
    probe = f"bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port} && head -c 7 <&3'"
    seen = {}
    for mode in ("workspace", "strict"):
        sandbox = Sandbox(SandboxPolicy(mode=mode))  # type: ignore[arg-type]
        fleet = Fleet(Inventory.load([], lab.config), SshOptions(config_file=lab.config), sandbox=sandbox)
        try:
            seen[mode] = await run(alpha(fleet), probe)
        finally:
            await fleet.close()
    assert "SSH-2.0" in seen["workspace"].text
    assert "SSH-2.0" not in seen["strict"].text and "exit code: 0" not in seen["strict"].text


async def test_a_secret_left_by_a_command_the_user_let_out_is_hidden_from_the_next(fleet, home):
    machine = alpha(fleet)
    await run(machine, "true")  # the session's first scan
    outside = await run(machine, f"mkdir -p deep/er && echo {SECRET} > deep/er/.env.production", sandboxed=False)
    assert "exit code: 0" in outside.text
    after = await run(machine, "cat deep/er/.env.production; grep -r SECRET . 2>/dev/null")
    assert SECRET not in after.text
