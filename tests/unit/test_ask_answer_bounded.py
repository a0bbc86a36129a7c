"""A remote agent's answer is bounded like command output: its start and end kept, the cut said,
the whole kept for `recall` where the session has somewhere to keep it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cmdop_tui.tools.ask import ANSWER_LIMIT, HOST_SHARE_MIN, _Answer, _keyed
from cmdop_tui.tools.base import ToolContext, ToolResult, capped

pytestmark = pytest.mark.fault


def keeping(tmp_path: Path, kept: list[str] | None) -> ToolContext:
    """A context whose session keeps whole outputs in `kept` (None: it has no transcript)."""
    keep = (lambda text: kept.append(text) is None) if kept is not None else (lambda text: False)
    return ToolContext(call_id="toolu_1", cwd=tmp_path, keep=keep)


def test_a_huge_answer_is_cut_in_the_middle_and_kept_whole(tmp_path):
    answer = "START " + "x" * 20_000_000 + " END"
    kept: list[str] = []
    content = capped(_Answer(final=answer).result("h1").content, ANSWER_LIMIT, keeping(tmp_path, kept), "answer")
    assert len(content) < ANSWER_LIMIT + 200
    assert content.startswith("START ") and " END\n[" in content
    assert f"{len(answer) - ANSWER_LIMIT:,} characters cut" in content
    assert "recall id 'toolu_1'" in content and kept == [answer]


def test_without_a_transcript_the_cut_says_nothing_keeps_it(tmp_path):
    content = capped("y" * (ANSWER_LIMIT * 2), ANSWER_LIMIT, keeping(tmp_path, None), "answer")
    assert content.endswith("[the cut part is not kept: this session has no transcript]")


def test_a_short_answer_is_whole_and_not_kept(tmp_path):
    kept: list[str] = []
    assert capped("uptime: 3 days", ANSWER_LIMIT, keeping(tmp_path, kept)) == "uptime: 3 days" and kept == []
    assert "empty answer" in _Answer(final="").result("h1").content


def test_many_hosts_share_one_budget_and_all_are_kept_whole(tmp_path):
    answers = {f"h{i}": ToolResult("a" * 50_000) for i in range(100)}
    answers["h7"] = ToolResult.error("unreachable")
    kept: list[str] = []
    result = _keyed(answers, keeping(tmp_path, kept))
    shown, note = result.content.rsplit("\n", 1)
    assert len(result.content) < 100 * (HOST_SHARE_MIN + 200)  # not a hundred times one answer
    parsed = json.loads(shown)
    assert list(parsed) == list(answers) and parsed["h7"] == {"ok": False, "error": "unreachable"}
    assert "recall id 'toolu_1'" in note and not result.is_error
    assert json.loads(kept[0])["h3"]["answer"] == "a" * 50_000


def test_few_short_answers_are_plain_json(tmp_path):
    kept: list[str] = []
    result = _keyed({"h1": ToolResult("fine"), "h2": ToolResult.error("down")}, keeping(tmp_path, kept))
    assert json.loads(result.content) == {"h1": {"ok": True, "answer": "fine"}, "h2": {"ok": False, "error": "down"}}
    assert kept == []


def test_an_agent_that_ended_without_an_answer_says_what_it_printed():
    output = (
        'exit code: 1\n{"type": "turn_start", "turn": 1}\nTraceback (most recent call last):\n'
        "  File \"cmdop_tui/cli.py\", line 3\nModuleNotFoundError: No module named 'anthropic'\n"
    )
    result = _Answer().result("h1", output)
    assert result.is_error and result.content.startswith("the agent on h1 ended without an answer:")
    assert "ModuleNotFoundError: No module named 'anthropic'" in result.content and "exit code: 1" in result.content
    assert "turn_start" not in result.content
