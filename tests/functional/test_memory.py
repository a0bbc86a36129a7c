"""The operator's standing instructions: memory.md beside the settings, CMDOP.md in the project."""

from __future__ import annotations

import os
import stat

from fake_anthropic import text_reply
from tui_helpers import make_app, notices, submit, wait_until

from cmdop_tui import Operator
from cmdop_tui.session.memory import MAX_CHARS, standing_instructions, user_memory_path


def static_prefix(request) -> str:
    return request.body["system"][0]["text"]


def test_both_files_reach_the_static_prefix_and_later_edits_the_next_prompt(fake_api, anthropic_env, tmp_path):
    user_memory_path().parent.mkdir(parents=True, exist_ok=True)
    user_memory_path().write_text("Always answer in French.\n")
    (tmp_path / "CMDOP.md").write_text("This repository deploys with `make ship`.\n")
    fake_api.enqueue(text_reply("oui"), text_reply("encore"))
    with Operator(cwd=tmp_path, record=False) as operator:
        operator.chat("hello")
        user_memory_path().write_text("Always answer in German.\n")
        operator.chat("again")
    first, second = (static_prefix(r) for r in fake_api.requests)
    assert "Always answer in French." in first and "deploys with `make ship`" in first
    assert "The user's standing instructions" in first and "This project's instructions (CMDOP.md)" in first
    assert "Always answer in German." in second and "French" not in second
    assert "cache_control" in fake_api.requests[0].body["system"][0]  # in the cached prefix


def test_no_files_no_section_and_a_huge_file_is_cut(tmp_path):
    assert standing_instructions(tmp_path) == ""
    (tmp_path / "CMDOP.md").write_text("x" * (MAX_CHARS + 500))
    text = standing_instructions(tmp_path)
    assert text.count("x") == MAX_CHARS and "only its first" in text


async def test_memory_command_makes_the_private_file_and_says_where_it_is(fake_api):
    app = make_app(fake_api)
    async with app.run_test() as pilot:
        await submit(pilot, "/memory")
        path = user_memory_path()
        await wait_until(pilot, lambda: any(str(path) in n for n in notices(app)))
    assert path.exists() and stat.S_IMODE(os.stat(path).st_mode) == 0o600


def test_memory_opens_the_editor_in_the_terminal_and_the_next_request_reads_it(fake_api, anthropic_env, tmp_path):
    from pty_app import PROMPT_DRAWN, PtyApp

    editor = tmp_path / "editor.sh"  # an "editor" that writes the instructions and leaves
    editor.write_text('#!/bin/sh\nprintf "Prefer systemctl over service.\\n" > "$1"\n')
    editor.chmod(0o755)
    config = tmp_path / "c.toml"
    fake_api.enqueue(text_reply("Noted the instructions."))
    env = {**os.environ, **anthropic_env, "CMDOP_TUI_CONFIG": str(config), "TERM": "xterm-256color"}
    app = PtyApp({**env, "EDITOR": str(editor)}, size=(100, 30))
    try:
        app.wait_for(PROMPT_DRAWN, timeout=20)
        start = app.mark()
        app.write(b"/memory\r")
        app.wait_for(b"apply from the next request", start, timeout=20)
        start = app.mark()
        app.write(b"hi\r")
        app.wait_for(b"Noted the instructions.", start)
    finally:
        app.close()
    assert (config.parent / "memory.md").read_text() == "Prefer systemctl over service.\n"
    assert "Prefer systemctl over service." in static_prefix(fake_api.requests[0])
