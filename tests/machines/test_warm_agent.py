"""The warm agent (cmdop_tui/warm_agent/, support/warm.py): real agent processes, the real
`cmdop-tui -p` console entry, the real SDK against the fake API. Each test has its own runtime
directory and ends every agent it started."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from subprocess import DEVNULL

import pytest
from fake_anthropic import error_reply, text_reply, tool_reply
from processes import descendants

from cmdop_tui.support import warm
from cmdop_tui.support.warm import AGENT_PROGRAM, HEADER, LOG_NAME

CLI = [sys.executable, "-m", "cmdop_tui"]


def wait_until(condition, timeout: float | None = None, what="a condition"):
    """Until `condition()` holds: an event, however long a loaded machine takes to get there (the
    test's own timeout, pytest-timeout's, ends a wait for one that never comes); `timeout` only
    where the wait itself is what is checked."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while not condition():
        if deadline is not None and time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


class Agent:
    """A runtime directory, and the agent serving it (started by a cold run or by `start`)."""

    def __init__(self, directory: Path, env: dict[str, str]) -> None:
        self.directory = directory
        self.env = env
        self.process: subprocess.Popen | None = None

    def start(self, **extra: str) -> Agent:
        env = warm.agent_environment({**self.env, **extra})
        env = {k: v for k, v in env.items() if not k.startswith("ANTHROPIC_")}  # runs bring their own
        self.process = subprocess.Popen(  # as a cold run starts it: no stdio
            [sys.executable, "-c", AGENT_PROGRAM], env=env, cwd="/", stdin=DEVNULL, stdout=DEVNULL, stderr=DEVNULL
        )
        self.wait_ready()
        return self

    def wait_ready(self) -> None:
        started = self.process
        wait_until(lambda: "ready" in self.log() or (started is not None and started.poll() is not None), what="ready")
        assert "ready" in self.log(), f"the agent left before it was ready:\n{self.log()}"

    def file(self, kind: str) -> Path | None:
        """The agent's socket or pid file (named by its interpreter key), if there is one."""
        found = sorted(self.directory.glob(f"agent-*.{kind}")) if self.directory.exists() else []
        return found[0] if found else None

    @property
    def pid(self) -> int:
        return int(self.file("pid").read_text())

    @property
    def socket(self) -> Path:
        return self.file("sock")

    def log(self) -> str:
        try:
            return (self.directory / LOG_NAME).read_text()
        except FileNotFoundError:
            return ""

    def served(self) -> int:
        return self.log().count("serving a run")

    def alive(self, pid: int) -> bool:
        try:
            return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
        except OSError:
            return False

    def stop(self) -> None:
        pids = {self.process.pid} if self.process else set()
        for pid_file in self.directory.glob("agent-*.pid") if self.directory.exists() else []:
            pids.add(int(pid_file.read_text()))
        for pid in pids:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        if self.process is not None:
            self.process.wait(10)
        for pid in pids:
            wait_until(lambda: not self.alive(pid), what="the agent to leave")  # noqa: B023


@pytest.fixture
def agent(anthropic_env, tmp_path):
    # A short path: a Unix socket's path has a 108-byte limit.
    directory = Path(tempfile.mkdtemp(prefix="cw", dir="/tmp")) / "rt"
    env = {
        **os.environ,
        **anthropic_env,
        "CMDOP_TUI_CONFIG": str(tmp_path / "config.toml"),
        "CMDOP_TUI_RUNTIME_DIR": str(directory),
    }
    for name in ("CMDOP_INTENT_ROUTER", "CMDOP_TUI_NO_WARM", "CMDOP_TUI_WARM_IDLE_S"):
        env.pop(name, None)
    made = Agent(directory, env)
    try:
        yield made
    finally:
        made.stop()
        shutil.rmtree(directory.parent)  # the agent's socket and log, the sandbox's session folders


