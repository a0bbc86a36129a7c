"""A remote agent's answer is bounded like command output: its start and end kept, the cut said."""

from __future__ import annotations

from cmdop_tui.tools.ask import ANSWER_LIMIT, _Answer


def test_a_huge_answer_is_cut_in_the_middle():
    answer = "START " + "x" * 20_000_000 + " END"
    result = _Answer(final=answer).result("h1")
    assert not result.is_error
    assert len(result.content) < ANSWER_LIMIT + 100
    assert result.content.startswith("START ") and result.content.endswith(" END")
    assert f"{len(answer) - ANSWER_LIMIT:,} characters cut" in result.content


def test_a_short_answer_is_whole():
    assert _Answer(final="uptime: 3 days").result("h1").content == "uptime: 3 days"
    assert "empty answer" in _Answer(final="").result("h1").content


def test_an_agent_that_ended_without_an_answer_says_what_it_printed():
    output = (
        'exit code: 1\n{"type": "turn_start", "turn": 1}\nTraceback (most recent call last):\n'
        "  File \"cmdop_tui/cli.py\", line 3\nModuleNotFoundError: No module named 'anthropic'\n"
    )
    result = _Answer().result("h1", output)
    assert result.is_error and result.content.startswith("the agent on h1 ended without an answer:")
    assert "ModuleNotFoundError: No module named 'anthropic'" in result.content and "exit code: 1" in result.content
    assert "turn_start" not in result.content
