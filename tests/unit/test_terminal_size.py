"""The size the app draws at (tui/driver.py): the terminal's own, asked of the streams that are a
terminal, standard output last (`cmdop-tui > file` makes it a file); COLUMNS and LINES first."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import sys
import termios

import pytest

from cmdop_tui.tui.driver import terminal_size


@pytest.fixture
def terminal_as_stderr(monkeypatch):
    """Standard error a terminal of 132x43, standard input and output not terminals."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 43, 132, 0, 0))
    with open(follower, "w", closefd=True) as terminal, open(os.devnull) as nothing:
        monkeypatch.setattr(sys, "__stderr__", terminal)
        monkeypatch.setattr(sys, "__stdin__", nothing)
        monkeypatch.setattr(sys, "__stdout__", nothing)
        yield
    os.close(leader)


def test_the_terminal_the_app_draws_on_is_asked(terminal_as_stderr):
    assert terminal_size({}) == (132, 43)


def test_columns_and_lines_set_together_are_taken(terminal_as_stderr):
    assert terminal_size({"COLUMNS": "90", "LINES": "20"}) == (90, 20)
    assert terminal_size({"COLUMNS": "90"}) == (132, 43)  # one alone, or nonsense, is not
    assert terminal_size({"COLUMNS": "wide", "LINES": "20"}) == (132, 43)


def test_no_terminal_at_all_is_none(monkeypatch):
    with open(os.devnull) as nothing:
        for name in ("__stderr__", "__stdin__", "__stdout__"):
            monkeypatch.setattr(sys, name, nothing)
        assert terminal_size({}) is None
        monkeypatch.setattr(sys, "__stderr__", None)  # closed from the start
        assert terminal_size({}) is None