def run_cli(args, env, *, input=None, timeout=30):
    return subprocess.run(CLI + args, env=env, capture_output=True, text=True, input=input, timeout=timeout)


def events(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines()]


def test_a_cold_run_starts_an_agent_and_the_next_run_is_served_warm(fake_api, agent, tmp_path):
    (tmp_path / "a.txt").write_text("x")
    script = [tool_reply("list_dir", {"path": str(tmp_path)}), text_reply("There is a.txt.")]
    args = ["-p", "list the files", "--output-format", "stream-json"]
    fake_api.enqueue(*script)
    cold = run_cli(args, agent.env)
    assert cold.returncode == 0, cold.stderr
    agent.wait_ready()  # the cold run started it, detached
    assert agent.served() == 0, agent.log()
    fake_api.enqueue(*script)
    served = run_cli(args, agent.env)
    assert served.returncode == 0, served.stderr
    assert agent.served() == 1, agent.log()
    assert [(e["type"], e.get("text"), e.get("output")) for e in events(served.stdout)] == [
        (e["type"], e.get("text"), e.get("output")) for e in events(cold.stdout)
    ]
    assert served.stderr == cold.stderr == ""
    first, second = fake_api.requests[0].body, fake_api.requests[2].body
    assert (first["messages"], first["tools"], first["system"]) == (
        second["messages"],
        second["tools"],
        second["system"],
    )


def test_text_output_exit_codes_and_stdin(fake_api, agent):
    agent.start()  # without the API key: each run's environment brings it
    fake_api.enqueue(text_reply("Just this."))
    done = run_cli(["-p", "hi"], agent.env)
    assert (done.returncode, done.stdout, done.stderr) == (0, "Just this.\n", "")
    fake_api.enqueue(text_reply("read it"))
    done = run_cli(["-p", "-"], agent.env, input="a prompt from a pipe")
    assert done.returncode == 0 and done.stdout == "read it\n"
    assert fake_api.requests[1].body["messages"][0]["content"][0]["text"] == "a prompt from a pipe"
    fake_api.enqueue(error_reply(401, message="invalid x-api-key"))
    done = run_cli(["-p", "hi"], agent.env)
    assert done.returncode == 1 and done.stderr.startswith("cmdop-tui: error: the API key was refused")
    fake_api.enqueue(tool_reply("glob", {"pattern": "*.a"}))
    done = run_cli(["-p", "go", "--max-turns", "1"], agent.env)
    assert done.returncode == 1 and "max_turns" in done.stderr
    assert agent.served() == 4, agent.log()
    empty = run_cli(["-p", "-"], agent.env, input="")
    assert (empty.returncode, empty.stderr) == (2, "cmdop-tui: the prompt is empty\n")
    assert agent.served() == 5, agent.log()


@pytest.mark.fault
def test_a_stopped_agent_is_said_and_the_run_goes_cold_at_once(fake_api, agent):
    agent.start()
    os.kill(agent.pid, signal.SIGSTOP)  # a Ctrl-Z'd or frozen agent still accepts connections
    try:
        fake_api.enqueue(text_reply("Cold but quick."))
        started = time.monotonic()
        done = run_cli(["-p", "hi"], agent.env)
        assert time.monotonic() - started < warm.HANDSHAKE_TIMEOUT_S  # not the handshake's wait
        assert done.returncode == 0 and done.stdout == "Cold but quick.\n"
        assert "the warm agent is stopped" in done.stderr
    finally:
        os.kill(agent.pid, signal.SIGCONT)
    assert agent.served() == 0


