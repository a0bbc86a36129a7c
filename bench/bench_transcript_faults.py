"""Figures for transcripts under faults. Run (as root: it mounts a small tmpfs):
.venv/bin/python bench/bench_transcript_faults.py

1. Full disk mid-session, then space freed: a 200-turn session written to a real 1 MiB tmpfs
   which is filled to the last byte at turn 60 and freed at turn 140. Records lost and torn
   records (both goal 0), the records held in memory at the peak, and whether the file replays
   to the conversation exactly.
2. The transcript removed at turn 60 and replaced by another file at turn 140: records lost
   (goal 0), and whether the file replays to the conversation exactly.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))

import full_disk as disks

from cmdop_tui.agent.history import Conversation, text_block, tool_result_block
from cmdop_tui.transcripts import Transcript, load
from cmdop_tui.transcripts.records import encode_record, parse_record

TURNS = 200
FAULT_AT, HEALED_AT = 60, 140


@contextlib.contextmanager
def small_filesystem(size: str) -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as scratch, disks.small_filesystem(Path(scratch), size) as path:
        yield path


def one_turn(conversation: Conversation, n: int) -> None:
    conversation.append_user(f"turn {n}: how full is /srv on the web servers?")
    call = {"type": "tool_use", "id": f"toolu_{n:08d}", "name": "execute_command", "input": {"command": "df -h"}}
    conversation.append_assistant([text_block("Let me look."), call])
    conversation.append_tool_results([tool_result_block(call["id"], "/dev/sda1  50G  41G  9G  82% /srv\n" * (n % 40))])
    conversation.append_assistant([text_block(f"Turn {n}: /srv is at 82%. " * 8)])


def session(
    directory: Path, faults: dict[int, Callable[[Transcript], None]]
) -> tuple[Transcript, list[bytes], int, Conversation]:
    """A session of `TURNS` turns; `faults[n]` runs before turn n. (writer, lines meant, peak held, history)."""
    transcript = Transcript.create(directory)
    meant = [transcript.path.read_bytes()]  # the header
    peak = 0

    def record(op: dict[str, object]) -> None:
        nonlocal peak
        meant.append(encode_record(op))
        with contextlib.suppress(OSError):  # held, as the session's recorder lets it be
            transcript.append(op)
        peak = max(peak, transcript.held)

    conversation = Conversation()
    conversation.listeners.append(record)
    for n in range(TURNS):
        if n in faults:
            faults[n](transcript)
        one_turn(conversation, n)
    return transcript, meant, peak, conversation


def count(path: Path, meant: list[bytes]) -> tuple[int, int, bool]:
    """(records lost, torn records, the rest in order) of the file at `path` against the lines meant."""
    lines = path.read_bytes().split(b"\n")
    torn = int(lines.pop() != b"") + sum(parse_record(line) is None for line in lines)
    expected = b"".join(meant).split(b"\n")[:-1]
    lost = sum((Counter(expected) - Counter(lines)).values())
    return lost, torn, lines == expected


def full_disk() -> None:
    with small_filesystem("1m") as fs:
        fillers: list[Path] = []
        faults = {FAULT_AT: lambda _t: fillers.append(disks.fill(fs)), HEALED_AT: lambda _t: fillers.pop().unlink()}
        transcript, meant, peak, conversation = session(fs, faults)
        lost, torn, in_order = count(transcript.path, meant)
        exact = load(transcript.path).messages == conversation.messages
        transcript.close()
    print("1. full disk mid-session, then space freed")
    print(f"   records lost:            {lost}   (goal 0)")
    print(f"   torn records:            {torn}   (goal 0)")
    print(f"   records held at the peak: {peak} (in memory while the disk was full)")
    print(f"   every record in order:   {in_order}")
    print(f"   replays to the conversation exactly: {exact}")


def removed_and_replaced() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        directory = Path(scratch)

        def replace_it(transcript: Transcript) -> None:
            (directory / "other").write_text("another file\n")
            (directory / "other").replace(transcript.path)

        faults = {FAULT_AT: lambda t: t.path.unlink(), HEALED_AT: replace_it}
        transcript, meant, _peak, conversation = session(directory, faults)
        lost, torn, in_order = count(transcript.path, meant)
        exact = load(transcript.path).messages == conversation.messages
        transcript.close()
    print("2. the transcript removed, later replaced, while the app runs")
    print(f"   records lost:            {lost}   (goal 0)")
    print(f"   torn records:            {torn}   (goal 0)")
    print(f"   every record in order:   {in_order}")
    print(f"   replays to the conversation exactly: {exact}")


def main() -> int:
    if os.geteuid() != 0:
        print("needs root (to mount a small tmpfs): no figures", file=sys.stderr)
        return 1
    full_disk()
    removed_and_replaced()
    return 0


if __name__ == "__main__":
    sys.exit(main())
