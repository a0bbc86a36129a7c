"""Faults at the terminal, on the real app in a pty: a paste that carries escapes and line ends,
and signals that end the app (the terminal is restored, children end, the exit code says why)."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest
from fake_anthropic import text_reply, tool_reply
from pty_app import PROMPT_DRAWN

from cmdop_tui.tui.exit_signals import SHUTDOWN_GRACE_S

pytestmark = pytest.mark.fault

PASTE_START, PASTE_END = b"\x1b[200~", b"\x1b[201~"


def pty_env(anthropic_env: dict[str, str], tmp_path) -> dict[str, str]:
    return {**os.environ, **anthropic_env, "CMDOP_TUI_CONFIG": str(tmp_path / "c.toml"), "TERM": "xterm-256color"}


def test_a_coloured_log_line_pasted_is_text_and_waits_for_enter(fake_api, anthropic_env, tmp_path):
    from pty_app import PtyApp

    fake_api.enqueue(text_reply("Read both lines."))
    app = PtyApp(pty_env(anthropic_env, tmp_path), size=(100, 30))
    try:
        app.wait_for(PROMPT_DRAWN, timeout=20)
        app.write(PASTE_START + b"\x1b[31mred\x1b[0m line\r\nsecond\r\n" + PASTE_END)
        app.wait_for_text("second", timeout=10)
        app.wait_quiet(0.5)
        screen = app.screen_text()
        assert "red line" in screen and "[31m" not in screen and "^[" not in screen
        assert fake_api.requests == []  # nothing is sent until Enter
        start = app.mark()
        app.write(b"\r")
        app.wait_for(b"Read both lines.", start, timeout=20)
    finally:
        app.close()
    assert len(fake_api.requests) == 1
    [block] = fake_api.requests[0].body["messages"][-1]["content"]
    assert block["text"] == "red line\nsecond"


# What the app turned on, turned off again: the alternate screen left, mouse reporting and
# bracketed paste off, the cursor shown.
RESTORED = (b"\x1b[?1049l", b"\x1b[?1000l", b"\x1b[?2004l", b"\x1b[?25h")


def processes_with(marker: str) -> list[int]:
    """Pids of the live processes whose command line holds `marker`."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as file:
                cmdline = file.read()
        except (OSError, ValueError):
            continue
        if marker.encode() in cmdline and entry.isdigit():
            found.append(int(entry))
    return found


def start_a_long_command(app, fake_api, marker: str) -> None:
    fake_api.enqueue(tool_reply("execute_command", {"command": f"sleep {marker}"}), text_reply("never"))
    app.wait_for(PROMPT_DRAWN, timeout=20)
    app.write(b"run it\r")
    deadline = time.monotonic() + 20
    while not processes_with(f"sleep {marker}"):
        assert time.monotonic() < deadline, "the command never started"
        time.sleep(0.05)


@pytest.mark.parametrize(
    "signum, storm",
    [(signal.SIGTERM, 1), (signal.SIGHUP, 1), (signal.SIGQUIT, 1), (signal.SIGINT, 20)],
    ids=["TERM", "HUP", "QUIT", "INT-storm"],
)
def test_a_signal_restores_the_terminal_ends_children_and_says_why(fake_api, anthropic_env, tmp_path, signum, storm):
    from pty_app import PtyApp

    marker = f"{300 + signum}.{os.getpid() % 1000}"
    app = PtyApp(pty_env(anthropic_env, tmp_path), size=(100, 30), args=("--yes",))
    try:
        start_a_long_command(app, fake_api, marker)
        start, sent = app.mark(), time.monotonic()
        for _ in range(storm):
            os.kill(app.pid, signum)
            time.sleep(0.005)
        code = app.wait_exit(timeout=10)
        elapsed = time.monotonic() - sent
        app.wait_quiet(0.2)
    finally:
        app.close()
    assert code == 128 + signum
    assert elapsed < SHUTDOWN_GRACE_S  # a clean exit, not the deadline's
    after = bytes(app.output[start:])
    for sequence in RESTORED:
        assert sequence in after, f"{sequence!r} not written after the signal"
    assert after.rfind(b"\x1b[?1049l") > after.rfind(b"\x1b[?1049h")
    assert processes_with(f"sleep {marker}") == []
    assert_the_turn_was_recorded_as_stopped()


def assert_the_turn_was_recorded_as_stopped() -> None:
    """The transcript holds whole records only, the stopped turn among them."""
    transcripts = list((Path(os.environ["HOME"]) / ".local/share/cmdop-tui/sessions").glob("*.jsonl"))
    assert len(transcripts) == 1
    text = transcripts[0].read_text()
    assert text.endswith("\n")
    records = [json.loads(line) for line in text.splitlines()]
    assert any(record.get("kind") == "cancelled" for record in records), records[-3:]


def test_a_terminal_that_goes_away_ends_the_app_with_its_children(fake_api, anthropic_env, tmp_path):
    """An SSH link dropping: the pty's other end closes, the kernel sends SIGHUP, and nothing
    written to the terminal can arrive any more."""
    from pty_app import PtyApp

    marker = f"{400}.{os.getpid() % 1000}"
    app = PtyApp(pty_env(anthropic_env, tmp_path), size=(100, 30), args=("--yes",))
    try:
        start_a_long_command(app, fake_api, marker)
        app.hang_up()
        gone = time.monotonic()
        code = app.wait_exit(timeout=SHUTDOWN_GRACE_S + 3)
        elapsed = time.monotonic() - gone
    finally:
        app.close()
    assert code == 128 + signal.SIGHUP
    assert elapsed < SHUTDOWN_GRACE_S, elapsed
    assert processes_with(f"sleep {marker}") == []
    assert_the_turn_was_recorded_as_stopped()


def children_of(pid: int) -> dict[int, bytes]:
    """The live child processes of `pid`, with their command lines."""
    found = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat, open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                parent = int(stat.read().rsplit(b")", 1)[1].split()[1])
                if parent == pid:
                    found[int(entry)] = cmdline.read()
        except (OSError, ValueError, IndexError):
            continue
    return found


def test_a_signal_stops_the_local_model_too(tmp_path):
    pytest.importorskip("xllamacpp")
    from pty_app import PtyApp

    from cmdop_tui.session.local_model import LocalModelError, default_gguf

    try:
        default_gguf()
    except LocalModelError as exc:
        pytest.skip(str(exc))
    env = {key: value for key, value in os.environ.items() if not key.startswith("ANTHROPIC_")}
    app = PtyApp({**env, "CMDOP_TUI_CONFIG": str(tmp_path / "c.toml"), "TERM": "xterm-256color"}, args=("--local",))
    try:
        deadline = time.monotonic() + 30
        while not (model := [p for p, line in children_of(app.pid).items() if b"session.local_model" in line]):
            assert time.monotonic() < deadline, "the local model never started"
            time.sleep(0.05)
        os.kill(app.pid, signal.SIGTERM)
        code = app.wait_exit(timeout=SHUTDOWN_GRACE_S + 3)
    finally:
        app.close()
    assert code == 128 + signal.SIGTERM
    assert ended_within(model[0], 2.0)


def ended_within(pid: int, seconds: float) -> bool:
    """Whether process `pid` is gone (or a zombie, dead and waiting to be reaped) within `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat", "rb") as stat:
                if stat.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                    return True
        except OSError:
            return True
        time.sleep(0.02)
    return False