def test_what_is_not_a_headless_run_is_refused_and_runs_cold(fake_api, agent):
    agent.start()
    usage = run_cli(["-p", "hi", "--max-turns", "zero"], agent.env)
    assert usage.returncode == 2 and "--max-turns" in usage.stderr
    fake_api.enqueue(text_reply("cold"), text_reply("cold too"), text_reply("cold three"))
    assert run_cli(["-p", "hi", "--no-warm"], agent.env).stdout == "cold\n"
    assert run_cli(["-p", "hi"], {**agent.env, "CMDOP_TUI_NO_WARM": "1"}).stdout == "cold too\n"
    other = run_cli(["-p", "hi"], {**agent.env, "PYTHONOPTIMIZE": "1"})  # another interpreter's flags
    assert other.stdout == "cold three\n"
    assert agent.served() == 0, agent.log()
    assert agent.log().count("refused: not a headless command line") == 1
    # Another interpreter set-up (here: -O) has an agent of its own, beside ours.
    wait_until(lambda: agent.log().count("ready") == 2, what="a second agent")
    assert len(list(agent.directory.glob("agent-*.sock"))) == 2
    assert agent.alive(agent.pid)


def start_stalled(fake_api, agent, gate, **options):
    fake_api.enqueue(text_reply("a long answer " * 50, stall_after=6, gate=gate, **options))
    client = subprocess.Popen(
        CLI + ["-p", "hi", "--output-format", "stream-json"],
        env=agent.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # A job of its own, as a shell makes one: in the tests' own group, were that orphaned (a
        # run started in the background by a shell that has left), Ctrl-Z's stop would be discarded.
        process_group=0,
    )
    first = json.loads(client.stdout.readline())
    while first["type"] != "token":
        first = json.loads(client.stdout.readline())
    assert agent.served() == 1, agent.log()
    return client


