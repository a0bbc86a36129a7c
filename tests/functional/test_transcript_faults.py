"""Durable or loud: a transcript on a full disk, removed or replaced while the app runs, or with
nowhere to go, never loses a record nor leaves a torn one, and what happens is said at once.

The full disk is a real one: a small tmpfs mounted for the test (root only; skipped elsewhere).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import full_disk
import pytest
from fake_anthropic import text_reply, tool_reply
from tui_helpers import finish_turn, make_app, notices, submit, wait_until

from cmdop_tui import transcripts
from cmdop_tui.agent.history import text_block, tool_result_block
from cmdop_tui.agent.messages import message_text
from cmdop_tui.transcripts import INTERRUPTED_RESULT, Transcript, load
from cmdop_tui.transcripts.records import parse_record
from cmdop_tui.transcripts.repair import UNSTORED_RESULT

pytestmark = pytest.mark.fault

CLI = [sys.executable, "-m", "cmdop_tui"]


@contextlib.contextmanager
def small_filesystem(path: Path, size: str = "256k", *options: str) -> Iterator[Path]:
    """A tmpfs of `size` mounted at `path` for the duration (root only: else the test is skipped)."""
    try:
        with full_disk.small_filesystem(path, size, *options) as mounted:
            yield mounted
    except full_disk.NoFilesystem as exc:
        pytest.skip(str(exc))


def lines_of(path: Path) -> list[bytes]:
    """The file's lines, checked whole: it ends with a newline and every line is a record."""
    raw = path.read_bytes()
    assert raw.endswith(b"\n"), "the file ends on a torn record"
    lines = raw.split(b"\n")[:-1]
    assert all(parse_record(line) is not None for line in lines), "a torn record inside the file"
    return lines


def prompt(n: int, size: int = 700) -> dict[str, object]:
    return {"op": "append", "role": "user" if n % 2 == 0 else "assistant", "blocks": [text_block(f"{n} " * size)]}


# --- the writer ----------------------------------------------------------------------------


def test_a_full_disk_holds_records_in_memory_and_writes_them_in_order_when_space_returns(tmp_path: Path) -> None:
    with small_filesystem(tmp_path / "fs") as fs, Transcript.create(fs) as transcript:
        transcript.append(prompt(0))
        filler = full_disk.fill(fs)
        failures = 0
        for n in range(1, 40):
            try:
                transcript.append(prompt(n, size=n * 37))  # sizes that cut writes at every point
            except OSError:
                failures += 1
            lines_of(transcript.path)  # never a torn record, even mid-way
        assert failures > 0 and transcript.held > 0
        filler.unlink()
        transcript.event("final", text="done")
        assert transcript.held == 0
        loaded = load(transcript.path)
        assert [message_text(m).split()[0] for m in loaded.messages] == [str(n) for n in range(40)]
        assert loaded.notes == [] and loaded.events[-1]["kind"] == "final"
        assert len(lines_of(transcript.path)) == 1 + 40 + 1


def test_close_counts_what_the_full_disk_kept_back(tmp_path: Path) -> None:
    with small_filesystem(tmp_path / "fs") as fs:
        transcript = Transcript.create(fs)
        full_disk.fill(fs)
        with pytest.raises(OSError):
            for n in range(20):
                transcript.append(prompt(n))
        transcript.close()
        assert transcript.held > 0
        lines_of(transcript.path)


def test_memory_held_for_a_full_disk_is_bounded_and_the_gap_is_marked(tmp_path: Path, monkeypatch) -> None:
    from cmdop_tui.transcripts import transcript as writer

    monkeypatch.setattr(writer, "HELD_LIMIT_BYTES", 20_000)  # a few records' worth
    with small_filesystem(tmp_path / "fs") as fs, Transcript.create(fs) as transcript:
        transcript.append(prompt(0))
        filler = full_disk.fill(fs)
        let_go = []
        for n in range(1, 30):
            try:
                transcript.append(prompt(n))
            except transcripts.HeldLimitError:
                let_go.append(n)
            except OSError:
                pass  # held
        assert let_go and transcript.dropped == len(let_go) and transcript.held < 30 - len(let_go)
        filler.unlink()
        transcript.append(prompt(30))
        assert transcript.held == 0
        loaded = load(transcript.path)
        records = [json.loads(line) for line in lines_of(transcript.path)]
        kept = [int(r["blocks"][0]["text"].split()[0]) for r in records if r["op"] == "append"]
        assert kept == [n for n in range(31) if n not in let_go]  # in order; only those let go missing
        assert any(f"{len(let_go)} record(s) before it were never written" in note for note in loaded.notes)
        lines_of(transcript.path)


