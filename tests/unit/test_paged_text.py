"""The pager of the whole-output view: lines, long lines, growth and search, on a real file."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cmdop_tui.support import paged_text
from cmdop_tui.support.paged_text import BLOCK, LINE_BYTES, PagedText, Search


@pytest.fixture
def seq_file(tmp_path: Path) -> Path:
    path = tmp_path / "seq.out"
    path.write_text("".join(f"{n}\n" for n in range(1, 200001)))
    return path


def test_a_file_s_lines_are_read_a_window_at_a_time(seq_file: Path):
    text = PagedText(seq_file)
    assert text.line_count == 200000
    assert text.lines(0, 3) == ["1", "2", "3"]
    assert text.lines(199997, 10) == ["199998", "199999", "200000"]
    assert text.lines(123456, 2) == ["123457", "123458"]
    assert text.line_start(9) == len("".join(f"{n}\n" for n in range(1, 10)))
    assert text.line_of(text.line_start(150000) + 2) == 150000


def test_search_goes_both_ways_counts_and_gives_the_line(seq_file: Path):
    text = PagedText(seq_file)
    search = Search("199999")
    found = text.find(search, 0)
    assert found is not None and found.line == 199998 and found.column == 0
    assert text.find(search, found.offset + 1) is None
    assert text.find(search, text.size, "backward") == found
    assert text.find(search, found.offset, "backward") is None
    assert text.count(search) == 1
    nines = Search("99999")  # 99999 and 199999
    assert text.count(nines) == 2 and text.count(nines, end=found.offset + 2) == 2
    assert text.count(nines, end=found.offset + 1) == 1  # the one in 199999 starts a byte on
    second = text.find(nines, found.offset)
    assert second is not None and second.column == 1


def test_smart_case_and_matches_across_read_chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(paged_text, "CHUNK", 16)
    path = tmp_path / "out"
    path.write_bytes(b"x" * 14 + b"Needle here\n" + b"y" * 30 + b"needle\n")
    text = PagedText(path)
    assert text.count(Search("needle")) == 2  # either case, one straddling a chunk's end
    assert text.count(Search("Needle")) == 1
    assert [m.line for m in (text.find(Search("needle"), 0), text.find(Search("needle"), 15))] == [0, 1]
    assert text.find(Search("needle"), text.size, "backward") == text.find(Search("needle"), 15)


def test_a_long_line_is_cut_and_the_next_still_found(tmp_path: Path):
    path = tmp_path / "out"
    path.write_bytes(b"head\n" + b"z" * (3 * BLOCK + 5) + b"\nafter\nend")
    text = PagedText(path)
    assert text.line_count == 4
    lines = text.lines(0, 10)
    assert lines[0] == "head" and lines[1] == "z" * LINE_BYTES + "…" and lines[2:] == ["after", "end"]


def test_binary_and_growth(tmp_path: Path):
    path = tmp_path / "out"
    path.write_bytes(b"\xff\xfe\x00bin\n")
    text = PagedText(path)
    assert text.lines(0, 1) == ["\ufffd\ufffd\x00bin"]  # decoded; the view makes it inert
    with path.open("ab") as out:
        out.write(b"more\nand a half")
    assert text.refresh() and not text.refresh()
    assert text.line_count == 3 and text.lines(1, 5) == ["more", "and a half"]
    path.write_bytes(b"short\n")  # rewritten smaller: indexed again
    assert text.refresh() and text.lines(0, 5) == ["short"]


def test_a_missing_file_reads_as_empty(tmp_path: Path):
    text = PagedText(tmp_path / "gone")
    assert text.line_count == 0 and text.lines(0, 5) == [] and text.find(Search("x"), 0) is None


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet="ab\n", max_size=400), st.integers(0, 40), st.integers(1, 8))
def test_it_agrees_with_split_on_any_text(text: str, first: int, count: int):
    paged = PagedText(text.encode())
    expected = text.split("\n")
    if text.endswith("\n") or not text:
        expected = expected[:-1]
    assert paged.line_count == len(expected)
    assert paged.lines(first, count) == expected[first : first + count]
    assert paged.count(Search("ab")) == text.count("ab")
