"""No process a tool call starts outlives the app: real process trees, a real SIGKILL.

Every command here starts a pipeline, a background job, a grandchild that calls setsid and a
double-forked daemon; each process says `TAG PID` on a FIFO when it runs (the tests wait on that,
never on a clock). Every test's processes carry a marker in their environment, and the test
fails if any is left at its end (and kills it, so nothing outlives the tests either).
"""

from __future__ import annotations

import asyncio
import os
import select
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from cmdop_tui.machines import process as process_module
from cmdop_tui.machines.machine import MachineResult
from cmdop_tui.machines.process import run_process
from cmdop_tui.support import containment

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="containment is Linux-only")

MARKER = "CMDOP_CONTAINMENT_TEST"
TREE_TAGS = {"main", "a1", "a2", "b", "c1", "c2", "d"}


def tree_command(fifo: Path) -> str:
    """The main shell, a background pipeline, a setsid grandchild, a daemon, a foreground pipeline."""

    def announce(tag: str, then: str) -> str:
        return f"bash -c 'echo {tag} $$ > {fifo}; exec {then}'"

    return (
        f"echo main $$ > {fifo}; "
        f"{announce('a1', 'sleep 300')} | {announce('a2', 'cat')} & "
        f"setsid {announce('b', 'sleep 300')} & "
        f"( {announce('d', 'sleep 300')} & ); "
        f"{announce('c1', 'sleep 300')} | {announce('c2', 'sleep 300')}"
    )


def job(tag: str, fifo: Announcements) -> str:
    """A background job done right: its output away from the command's pipes."""
    return f"bash -c 'echo {tag} $$ > {fifo.path}; exec sleep 300' > /dev/null 2>&1"


class Announcements:
    """The read end of a FIFO the commands write `TAG PID` lines to (we also hold a write end, so
    the reader never sees end-of-file between writers)."""

    def __init__(self, path: Path) -> None:
        os.mkfifo(path)
        self.path = path
        self.read_fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        self.write_fd = os.open(path, os.O_WRONLY)
        self.buffer = b""
        self.pids: dict[str, int] = {}

    def wait_for(self, tags: set[str], within_s: float = 20.0) -> dict[str, int]:
        deadline = time.monotonic() + within_s
        while not tags <= self.pids.keys():
            left = deadline - time.monotonic()
            assert left > 0, f"never announced: {sorted(tags - self.pids.keys())}"
            if select.select([self.read_fd], [], [], left)[0]:
                self.buffer += os.read(self.read_fd, 4096)
                *lines, self.buffer = self.buffer.split(b"\n")
                for line in lines:
                    tag, pid = line.decode().split()
                    self.pids[tag] = int(pid)
        return {tag: self.pids[tag] for tag in tags}

    def close(self) -> None:
        os.close(self.read_fd)
        os.close(self.write_fd)


def running(pid: int) -> bool:
    """Whether `pid` is a live process (a zombie runs nothing)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2] != "Z"


def marked(marker: str) -> set[int]:
    """Live processes with our marker in their environment (not this one, nor its zygote)."""
    needle = f"{MARKER}={marker}".encode()
    ours = {os.getpid()}
    if containment._ZYGOTE.process is not None:
        ours.add(containment._ZYGOTE.process.pid)
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) in ours:
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if needle in environ.split(b"\0") and running(int(entry.name)):
            found.add(int(entry.name))
    return found


def assert_all_gone(pids: dict[str, int], marker: str, within_s: float = 5.0) -> None:
    deadline = time.monotonic() + within_s
    while (left := {tag: pid for tag, pid in pids.items() if running(pid)}) or marked(marker):
        assert time.monotonic() < deadline, f"still running: {left or marked(marker)}"
        time.sleep(0.01)


@pytest.fixture
def marker(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A fresh marker in our environment (so in every command's); nothing marked may be left."""
    value = uuid.uuid4().hex
    monkeypatch.setenv(MARKER, value)
    yield value
    left = marked(value)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left, f"processes left behind: {left}"


@pytest.fixture
def fifo(tmp_path: Path) -> Iterator[Announcements]:
    announcements = Announcements(tmp_path / "announce")
    yield announcements
    announcements.close()


APP = textwrap.dedent(
    """
    import asyncio, sys
    from pathlib import Path
    from cmdop_tui.machines.local import LocalMachine

    async def main():
        machine = LocalMachine(Path(sys.argv[1]))
        result = await machine.run_command(
            sys.argv[2], cwd=None, timeout_ms=600_000, progress=lambda text, stream: None, output_limit=30_000
        )
        print("finished", result.text.splitlines()[0], flush=True)
        sys.stdin.read()  # until the test closes our stdin: then a normal exit

    asyncio.run(main())
    """
)