@pytest.mark.parametrize("signum, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_to_the_client_stops_the_turn_and_leaves_no_process(fake_api, agent, signum, code):
    agent.start()
    gate = threading.Event()
    client = start_stalled(fake_api, agent, gate)
    try:
        assert descendants(agent.pid)  # the run is the agent's, not the client's
        client.send_signal(signum)
        out, err = client.communicate(timeout=10)
    finally:
        client.kill()
        gate.set()
    assert client.returncode == code, err
    assert json.loads(out.splitlines()[-1]) == {"type": "cancelled", "reason": "ui", "message": "stopped by the user"}
    assert "cancelled" in err
    wait_until(lambda: not descendants(agent.pid), what="the run and its supervisor to end")


def test_killing_the_client_ends_the_run(fake_api, agent):
    agent.start()
    gate = threading.Event()
    client = start_stalled(fake_api, agent, gate)
    try:
        assert descendants(agent.pid)
        client.kill()
        client.wait(10)
        rest = client.stdout.read()  # the run holds our pipe until it is gone
    finally:
        gate.set()
    assert json.loads(rest.splitlines()[-1])["type"] == "cancelled"  # TERM first: it ended its turn
    wait_until(lambda: not descendants(agent.pid), what="the run and its supervisor to end")


def state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


def test_ctrl_z_and_fg_of_the_client_stop_and_resume_the_run(fake_api, agent):
    agent.start()
    gate = threading.Event()
    client = start_stalled(fake_api, agent, gate, gate_release_continues=True)
    try:
        client.send_signal(signal.SIGTSTP)
        wait_until(lambda: state(client.pid) == "T", what="the client to stop")
        wait_until(lambda: "T" in {state(pid) for pid in descendants(agent.pid)}, what="the run to stop")
        client.send_signal(signal.SIGCONT)
        wait_until(lambda: "T" not in {state(pid) for pid in descendants(agent.pid)}, what="the run to go on")
        gate.set()
        out, err = client.communicate()  # the run's end, however long a loaded machine takes
    finally:
        client.kill()
        gate.set()
    assert client.returncode == 0, err
    assert json.loads(out.splitlines()[-1])["type"] == "final"


def test_killing_a_stopped_client_ends_its_stopped_run(fake_api, agent):
    agent.start()
    gate = threading.Event()
    client = start_stalled(fake_api, agent, gate)
    try:
        client.send_signal(signal.SIGTSTP)
        wait_until(lambda: "T" in {state(pid) for pid in descendants(agent.pid)}, what="the run to stop")
        client.kill()
        client.wait(10)
        rest = client.stdout.read()
    finally:
        gate.set()
    assert json.loads(rest.splitlines()[-1])["type"] == "cancelled"  # woken to take its TERM
    wait_until(lambda: not descendants(agent.pid), what="the run and its supervisor to end")


def raw_request(agent: Agent, **fields) -> dict:
    """Speak the protocol directly, as a client of another install would."""
    body = json.dumps({**warm.request(["-p", "hi"], "unused"), **fields}).encode()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(str(agent.socket))
        socket.send_fds(sock, [HEADER.pack(len(body))], [0, 1, 2])
        sock.sendall(body)
        return json.loads(sock.makefile("rb").readline())


def test_changed_code_makes_the_agent_leave(agent, tmp_path):
    agent.start()
    assert raw_request(agent, fingerprint="another install") == {"refused": "stale"}
    assert agent.process.wait(10) == 0
    assert "exit (the installed code changed)" in agent.log()
    assert agent.file("sock") is None


def test_an_edit_to_code_the_agent_loaded_makes_it_leave(fake_api, agent):
    agent.start()
    loaded = Path(warm.__file__)  # support/warm.py: the agent has it imported
    times = loaded.stat()
    fake_api.enqueue(text_reply("fresh"))
    try:
        os.utime(loaded, ns=(times.st_atime_ns, times.st_mtime_ns + 10**9))  # as an edit would
        done = run_cli(["-p", "hi"], agent.env)
    finally:
        os.utime(loaded, ns=(times.st_atime_ns, times.st_mtime_ns))
    assert done.stdout == "fresh\n"  # run cold, from the code on disk
    assert agent.process.wait(10) == 0
    assert f"stale: {loaded} changed" in agent.log() and agent.served() == 0, agent.log()


def test_the_code_watch_counts_only_what_the_agent_imported():
    from cmdop_tui.warm_agent import CodeWatch

    watch = CodeWatch()
    assert not watch.stale(watch.fingerprint)
    unloaded = [path for path in watch.files if path.endswith(".py") and path not in set(watch.loaded())]
    assert unloaded  # a run imports those afresh: a change there is no reason to leave
    watch.files[unloaded[0]] = 0
    assert not watch.stale(watch.fingerprint)
    watch.files[str(Path(warm.__file__))] = 0
    assert watch.stale(watch.fingerprint) and watch.why.endswith("warm.py changed")
    other = CodeWatch()
    assert other.stale("another install") and "another install" in other.why


def test_the_agent_leaves_when_idle(agent):
    agent.start(CMDOP_TUI_WARM_IDLE_S="0.5")
    assert agent.process.wait(20) == 0
    assert "exit (idle)" in agent.log() and agent.file("sock") is None


def test_the_agent_leaves_when_its_runtime_directory_is_removed(agent):
    """As logind removes /run/user/UID when the last login ends: no client can reach it again."""
    agent.start(CMDOP_TUI_WARM_CHECK_S="0.05")  # idle for the default 15 minutes
    shutil.rmtree(agent.directory)
    assert agent.process.wait(20) == 0


def test_a_runtime_directory_removed_at_logout_is_not_used(monkeypatch, tmp_path):
    logind = f"/run/user/{os.getuid()}"
    linger = tmp_path / "linger"
    linger.mkdir()
    monkeypatch.setattr(warm, "LINGER_DIR", linger)
    env = {"XDG_RUNTIME_DIR": logind, "TMPDIR": str(tmp_path)}
    assert warm.agent_dir(env) == tmp_path / f"cmdop-tui-{os.getuid()}"  # gone with the ssh login
    assert warm.runtime_dir(env) == Path(logind) / "cmdop-tui"  # the session's own state stays there
    (linger / pwd.getpwuid(os.getuid()).pw_name).touch()  # loginctl enable-linger
    assert warm.agent_dir(env) == Path(logind) / "cmdop-tui"
    assert warm.agent_dir({**env, "XDG_RUNTIME_DIR": str(tmp_path / "rt")}) == tmp_path / "rt" / "cmdop-tui"
    assert warm.agent_dir({**env, "CMDOP_TUI_RUNTIME_DIR": "/x"}) == Path("/x")


def test_the_runtime_directory_must_be_private(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o755)
    shared.chmod(0o755)
    assert not warm.private_dir(shared, create=False)
    (tmp_path / "link").symlink_to(tmp_path / "private")
    assert warm.private_dir(tmp_path / "private", create=True)
    assert not warm.private_dir(tmp_path / "link", create=False)


NOBODY = 65534
SYSTEM_PYTHON = "/usr/bin/python3"  # our venv's may live where another user cannot read it


@pytest.mark.skipif(os.getuid() != 0 or not os.access(SYSTEM_PYTHON, os.X_OK), reason="needs root and a system python3")
def test_another_user_cannot_connect(agent, tmp_path):
    agent.start()
    probe = "import socket, sys; s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])"
    denied = subprocess.run(
        [SYSTEM_PYTHON, "-c", probe, str(agent.socket)],
        user=NOBODY,
        cwd="/",
        capture_output=True,
        text=True,
    )
    assert denied.returncode != 0 and "PermissionError" in denied.stderr
    # Past the directory (were it open), the peer's uid is what the agent checks.
    open_dir = Path(tempfile.mkdtemp(prefix="cp", dir="/tmp"))
    try:
        open_dir.chmod(0o755)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(open_dir / "s"))
        os.chmod(open_dir / "s", 0o777)
        listener.listen(1)
        other = subprocess.Popen(
            [SYSTEM_PYTHON, "-c", probe + "; s.recv(1)", str(open_dir / "s")], user=NOBODY, cwd="/"
        )
        conn, _ = listener.accept()
        assert warm.peer_uid(conn) == NOBODY != os.getuid()
        conn.close()
        other.wait(10)
        listener.close()
    finally:
        (open_dir / "s").unlink(missing_ok=True)
        open_dir.rmdir()