def test_a_removed_transcript_is_written_again_whole(tmp_path: Path) -> None:
    told: list[str] = []
    with Transcript.create(tmp_path) as transcript:
        transcript.listeners.append(told.append)
        transcript.append(prompt(0))
        transcript.append(prompt(1))
        transcript.path.unlink()
        transcript.append(prompt(2))
        assert [message_text(m).split()[0] for m in load(transcript.path).messages] == ["0", "1", "2"]
        assert len(told) == 1 and "removed" in told[0]
        transcript.append(prompt(3))  # said once: the file is ours again
        assert len(told) == 1 and len(load(transcript.path).messages) == 4
        with pytest.raises(transcripts.SessionLockedError):  # and locked, as the first was
            Transcript.open(transcript.path)


def test_a_replaced_transcript_is_written_again_and_the_other_file_kept(tmp_path: Path) -> None:
    told: list[str] = []
    with Transcript.create(tmp_path) as transcript:
        transcript.listeners.append(told.append)
        transcript.append(prompt(0))
        stranger = tmp_path / "stranger"
        stranger.write_text("not a transcript\n")
        stranger.replace(transcript.path)
        transcript.append(prompt(1))
        assert len(load(transcript.path).messages) == 2
        assert (tmp_path / f"{transcript.path.name}.replaced").read_text() == "not a transcript\n"
        assert "replaced" in told[0]


def test_a_removed_sessions_directory_is_made_again(tmp_path: Path) -> None:
    directory = tmp_path / "sessions"
    with Transcript.create(directory) as transcript:
        transcript.append(prompt(0))
        transcript.path.unlink()
        directory.rmdir()
        transcript.append(prompt(1))
        assert len(load(transcript.path).messages) == 2


# --- headless mode ---------------------------------------------------------------------------