def start_app(command: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """A real child Python process running a command as the app does (LocalMachine.run_command)."""
    return subprocess.Popen(
        [sys.executable, "-c", APP, str(cwd), command],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )


# Over 1 MB of environment: more than one message to the supervisor holds (each variable under
# the kernel's 128 kB), so the request goes in a file; the command is contained all the same.
LARGE_ENVIRONMENT = {f"CMDOP_TEST_BIG_{n}": "x" * 100_000 for n in range(14)}


@pytest.mark.parametrize(
    "extra",
    [{}, pytest.param(LARGE_ENVIRONMENT, marks=pytest.mark.fault)],
    ids=["environment", "large environment"],
)
def test_sigkill_of_the_app_kills_the_whole_tree(
    tmp_path: Path, marker: str, fifo: Announcements, extra: dict[str, str]
) -> None:
    app = start_app(tree_command(fifo.path), tmp_path, {**os.environ, **extra})
    try:
        pids = fifo.wait_for(TREE_TAGS)
        assert all(running(pid) for pid in pids.values())
        os.kill(app.pid, signal.SIGKILL)
        assert app.wait(timeout=10) == -signal.SIGKILL
        assert_all_gone(pids, marker)
    finally:
        app.kill()
        app.wait()


@pytest.mark.parametrize("ending", ["sigkill", "normal exit"])
def test_background_jobs_outlive_the_command_but_not_the_app(
    tmp_path: Path, marker: str, fifo: Announcements, ending: str
) -> None:
    app = start_app(f"{job('j1', fifo)} & setsid {job('j2', fifo)} & echo started", tmp_path)
    try:
        assert app.stdout is not None and app.stdin is not None
        assert app.stdout.readline() == "finished exit code: 0\n"
        pids = fifo.wait_for({"j1", "j2"})
        assert all(map(running, pids.values())), "a deliberate background job is killed while the app lives"
        if ending == "sigkill":
            os.kill(app.pid, signal.SIGKILL)
        else:
            app.stdin.close()
        app.wait(timeout=10)
        assert_all_gone(pids, marker)
    finally:
        app.kill()
        app.wait()


async def test_stop_kills_the_whole_tree(tmp_path: Path, marker: str, fifo: Announcements) -> None:
    task = asyncio.create_task(run(tree_command(fifo.path), tmp_path))
    pids = await asyncio.to_thread(fifo.wait_for, TREE_TAGS)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert_all_gone(pids, marker, within_s=1.0)


async def test_timeout_kills_the_whole_tree(tmp_path: Path, marker: str, fifo: Announcements) -> None:
    task = asyncio.create_task(run(tree_command(fifo.path), tmp_path, timeout_ms=3_000))
    pids = await asyncio.to_thread(fifo.wait_for, TREE_TAGS)
    result = await task
    assert result.is_error and result.text.startswith("error: the command timed out after 3000 ms")
    assert_all_gone(pids, marker, within_s=1.0)


async def test_the_end_of_a_session_kills_what_finished_commands_left(
    tmp_path: Path, marker: str, fifo: Announcements
) -> None:
    result = await run(f"{job('j1', fifo)} & ( setsid {job('j2', fifo)} & ); echo started", tmp_path)
    assert result.text == "exit code: 0\n\nstdout:\nstarted"
    pids = fifo.wait_for({"j1", "j2"})
    assert all(map(running, pids.values()))
    assert containment.end_background_jobs() >= 1
    assert_all_gone(pids, marker, within_s=1.0)


async def test_a_command_that_starts_nothing_leaves_no_supervisor(tmp_path: Path, marker: str) -> None:
    result = await run("echo hello; exit 7", tmp_path)
    assert result.text == "exit code: 7\n\nstdout:\nhello"
    assert_all_gone({}, marker, within_s=1.0)


async def test_without_containment_commands_run_as_before(
    tmp_path: Path, marker: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def unavailable(
        argv: list[str], cwd: Path | None, env: object = None, opens: object = (), output_fd: object = None
    ) -> None:
        return None

    monkeypatch.setattr(process_module, "spawn_contained", unavailable)
    assert (
        await run("echo out; echo err >&2; exit 3", tmp_path)
    ).text == "exit code: 3\n\nstdout:\nout\n\nstderr:\nerr"
    result = await run("echo $$; sleep 30", tmp_path, timeout_ms=300)
    assert result.is_error and "timed out" in result.text
    assert_all_gone({}, marker, within_s=2.0)
    with open(tmp_path / "out.log", "a+b") as file:  # a background job's way: output to its file
        result = await run_process(
            ["/bin/bash", "-c", "echo out; echo err >&2"],
            cwd=tmp_path,
            timeout_ms=60_000,
            progress=lambda text, stream: None,
            output_fd=file.fileno(),
        )
    assert result.text == "exit code: 0\n\nstdout:\nout\nerr" and (tmp_path / "out.log").read_text() == "out\nerr\n"


@pytest.mark.fault
async def test_where_the_supervisor_cannot_start_commands_are_refused_not_run_uncontained(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Containment fails closed: a supervisor that exits at start (here: a script in its place
    that does) refuses every command, and none of them runs."""
    broken = tmp_path / "supervisor.py"
    broken.write_text("import sys\nsys.exit(1)\n")
    monkeypatch.setattr(containment, "_SCRIPT", broken)
    monkeypatch.setattr(containment, "_ZYGOTE", containment._Zygote())
    ran = tmp_path / "ran"
    for _attempt in range(2):  # refused at once the second time (not tried again)
        result = await run(f"touch {ran}", tmp_path)
        assert result.is_error and "refused" in result.text and "supervisor did not start" in result.text
    assert not ran.exists()
    assert containment.start() is False


async def run(command: str, cwd: Path, timeout_ms: int = 60_000) -> MachineResult:
    return await run_process(
        ["/bin/bash", "-c", command], cwd=cwd, timeout_ms=timeout_ms, progress=lambda text, stream: None
    )
