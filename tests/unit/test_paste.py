"""A bracketed paste taken whole from the terminal's input (support/paste.py)."""

from __future__ import annotations

import pytest

from cmdop_tui.support.paste import PASTE_IDLE_S, Pasted, PasteSplitter, inert_paste

pytestmark = pytest.mark.fault

START, END = "\x1b[200~", "\x1b[201~"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_paste_is_one_inert_piece_between_keys():
    splitter = PasteSplitter()
    pieces = splitter.feed("a" + START + "\x1b[31mred\x1b[0m line\r\nsecond\rthird\r\n" + END + "b")
    assert pieces == ["a", Pasted("red line\nsecond\nthird\n"), "b"]
    assert not splitter.pending


def test_controls_in_a_paste_are_shown_not_acted_on():
    assert inert_paste("bell\x07 tab\t nul\x00 \x1b]0;title\x07end \x1b") == "bell^G tab\t nul^@ end ^["


def test_markers_split_across_reads_are_held_until_whole():
    splitter = PasteSplitter()
    assert splitter.feed("x\x1b[20") == ["x"]
    assert splitter.pending
    assert splitter.feed("0~one\r\n\x1b[2") == []
    assert splitter.feed("01") == []
    assert splitter.feed("~y") == [Pasted("one\n"), "y"]


def test_a_lone_esc_goes_on_at_once_and_a_held_prefix_goes_on_when_idle():
    splitter = PasteSplitter()
    assert splitter.feed("\x1b") == ["\x1b"]  # the Esc key: the parser times it
    assert splitter.feed("\x1b[") == []
    assert splitter.idle() == ["\x1b["]
    assert not splitter.pending


def test_a_paste_whose_end_never_comes_ends_when_input_stops():
    clock = Clock()
    splitter = PasteSplitter(clock)
    assert splitter.feed(START + "half a paste\r") == []
    clock.now += PASTE_IDLE_S / 2
    assert splitter.idle() == []
    clock.now += PASTE_IDLE_S
    assert splitter.idle() == [Pasted("half a paste\n")]
    assert splitter.feed("\r") == ["\r"]  # keys again
