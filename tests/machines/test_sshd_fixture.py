"""The real-sshd test infrastructure itself (``tests/sshd.py``, fixture ``ssh_hosts``).

Tests of SSH machine support trust these servers to behave like real remote machines; these
tests pin down exactly what they promise: aliases that log in non-interactively, distinct
servers, server-side environment, PATH prefix, a fast-failing offline host, an unknown host
key, ControlMaster reuse, many concurrent connections, and no process left behind.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import sshd
from sshd import SshClientSetup, SshdStartError, SshLab, SshServer, process_table, sshd_unavailable_reason

StartLab = Callable[..., SshLab]


def clean_env() -> dict[str, str]:
    """The local environment minus anything a test expects to come from the server only."""
    return {name: value for name, value in os.environ.items() if not name.startswith("ANTHROPIC_")}


def test_alias_runs_a_command(ssh_hosts: StartLab) -> None:
    lab = ssh_hosts()
    assert lab.aliases == ["alpha"]
    result = lab.run("alpha", "echo", "hi")
    assert (result.returncode, result.stdout, result.stderr) == (0, "hi\n", "")
    assert lab.ssh_command("alpha", "true") == ["ssh", "-F", str(lab.config), "alpha", "true"]


def test_servers_are_distinct(ssh_hosts: StartLab) -> None:
    """Each alias reaches its own sshd: the port the session came in on, and the listener
    among the remote shell's ancestors (shell <- session sshd [<- priv sshd] <- listener)."""
    lab = ssh_hosts(2)
    assert lab.aliases == ["alpha", "bravo"]
    # Walk up the parents; stop where a parent is not visible (outside this PID namespace).
    ancestry = 'echo "$SSH_CONNECTION"; p=$$; while [ -n "$p" ] && [ "$p" -gt 1 ]; do echo "$p"; p=$(ps -o ppid= -p "$p" | tr -d " "); done'
    for alias, server in zip(lab.aliases, lab.servers, strict=True):
        connection, *ancestors = lab.run(alias, ancestry, check=True).stdout.splitlines()
        assert connection.split()[2:] == ["127.0.0.1", str(server.port)]
        assert server.pid in map(int, ancestors)
    assert lab.servers[0].port != lab.servers[1].port
    assert lab.servers[0].pid not in map(int, ancestors)  # bravo's session is not under alpha
    assert lab.servers[0].host_public_key != lab.servers[1].host_public_key


def test_setenv_reaches_remote_commands(ssh_hosts: StartLab) -> None:
    """sshd's SetEnv: the remote side sees the variables although the client has none of them
    (and ssh -F sends no environment anyway). Values survive sshd_config quoting."""
    tricky = """a "quoted" $dollar #hash 'single' back\\slash key=value"""
    env = {
        "ANTHROPIC_API_KEY": "sk-test-123",
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:9/v1",
        "TRICKY": tricky,
        "EMPTY": "",
    }
    lab = ssh_hosts(env=env)
    remote = "; ".join(f"printenv {name}" for name in env)
    result = subprocess.run(
        lab.ssh_command("alpha", remote), check=False, capture_output=True, text=True, env=clean_env(), timeout=30
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:-1] == list(env.values())


def test_path_prefix_comes_first(ssh_hosts: StartLab, tmp_path: Path) -> None:
    """``path`` goes first on the remote PATH: the venv's python and a tool of our own win."""
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "cmdop-probe").write_text("#!/bin/sh\necho probe-ran\n")
    (tools / "cmdop-probe").chmod(0o755)
    venv_bin = Path(sys.executable).parent
    lab = ssh_hosts(path=[venv_bin, tools])
    python_name = Path(sys.executable).name
    result = lab.run("alpha", f'echo "$PATH"; command -v {python_name}; cmdop-probe', check=True)
    remote_path, python, probe = result.stdout.splitlines()
    assert remote_path.split(":")[:2] == [str(venv_bin), str(tools)]
    assert "/usr/bin" in remote_path.split(":")  # the system path still follows
    assert (python, probe) == (sys.executable, "probe-ran")


