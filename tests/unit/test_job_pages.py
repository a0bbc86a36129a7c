"""A job's output read a bounded page at a time (tools/jobs.py `read_page`): pages end on whole
UTF-8 characters, and following `next_offset` gives every byte once."""

from __future__ import annotations

from pathlib import Path

from cmdop_tui.tools.jobs import read_page


def test_pages_end_on_whole_characters_and_cover_every_byte(tmp_path: Path):
    text = "ab€" * 1000 + "end ✓"  # € is 3 bytes: pages of 10 bytes would split it
    path = tmp_path / "job-1.log"
    path.write_bytes(text.encode())
    pieces, offset = [], 0
    while True:
        page = read_page(path, offset, limit=10)
        assert len(page.text.encode()) <= 10 and "\ufffd" not in page.text
        pieces.append(page.text)
        offset = page.next_offset
        if not page.more:
            break
    assert "".join(pieces) == text and offset == len(text.encode())


def test_a_page_from_the_end_is_empty(tmp_path: Path):
    path = tmp_path / "job-1.log"
    path.write_bytes(b"done\n")
    page = read_page(path, 5)
    assert (page.text, page.next_offset, page.more) == ("", 5, False)