@pytest.fixture
def env(anthropic_env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    return {**os.environ, **anthropic_env, "CMDOP_TUI_CONFIG": str(tmp_path / "config.toml")}


class Child:
    """A `-p` run in stream-json: its events read as they come, its stderr gathered."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        self.process = subprocess.Popen(CLI + args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.stderr: list[str] = []
        self.said = threading.Condition()
        self._reader = threading.Thread(target=self._read_stderr, daemon=True)
        self._reader.start()

    def _read_stderr(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            with self.said:
                self.stderr.append(line)
                self.said.notify_all()

    def event(self, kind: str) -> dict[str, object]:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            event = json.loads(line)
            if event["type"] == kind:
                return event
        raise AssertionError(f"the run ended before a {kind} event")

    def wait_said(self, words: str, timeout: float = 10) -> str:
        with self.said:
            self.said.wait_for(lambda: any(words in line for line in self.stderr), timeout)
            return next(line for line in self.stderr if words in line)

    def finish(self) -> tuple[int, str, str]:
        assert self.process.stdout is not None
        out = self.process.stdout.read()  # stderr is the reader's alone
        self.process.wait(timeout=30)
        self._reader.join(timeout=5)
        return self.process.returncode, out, "".join(self.stderr)


def sessions_directory(env: dict[str, str]) -> Path:
    return Path(env["HOME"]) / ".local" / "share" / "cmdop-tui" / "sessions"


def test_full_disk_mid_session_said_at_once_then_caught_up(fake_api, env, tmp_path: Path) -> None:
    gate = threading.Event()
    fake_api.enqueue(
        tool_reply("execute_command", {"command": "echo ran-it; seq 1 3000"}, id="toolu_01FULL"),
        text_reply("All finished: " + "words " * 200, stall_after=2, gate=gate, gate_release_continues=True),
        text_reply("Nothing was interrupted."),
    )
    with small_filesystem(sessions_directory(env), "512k") as fs:
        child = Child(["-p", "run it", "--output-format", "stream-json", "--yes"], env)
        child.event("tool_start")
        filler = full_disk.fill(fs)
        assert fake_api.wait_for_requests(2, timeout=20)  # the tool's result is held by now
        warning = child.wait_said("cannot be written")
        assert "the disk is full" in warning and child.process.poll() is None  # said while it runs
        filler.unlink()
        gate.set()
        code, _out, stderr = child.finish()
        assert code == 0, stderr
        assert "is written again: nothing was lost" in stderr and "Traceback" not in stderr, stderr
        (info,) = transcripts.list_sessions()
        lines_of(info.path)
        loaded = load(info.path)
        assert loaded.notes == []
        assert message_text(loaded.messages[-1]).startswith("All finished")
        continued = subprocess.run(
            CLI + ["--continue", "-p", "was it interrupted?"], env=env, capture_output=True, text=True, timeout=30
        )
    assert continued.returncode == 0, continued.stderr
    assert "interrupted" not in continued.stderr
    sent = json.dumps(fake_api.requests[2].body["messages"])
    assert "ran-it" in sent and INTERRUPTED_RESULT not in sent


def test_a_disk_full_to_the_end_exits_3_and_says_what_is_missing(fake_api, env) -> None:
    fake_api.enqueue(tool_reply("execute_command", {"command": "seq 1 3000"}), text_reply("The answer."))
    with small_filesystem(sessions_directory(env), "512k") as fs:
        child = Child(["-p", "run it", "--output-format", "stream-json", "--yes"], env)
        child.event("tool_start")
        full_disk.fill(fs)
        code, out, stderr = child.finish()
        (info,) = transcripts.list_sessions()
        lines_of(info.path)
    assert code == 3, stderr
    assert "The answer." in out and "could not be written" in stderr and "Traceback" not in stderr
    assert stderr.count("cannot be written (the disk is full)") == 1


def test_xdg_data_home_that_is_a_file_runs_without_a_transcript(fake_api, env, tmp_path: Path) -> None:
    fake_api.enqueue(text_reply("Answered anyway."))
    not_a_directory = tmp_path / "data-file"
    not_a_directory.write_text("")
    done = subprocess.run(
        CLI + ["-p", "hello"],
        env={**env, "XDG_DATA_HOME": str(not_a_directory)},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Answered anyway.\n" and "Traceback" not in done.stderr
    assert done.stderr.count("no transcript for this session") == 1


def test_a_read_only_data_directory_runs_without_a_transcript(fake_api, env) -> None:
    fake_api.enqueue(text_reply("Answered anyway."), text_reply("Still answering."))
    data = sessions_directory(env).parent
    with small_filesystem(data, "64k", "ro"):
        done = subprocess.run(CLI + ["-p", "hello"], env=env, capture_output=True, text=True, timeout=30)
        again = subprocess.run(CLI + ["--continue", "-p", "hello"], env=env, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Answered anyway.\n" and "Traceback" not in done.stderr
    assert done.stderr.count("no transcript for this session") == 1
    assert again.returncode == 0 and "Traceback" not in again.stderr


# --- the TUI ---------------------------------------------------------------------------------

TUI_SIZE = (100, 30)


async def test_the_tui_says_a_full_disk_at_once_and_when_it_is_over(fake_api, isolated_home: Path) -> None:
    fake_api.enqueue(text_reply("first"), text_reply("second " * 300), text_reply("third"))
    app = make_app(fake_api)
    with small_filesystem(isolated_home / ".local" / "share" / "cmdop-tui" / "sessions", "256k") as fs:
        async with app.run_test(size=TUI_SIZE) as pilot:
            await wait_until(pilot, lambda: app.session_state.phase == "open", what="the session")
            await submit(pilot, "one")
            await finish_turn(pilot)
            filler = full_disk.fill(fs)
            await submit(pilot, "two " * 500)
            await finish_turn(pilot)
            await wait_until(
                pilot, lambda: any("disk is full" in n for n in notices(app, "warning")), what="the warning"
            )
            filler.unlink()
            await submit(pilot, "three")
            await finish_turn(pilot)
            await wait_until(pilot, lambda: any("written again" in n for n in notices(app)), what="the all-clear")
            path = app.session.recorder.transcript.path
            firsts = [message_text(m).split()[0] for m in load(path).messages]
            assert firsts == ["one", "first", "two", "second", "three", "third"]
            lines_of(path)


async def test_the_tui_says_a_removed_transcript_was_written_again(fake_api) -> None:
    fake_api.enqueue(text_reply("first"), text_reply("second"))
    app = make_app(fake_api)
    async with app.run_test(size=TUI_SIZE) as pilot:
        await wait_until(pilot, lambda: app.session_state.phase == "open", what="the session")
        await submit(pilot, "one")
        await finish_turn(pilot)
        path = app.session.recorder.transcript.path
        path.unlink()
        await submit(pilot, "two")
        await finish_turn(pilot)
        await wait_until(pilot, lambda: any("was removed" in n for n in notices(app, "warning")), what="the notice")
        assert len(load(path).messages) == 4


def test_an_io_error_holds_records_like_a_full_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """EIO (and EDQUOT) cannot be had on demand here: the error is raised at the one write function."""
    from cmdop_tui.transcripts import transcript as writer

    real_write = writer.write_line
    failures = iter([errno.EIO, errno.EDQUOT])

    def failing(fd: int, data: bytes) -> None:
        failure = next(failures, None)
        if failure is not None:
            raise OSError(failure, os.strerror(failure))
        real_write(fd, data)

    with Transcript.create(tmp_path) as transcript:
        monkeypatch.setattr(writer, "write_line", failing)
        for n in range(2):
            with pytest.raises(OSError):
                transcript.append(prompt(n))
        assert transcript.held == 2
        transcript.append(prompt(2))
        assert transcript.held == 0
        assert [message_text(m).split()[0] for m in load(transcript.path).messages] == ["0", "1", "2"]


def test_nothing_to_continue_when_the_data_home_is_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    not_a_directory = tmp_path / "data-file"
    not_a_directory.write_text("")
    monkeypatch.setenv("XDG_DATA_HOME", str(not_a_directory))
    assert transcripts.latest() is None and transcripts.list_sessions() == []


async def test_the_tui_runs_without_a_transcript_and_says_so_once(
    fake_api, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    not_a_directory = tmp_path / "data-file"
    not_a_directory.write_text("")
    monkeypatch.setenv("XDG_DATA_HOME", str(not_a_directory))
    fake_api.enqueue(text_reply("first"), text_reply("second"))
    app = make_app(fake_api)
    async with app.run_test(size=TUI_SIZE) as pilot:
        await wait_until(pilot, lambda: app.session_state.phase == "open", what="the session")
        await submit(pilot, "one")
        await finish_turn(pilot)
        assert sum("no transcript for this session" in n for n in notices(app)) == 1
        await submit(pilot, "/clear")  # the chat shown is cleared too: anything said now is new
        await finish_turn(pilot)
        await submit(pilot, "two")
        await finish_turn(pilot)
        assert app.session.recorder.transcript is None and len(fake_api.requests) == 2
        assert not any("no transcript" in n for n in notices(app))


def test_a_disk_full_to_the_end_is_not_taken_for_an_interrupted_command(tmp_path: Path) -> None:
    with small_filesystem(tmp_path / "fs") as fs:
        transcript = Transcript.create(fs)
        transcript.append({"op": "append", "role": "user", "blocks": [text_block("run it")]})
        call = {"type": "tool_use", "id": "toolu_01DONE", "name": "execute_command", "input": {"command": "make"}}
        transcript.append({"op": "append", "role": "assistant", "blocks": [call]})
        room = 4096 - transcript.path.stat().st_size % 4096  # what is left of the last page
        transcript.event("pad", text="p" * max(room - 400, 0))  # ~400 bytes left in it: a small record fits
        full_disk.fill(fs)
        result = tool_result_block("toolu_01DONE", "built\n" * 2000)
        with pytest.raises(OSError):
            transcript.append({"op": "append", "role": "user", "blocks": [result]})
        transcript.close()
        loaded = load(transcript.path)
    assert transcript.held == 1
    (answer,) = loaded.messages[-1]["content"]
    assert answer["content"] == UNSTORED_RESULT and answer["is_error"] is True
    assert any("the disk was full when the session ended" in note for note in loaded.notes)
    assert not any("interrupted" in note for note in loaded.notes)