def test_offline_alias_fails_fast(ssh_hosts: StartLab) -> None:
    lab = ssh_hosts()
    began = time.monotonic()
    result = lab.run(lab.offline_alias, "true", timeout=10)
    elapsed = time.monotonic() - began
    assert result.returncode == 255
    assert "Connection refused" in result.stderr
    assert elapsed < 2, f"offline host took {elapsed:.2f} s to fail"


def test_unknown_host_key_is_rejected(ssh_hosts: StartLab) -> None:
    lab = ssh_hosts()
    lab.client.add_unknown_host_key_alias("stranger", lab.servers[0])
    result = lab.run("stranger", "true")
    assert result.returncode == 255
    assert "Host key verification failed" in result.stderr
    assert lab.run("alpha", "true").returncode == 0  # the known alias to the same server works


@pytest.fixture
def control_dir() -> Iterator[Path]:
    """A SHORT directory for ControlPath sockets: unix socket paths are limited to ~104 bytes."""
    directory = Path(tempfile.mkdtemp(prefix="cm", dir="/tmp"))
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def test_control_master_is_reused_and_exits(ssh_hosts: StartLab, control_dir: Path) -> None:
    lab = ssh_hosts()
    options = ["-o", "ControlMaster=auto", "-o", f"ControlPath={control_dir}/cm-%C", "-o", "ControlPersist=30"]

    def ssh(*args: str) -> subprocess.CompletedProcess[str]:
        command = ["ssh", "-F", str(lab.config), *options, *args]
        return subprocess.run(
            command, check=False, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30
        )

    try:
        first = ssh("alpha", 'echo "$SSH_CONNECTION"')
        assert first.returncode == 0, first.stderr
        check = ssh("-O", "check", "alpha")
        assert check.returncode == 0, check.stderr
        assert "Master running" in check.stderr
        master_pid = int(check.stderr.split("pid=")[1].split(")")[0])
        second = ssh("alpha", 'echo "$SSH_CONNECTION"')
        # Same TCP connection (same client port) => the second command went through the master.
        assert second.stdout == first.stdout
    finally:
        exited = ssh("-O", "exit", "alpha")
    assert exited.returncode == 0, exited.stderr
    deadline = time.monotonic() + 5
    while master_pid in process_table() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert master_pid not in process_table()
    assert ssh("-O", "check", "alpha").returncode == 255
    assert list(control_dir.iterdir()) == []


