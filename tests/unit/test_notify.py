"""Desktop notifications as bytes: OSC 9, OSC 777, the bell, the tmux wrapping, the text made
inert, the method a terminal gets, and when nothing is sent (focused, off, a short command)."""

from __future__ import annotations

import pytest

from cmdop_tui.config.loading import settings_from
from cmdop_tui.config.model import NotifySettings, SettingsError
from cmdop_tui.tui.notify import Notifier, for_tmux, inert, notification, osc_method

HOSTILE = "done\x07\x1b]52;c;aGk=\x07\x1b\\\x9d0;title\x9c; more\nlines\r\x00"


def test_osc9_and_osc777_and_the_bell() -> None:
    assert notification("osc9", "The turn is over", tmux=False) == "\x1b]9;cmdop-tui: The turn is over\x07\x07"
    assert notification("osc777", "Approval needed", tmux=False) == (
        "\x1b]777;notify;cmdop-tui;Approval needed\x07\x07"
    )
    assert notification("bell", "anything", tmux=False) == "\x07"


def test_inside_tmux_the_osc_passes_through_with_its_escapes_doubled() -> None:
    wrapped = notification("osc9", "hi", tmux=True)
    assert wrapped == "\x1bPtmux;\x1b\x1b]9;cmdop-tui: hi\x07\x1b\\\x07"  # the bell is tmux's own
    assert for_tmux("\x1b]777;notify;a;b\x07") == "\x1bPtmux;\x1b\x1b]777;notify;a;b\x07\x1b\\"


def test_what_a_model_wrote_cannot_end_the_sequence_or_add_fields() -> None:
    text = inert(HOSTILE)
    assert text == "done ]52,c,aGk= \\ 0,title , more lines"
    for method in ("osc9", "osc777"):
        sequence = notification(method, HOSTILE, tmux=False)
        assert sequence.count("\x1b") == 1 and sequence.count("\x07") == 2 and "\x9c" not in sequence
        assert sequence.count(";") == (1 if method == "osc9" else 3)
    assert len(inert("x" * 1000)) == 160 and inert("x" * 1000).endswith("…")


@pytest.mark.parametrize(
    ("environ", "method"),
    [
        ({"TERM": "xterm-256color", "VTE_VERSION": "7600"}, "osc777"),
        ({"TERM": "foot"}, "osc777"),
        ({"TERM": "rxvt-unicode-256color"}, "osc777"),
        ({"TERM": "xterm-256color", "TERM_PROGRAM": "iTerm.app"}, "osc9"),
        ({"TERM": "xterm-kitty"}, "osc9"),
        ({}, "osc9"),
    ],
)
def test_auto_picks_the_escape_the_terminal_reads(environ: dict[str, str], method: str) -> None:
    assert osc_method("auto", environ) == method
    assert osc_method("bell", environ) == "bell"


def notifier(focused: bool, **settings: object) -> tuple[Notifier, list[str]]:
    written: list[str] = []
    made = Notifier(NotifySettings(**settings), written.append, lambda: focused, environ={"TMUX": "/tmp/t,1,0"})  # type: ignore[arg-type]
    return made, written


def test_nothing_is_sent_while_the_terminal_is_focused_or_when_off() -> None:
    focused, written = notifier(True)
    assert not focused.tell("The turn is over") and written == []
    off, written = notifier(False, enabled=False)
    assert not off.tell("The turn is over") and written == []
    away, written = notifier(False, method="osc777")
    assert away.tell("The turn is over")
    assert written == [for_tmux("\x1b]777;notify;cmdop-tui;The turn is over\x07") + "\x07"]


def test_a_command_is_told_of_only_when_it_ran_long() -> None:
    away, written = notifier(False, method="osc9", min_seconds=30)
    assert not away.tool_finished("execute_command", "make test", 29.9, failed=False) and written == []
    assert away.tool_finished("execute_command", "make test", 42.2, failed=True)
    assert "`make test` failed after 42.2 s" in written[0]
    assert away.tool_finished("ask_machine", None, 31, failed=False) and "ask_machine finished" in written[1]


def test_the_notify_table_is_read_and_checked() -> None:
    read = settings_from({"notify": {"enabled": False, "method": "osc777", "min_seconds": 5}}).notify
    assert read == NotifySettings(enabled=False, method="osc777", min_seconds=5.0)
    assert settings_from({}).notify == NotifySettings()
    for bad, words in [
        ({"method": "popup"}, "method must be one of auto, osc9, osc777, bell"),
        ({"min_seconds": 0}, "min_seconds must be a positive number"),
        ({"enabled": "yes"}, "enabled must be true or false"),
        ({"sound": True}, "has no setting 'sound'"),
    ]:
        with pytest.raises(SettingsError, match=words):
            settings_from({"notify": bad})
