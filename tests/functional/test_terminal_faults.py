"""Faults at the terminal, on the real app in a pty: a paste that carries escapes and line ends,
and signals that end the app (the terminal is restored, children end, the exit code says why)."""

from __future__ import annotations

import os

from fake_anthropic import text_reply

PASTE_START, PASTE_END = b"\x1b[200~", b"\x1b[201~"


def pty_env(anthropic_env: dict[str, str], tmp_path) -> dict[str, str]:
    return {**os.environ, **anthropic_env, "CMDOP_TUI_CONFIG": str(tmp_path / "c.toml"), "TERM": "xterm-256color"}


def test_a_coloured_log_line_pasted_is_text_and_waits_for_enter(fake_api, anthropic_env, tmp_path):
    from pty_app import PtyApp

    fake_api.enqueue(text_reply("Read both lines."))
    app = PtyApp(pty_env(anthropic_env, tmp_path), size=(100, 30))
    try:
        app.wait_for(b"Ask the operator", timeout=20)
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
