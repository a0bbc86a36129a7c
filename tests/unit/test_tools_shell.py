"""execute_command against real processes: output, exit codes, timeouts, cancellation, limits."""

from __future__ import annotations

import asyncio
import os
import re
import resource
import shlex
import signal
import time
from pathlib import Path

import pytest

from cmdop_tui.tools.base import ToolContext, ToolResult
from cmdop_tui.tools.shell import EXECUTE_COMMAND

UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


class Recorder:
    """A progress sink that keeps what it is sent and signals the first line of output."""

    def __init__(self) -> None:
        self.chunks: list[tuple[str, str]] = []
        self.first_output = asyncio.Event()

    def __call__(self, text: str, stream: str) -> None:
        self.chunks.append((text, stream))
        self.first_output.set()

    def text(self, stream: str = "stdout") -> str:
        return "".join(text for text, name in self.chunks if name == stream)


async def run(command: str, session_dir: Path, recorder: Recorder | None = None, **extra: object) -> ToolResult:
    """Run execute_command with `extra` arguments in a session whose cwd is `session_dir`."""
    ctx = ToolContext(call_id="t", cwd=session_dir, progress=recorder or Recorder())
    return await EXECUTE_COMMAND.run({"command": command, **extra}, ctx)


def group_alive(pgid: int) -> bool:
    """Whether any live (non-zombie) process is still in the process group."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    # Zombies still answer kill(0) until their new parent reaps them; they run nothing.
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text()
        except (OSError, ValueError):
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


async def assert_group_gone(pgid: int, within_s: float = 2.0) -> None:
    deadline = time.monotonic() + within_s
    while group_alive(pgid):
        assert time.monotonic() < deadline, f"process group {pgid} still alive"
        await asyncio.sleep(0.01)


def assert_inert(text: str) -> None:
    assert not UNSAFE.search(text), repr(text[:200])


async def test_output_and_exit_code(tmp_path: Path) -> None:
    recorder = Recorder()
    result = await run("echo hello", tmp_path, recorder)
    assert not result.is_error
    assert result.content == "exit code: 0\n\nstdout:\nhello"
    assert recorder.chunks == [("hello\n", "stdout")]


async def test_nonzero_exit_is_not_an_error_and_stderr_is_reported(tmp_path: Path) -> None:
    recorder = Recorder()
    result = await run("echo out; echo oops >&2; exit 3", tmp_path, recorder)
    assert not result.is_error
    assert result.content == "exit code: 3\n\nstdout:\nout\n\nstderr:\noops"
    assert recorder.text("stderr") == "oops\n"


async def test_no_output(tmp_path: Path) -> None:
    result = await run("true", tmp_path)
    assert result.content == "exit code: 0\n\n(no output)"


async def test_stdin_is_empty(tmp_path: Path) -> None:
    result = await run("cat; echo done", tmp_path, timeout_ms=10_000)
    assert result.content.endswith("stdout:\ndone")


async def test_killed_by_a_signal(tmp_path: Path) -> None:
    result = await run("kill -TERM $$", tmp_path)
    assert not result.is_error
    assert result.content.startswith("exit code: -15 (killed by SIGTERM)")


async def test_runs_in_ctx_cwd_and_resolves_relative_cwd(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    assert (await run("pwd", tmp_path)).content.endswith(f"stdout:\n{tmp_path}")
    result = await run("pwd", tmp_path, cwd="sub")
    assert result.content.endswith(f"stdout:\n{tmp_path / 'sub'}")


async def test_spawn_failures_are_error_results(tmp_path: Path) -> None:
    result = await run("pwd", tmp_path, cwd="nope")
    assert result.is_error
    assert "could not start the command" in result.content and "nope" in result.content
    result = await run("echo a\0b", tmp_path)
    assert result.is_error and "could not start the command" in result.content


async def test_timeout_kills_the_whole_group_including_grandchildren(tmp_path: Path) -> None:
    result = await run("echo $$; sleep 30 & sleep 30; wait", tmp_path, timeout_ms=300)
    assert result.is_error
    assert result.content.startswith("error: the command timed out after 300 ms")
    pgid = int(re.search(r"stdout:\n(\d+)", result.content).group(1))  # type: ignore[union-attr]
    await assert_group_gone(pgid)


async def test_cancellation_kills_the_group_and_propagates(tmp_path: Path) -> None:
    recorder = Recorder()
    task = asyncio.create_task(run("echo $$; sleep 30 & sleep 30; wait", tmp_path, recorder))
    await recorder.first_output.wait()
    pgid = int(recorder.text().strip())
    assert group_alive(pgid)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await assert_group_gone(pgid, within_s=1.0)
    with pytest.raises(ChildProcessError):
        os.waitpid(pgid, os.WNOHANG)  # the shell was reaped, not left a zombie


async def test_background_job_holding_the_pipe_does_not_hang(tmp_path: Path) -> None:
    result = await run("echo $$; sleep 30 &", tmp_path, timeout_ms=20_000)
    pgid = int(re.search(r"stdout:\n(\d+)", result.content).group(1))  # type: ignore[union-attr]
    try:
        assert not result.is_error
        assert "background processes still hold the output open" in result.content
    finally:
        os.killpg(pgid, signal.SIGKILL)


async def test_huge_output_uses_bounded_memory_and_is_cut_with_a_note(tmp_path: Path) -> None:
    streamed = {"stdout": 0, "stderr": 0}

    def count(text: str, stream: str) -> None:
        streamed[stream] += len(text)

    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    ctx = ToolContext(call_id="t", cwd=tmp_path, progress=count)
    command = "head -c 100000000 /dev/zero | tr '\\0' a; echo ERR >&2"
    result = await EXECUTE_COMMAND.run({"command": command}, ctx)
    rss_growth_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before
    assert streamed == {"stdout": 100_000_000, "stderr": 4}
    assert rss_growth_kib < 50_000, "output was buffered in memory"
    assert not result.is_error
    assert "[... 99,970,004 bytes cut ...]" in result.content  # stderr took 4 of 30,000
    assert result.content.endswith("stderr:\nERR")
    assert len(result.content) < 30_200


async def test_binary_output_is_inert(tmp_path: Path) -> None:
    recorder = Recorder()
    command = "head -c 20000 /dev/urandom; printf '\\0\\033\\302\\233'"
    result = await run(command, tmp_path, recorder)
    assert_inert(result.content)
    for text, _ in recorder.chunks:
        assert_inert(text)


async def test_escape_sequences_are_inert_in_progress_and_result(tmp_path: Path) -> None:
    recorder = Recorder()
    command = "printf '\\033]52;c;aGVsbG8=\\a\\033[31mred\\033[0m\\033]0;title\\033\\\\\\n'"
    result = await run(command, tmp_path, recorder)
    assert recorder.text() == "red\n"
    assert result.content == "exit code: 0\n\nstdout:\nred"


async def test_utf8_split_across_chunks_survives(tmp_path: Path) -> None:
    fifo = tmp_path / "go"
    os.mkfifo(fifo)
    recorder = Recorder()
    # 'é' is \303\251: the shell writes its first byte, then waits for us before the second.
    command = f"printf 'a\\303'; read line < {shlex.quote(str(fifo))}; printf '\\251b\\n'"
    task = asyncio.create_task(run(command, tmp_path, recorder))
    await recorder.first_output.wait()
    await asyncio.to_thread(fifo.write_text, "go\n")
    result = await task
    assert recorder.chunks == [("a", "stdout"), ("éb\n", "stdout")]
    assert result.content.endswith("stdout:\naéb")


async def test_big_stdout_does_not_crowd_out_stderr(tmp_path: Path) -> None:
    result = await run("head -c 200000 /dev/zero | tr '\\0' x; echo 'real problem' >&2", tmp_path)
    assert result.content.endswith("stderr:\nreal problem")
    assert "bytes cut" in result.content


async def test_a_failing_progress_sink_does_not_break_the_command(tmp_path: Path) -> None:
    def broken(text: str, stream: str) -> None:
        raise RuntimeError("display gone")

    ctx = ToolContext(call_id="t", cwd=tmp_path, progress=broken)
    result = await EXECUTE_COMMAND.run({"command": "echo one; echo two"}, ctx)
    assert result.content == "exit code: 0\n\nstdout:\none\ntwo"


def test_tool_metadata() -> None:
    assert EXECUTE_COMMAND.name == "execute_command"
    assert EXECUTE_COMMAND.tags == {"shell", "local"}
    assert EXECUTE_COMMAND.mutating and EXECUTE_COMMAND.core
    assert EXECUTE_COMMAND.input_schema["required"] == ["command"]