async def test_a_stop_of_ask_machine_over_ssh_ends_the_warm_run(fake_api, agent, ssh_hosts, tmp_path):
    """The remote end of ask_machine, served warm: a Stop (TERM to the remote group, then KILL)
    reaches the run through its client, and nothing is left running there."""
    import asyncio

    from cmdop_tui.machines.fleet import Fleet
    from cmdop_tui.machines.inventory import Inventory
    from cmdop_tui.machines.spec import MachineSpec
    from cmdop_tui.machines.ssh import SshOptions
    from cmdop_tui.tools.ask import ASK_MACHINE
    from cmdop_tui.tools.base import ToolContext
    from cmdop_tui.tools.registry import run_tool

    names = ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "CMDOP_TUI_CONFIG", "CMDOP_TUI_RUNTIME_DIR", "HOME")
    lab = ssh_hosts(1, env={name: agent.env[name] for name in names})
    cmdop = str(Path(sys.executable).with_name("cmdop-tui"))
    fleet = Fleet(Inventory.load([MachineSpec("there", "alpha", cmdop=cmdop)], lab.config), SshOptions(lab.config))
    nested: list[dict] = []
    context = ToolContext(
        call_id="toolu_warm", cwd=tmp_path, progress=lambda text, stream: None, machines=fleet, nested=nested.append
    )
    fake_api.enqueue(text_reply("warming up"))  # cold; it starts the agent there, in ssh's environment
    assert (await run_tool(ASK_MACHINE, {"hostname": "there", "prompt": "hi"}, context)).content == "warming up"
    agent.wait_ready()
    nested.clear()
    gate = threading.Event()
    fake_api.enqueue(text_reply("a long answer " * 50, stall_after=6, gate=gate))
    task = asyncio.create_task(run_tool(ASK_MACHINE, {"hostname": "there", "prompt": "hi"}, context))
    try:
        while not any(event["type"] == "token" for event in nested):
            assert not task.done(), task.result()
            await asyncio.sleep(0.01)
        assert agent.served() == 1, agent.log()
        assert descendants(agent.pid)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await asyncio.to_thread(wait_until, lambda: not descendants(agent.pid), 10.0, "the warm run to end")
    finally:
        gate.set()
        await fleet.close()