def test_many_concurrent_connections(ssh_hosts: StartLab) -> None:
    """More simultaneous logins to one server than sshd's default MaxStartups (10), beyond
    which it drops new connections at random."""
    lab = ssh_hosts()
    processes = [
        subprocess.Popen(
            lab.ssh_command("alpha", "echo", str(n)), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for n in range(20)
    ]
    results = [(process.communicate(timeout=30), process.returncode) for process in processes]
    assert results == [((f"{n}\n", ""), 0) for n in range(20)]


def test_ten_servers_start_together(ssh_hosts: StartLab) -> None:
    began = time.monotonic()
    lab = ssh_hosts(10)
    elapsed = time.monotonic() - began
    assert len(set(lab.aliases)) == len({server.port for server in lab.servers}) == 10
    assert lab.run(lab.aliases[-1], "true").returncode == 0
    assert elapsed < 8, f"10 servers took {elapsed:.2f} s"  # ~0.4 s on 2 CPUs; generous for CI


def test_single_server_as_context_manager() -> None:
    if (reason := sshd_unavailable_reason()) is not None:
        pytest.skip(reason)
    client = SshClientSetup()
    try:
        with SshServer(client.identity, env={"WHO": "solo"}) as server:
            client.add_server("solo", server)
            command = client.ssh_command("solo", "printenv WHO")
            result = subprocess.run(command, capture_output=True, text=True, check=True)
            assert result.stdout == "solo\n"
        assert server.process is None and not server.directory.exists()
    finally:
        client.close()


def test_startup_failure_reports_sshd_stderr(monkeypatch: pytest.MonkeyPatch) -> None:
    """A broken server fails fast with sshd's own complaint, and cleans up after itself."""
    if (reason := sshd_unavailable_reason()) is not None:
        pytest.skip(reason)
    original = SshServer._config_text
    monkeypatch.setattr(SshServer, "_config_text", lambda self: original(self) + "NoSuchOption yes\n")
    client = SshClientSetup()
    server = SshServer(client.identity)
    try:
        began = time.monotonic()
        with pytest.raises(SshdStartError, match="Bad configuration option: NoSuchOption"):
            server.start()
        assert time.monotonic() - began < 2
        assert not server.directory.exists()
    finally:
        server.stop()
        client.close()


def test_missing_sshd_is_a_clear_skip_reason(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(sshd, "SSHD", tmp_path / "no-sshd")
    assert sshd_unavailable_reason() == f"{tmp_path / 'no-sshd'} is missing (install openssh-server)"


def test_close_leaves_no_process_behind(ssh_hosts: StartLab) -> None:
    """A live session, the command it runs and a process it daemonised all die with their
    server, although sshd's per-connection children call setsid() and so would survive the
    listener (and its process group) on their own. Nothing is left even as a zombie."""
    lab = ssh_hosts(2)
    daemon = lab.run("alpha", "setsid sleep 61 </dev/null >/dev/null 2>&1 & echo $!", check=True)
    daemon_pid = int(daemon.stdout)
    session = subprocess.Popen(
        lab.ssh_command("bravo", 'echo "$$ $PPID"; exec sleep 62'), stdout=subprocess.PIPE, text=True
    )
    assert session.stdout is not None
    shell_pid, session_pid = map(int, session.stdout.readline().split())
    listeners = [server.pid for server in lab.servers]
    configs = [server.config_path for server in lab.servers]
    directories = [server.directory for server in lab.servers]
    ours = {daemon_pid, shell_pid, session_pid, *listeners}
    assert None not in ours and ours <= process_table().keys()

    lab.close()  # what the fixture does at teardown (again, harmlessly)

    assert session.wait(timeout=10) == 255  # the client saw its connection die
    assert not ours & process_table().keys()
    if sys.platform == "linux":  # the subreaper reaped them all: not even zombies remain
        assert [pid for pid in ours if Path(f"/proc/{pid}").exists()] == []
    for config, directory in zip(configs, directories, strict=True):
        pgrep = subprocess.run(["pgrep", "-f", str(config)], check=False, capture_output=True, text=True)
        assert pgrep.stdout == "", f"sshd still running for {config}"
        assert not directory.exists()
    assert not lab.client.directory.exists()


@pytest.mark.skipif(sys.platform != "linux", reason="the subreaper (prctl) is Linux-only")
def test_servers_die_with_a_killed_test_process(tmp_path: Path) -> None:
    """If the test run itself is killed (no teardown at all), its servers still go away."""
    if (reason := sshd_unavailable_reason()) is not None:
        pytest.skip(reason)
    script = (
        "import json, os, signal, sshd\n"
        "lab = sshd.SshLab(2)\n"
        "dirs = [str(s.directory) for s in lab.servers] + [str(lab.client.directory)]\n"
        "print(json.dumps({'pids': [s.pid for s in lab.servers], 'dirs': dirs}), flush=True)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "support")}
    child = subprocess.run(
        [sys.executable, "-c", script], check=False, capture_output=True, text=True, env=env, timeout=30
    )
    assert child.returncode == -9, child.stderr
    started = json.loads(child.stdout)
    try:
        deadline = time.monotonic() + 5
        while set(started["pids"]) & process_table().keys() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not set(started["pids"]) & process_table().keys()
    finally:
        for directory in started["dirs"]:
            shutil.rmtree(directory, ignore_errors=True)
