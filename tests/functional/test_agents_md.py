"""AGENTS.md, the file many coding agents read, is read as CMDOP.md is: both when both exist,
AGENTS.md first and CMDOP.md last."""

from __future__ import annotations

from fake_anthropic import text_reply

from cmdop_tui import Operator
from cmdop_tui.session.memory import standing_instructions, user_memory_path


def test_agents_md_alone_reaches_the_static_prefix(fake_api, anthropic_env, tmp_path):
    (tmp_path / "AGENTS.md").write_text("Run the tests with `make check`.\n")
    fake_api.enqueue(text_reply("ok"))
    with Operator(cwd=tmp_path, record=False) as operator:
        operator.chat("hello")
    prefix = fake_api.requests[0].body["system"][0]["text"]
    assert "This project's instructions (AGENTS.md)\nRun the tests with `make check`." in prefix


def test_both_files_are_read_memory_then_agents_then_cmdop(tmp_path):
    user_memory_path().parent.mkdir(parents=True, exist_ok=True)
    user_memory_path().write_text("USER-MEMORY\n")
    (tmp_path / "AGENTS.md").write_text("FROM-AGENTS\n")
    (tmp_path / "CMDOP.md").write_text("FROM-CMDOP\n")
    text = standing_instructions(tmp_path)
    assert text.index("USER-MEMORY") < text.index("(AGENTS.md)\nFROM-AGENTS") < text.index("(CMDOP.md)\nFROM-CMDOP")


def test_only_the_working_directorys_files_are_read(tmp_path):
    (tmp_path / "AGENTS.md").write_text("PARENT\n")
    (tmp_path / "sub" / "deeper").mkdir(parents=True)
    (tmp_path / "sub" / "deeper" / "AGENTS.md").write_text("NESTED\n")
    text = standing_instructions(tmp_path / "sub")
    assert text == ""  # as CMDOP.md: neither the parent's nor a subfolder's