def test_what_is_read_at_import_keys_the_agent(monkeypatch):
    """An agent imported the SDK under its own environment: a client whose import-time settings
    differ (SDK logging, PYTHON*) must reach another agent, not this one."""
    monkeypatch.delenv("ANTHROPIC_LOG", raising=False)
    before = warm.compatibility()
    monkeypatch.setenv("ANTHROPIC_LOG", "debug")
    assert warm.compatibility() != before
    monkeypatch.delenv("ANTHROPIC_LOG")
    monkeypatch.setenv("PYTHONWARNINGS", "error")
    assert warm.compatibility() != before
    monkeypatch.delenv("PYTHONWARNINGS")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "a run's own")  # read per run: the same agent
    assert warm.compatibility() == before


def test_a_run_starts_only_once_its_client_says_go(fake_api, agent):
    """A client that gave up before the agent's ok (its handshake timed out) runs the prompt
    cold itself; the run the agent had forked for it must then never start."""
    agent.start()
    fake_api.enqueue(text_reply("never asked"))
    program = "import json; from cmdop_tui.support import warm; print(json.dumps(warm.request(['-p', 'hi'], warm.compatibility())))"
    body = subprocess.run([sys.executable, "-c", program], env=agent.env, capture_output=True, check=True).stdout
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(str(agent.socket))
        socket.send_fds(sock, [HEADER.pack(len(body))], [0, 1, 2])
        sock.sendall(body)
        assert "ok" in json.loads(sock.makefile("rb").readline()), agent.log()
        # time enough for a run that did not wait for the go to reach the model
        assert not fake_api.wait_for_requests(1, timeout=3.0)
    wait_until(lambda: not descendants(agent.pid), what="the supervisor and its run to end")
    assert agent.served() == 1 and fake_api.requests == []


RAW_CLIENT = """
import json, socket, sys
from cmdop_tui.support import warm
body = json.dumps(warm.request(["-p", "hi"], "unused")).encode()
with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
    sock.connect(sys.argv[1])
    socket.send_fds(sock, [warm.HEADER.pack(len(body))], [0, 1, 2])
    sock.sendall(body)
    print(repr(sock.makefile("rb").readline()))
"""


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")
def test_a_caller_in_other_namespaces_is_refused_though_its_uid_is_the_users(agent):
    """A sandboxed command has the user's uid; were a socket reachable from it (the sandbox's
    filter refuses Unix sockets), the agent still refuses a caller outside its own mount and
    PID namespaces."""
    agent.start()
    agent.wait_ready()
    folder = str(agent.socket.parent)
    caller = [
        "bwrap", "--unshare-user", "--unshare-pid", "--ro-bind", "/", "/", "--dev", "/dev",
        "--proc", "/proc", "--bind", folder, folder, "--die-with-parent", "--",
        sys.executable, "-c", RAW_CLIENT, str(agent.socket),
    ]  # fmt: skip
    done = subprocess.run(caller, capture_output=True, text=True, timeout=30, stdin=DEVNULL)
    closed = done.stdout.strip() == "b''" or any(e in done.stderr for e in ("BrokenPipeError", "ConnectionResetError"))
    assert closed, done.stderr  # hung up on without a word, nothing run
    wait_until(lambda: "refused: another namespace" in agent.log(), what="the refusal in the log")
    assert "serving a run" not in agent.log()
