"""A background job's output goes raw from the command to its file, past the app's event loop
(issue 26): the file holds the very bytes printed; what is read of it (a page for the model,
the listeners' tail, the last line) is cleaned then: escape sequences inert, the app's
credentials masked. The file stays private whatever the command does to it."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from cmdop_tui.machines.local import LocalMachine
from cmdop_tui.machines.process import run_process
from cmdop_tui.support.secrets import MARKER
from cmdop_tui.tools.jobs import JobChange, JobTable

CREDENTIAL = "sk-ant-api03-" + "Q" * 40


async def test_a_command_writing_to_a_file_is_reported_by_its_tail_once(tmp_path: Path):
    path = tmp_path / "out.log"
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
    told: list[tuple[str, str]] = []
    try:
        result = await run_process(
            ["/bin/sh", "-c", "seq 1 20000; echo to-stderr >&2; exit 4"],
            cwd=tmp_path,
            timeout_ms=20_000,
            progress=lambda text, stream: told.append((text, stream)),
            output_limit=1_000,
            output_fd=fd,
        )
    finally:
        os.close(fd)
    printed = "".join(f"{n}\n" for n in range(1, 20_001)) + "to-stderr\n"
    assert path.read_text() == printed  # every byte, stdout and stderr in order, by the command itself
    assert len(told) == 1 and told[0][1] == "stdout" and told[0][0].endswith("20000\nto-stderr\n")
    assert result.text.startswith("exit code: 4") and "to-stderr" in result.text and "\n1\n" not in result.text


async def test_the_file_is_raw_and_what_is_read_of_it_is_clean(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", CREDENTIAL)
    work = tmp_path / "work"
    work.mkdir()
    jobs = JobTable(lambda: tmp_path / "jobs")
    changes: list[JobChange] = []
    jobs.listeners.append(changes.append)
    command = f"printf 'red \\033[31mtext\\033[0m\\n'; echo 'key {CREDENTIAL}'; chmod 644 /proc/self/fd/1; echo last"
    try:
        jobs.start(LocalMachine(work), command, cwd=None, timeout_ms=20_000)
        info = await jobs.wait("job-1", 20)
    finally:
        await jobs.close()
    raw = Path(info.output_file).read_bytes()
    assert raw == f"red \033[31mtext\033[0m\nkey {CREDENTIAL}\nlast\n".encode()
    assert stat.S_IMODE(os.stat(info.output_file).st_mode) == 0o600  # private again once it ended
    assert info.state == "exited" and info.size == len(raw) and info.last_line == "last"
    _, page = jobs.read("job-1", 0)
    assert page.text == f"red text\nkey {MARKER}\nlast\n" and page.next_offset == len(raw)
    told = "".join(change.text for change in changes)
    assert "\033" not in told and CREDENTIAL not in told and "last" in told
