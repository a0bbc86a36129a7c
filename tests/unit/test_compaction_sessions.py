"""Compaction across a session's life, as a user runs it: headless runs, --continue, recall, export."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from fake_anthropic import ModelSpec, estimate_input_tokens, text_reply, tool_reply

from cmdop_tui import transcripts
from cmdop_tui.agent.compaction import SUMMARISER_SYSTEM

CLI = [sys.executable, "-m", "cmdop_tui"]
MODEL = "claude-sonnet-5-5"
THOUGHTS = "Reading the next log to see where the errors start. " * 20


def run_cli(args, env, cwd=None, timeout=60):
    return subprocess.run(CLI + args, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def cli_env(anthropic_env, tmp_path):
    env = {**os.environ, **anthropic_env, "CMDOP_TUI_CONFIG": str(tmp_path / "config.toml")}
    env.pop("CMDOP_INTENT_ROUTER", None)
    return env


def is_summary_request(body: dict) -> bool:
    return body.get("system") == SUMMARISER_SYSTEM


def summarising(work: list, summary: str = "## Findings\n- the logs were read") -> list:
    """Reply sources: `summary` for every summary request, else the next reply of `work`."""
    pending = iter(work)

    def source(body: dict):
        return text_reply(summary) if is_summary_request(body) else next(pending)

    return [source] * (len(work) + 10)


def write_logs(directory, count: int) -> None:
    for i in range(count):
        lines = [f"log {i} line {n}: " + "abcdefgh"[n % 8] * 60 for n in range(110)]
        (directory / f"log{i}.txt").write_text("\n".join(lines) + "\n")


def read_logs(count: int) -> list:
    return [tool_reply("read_file", {"path": f"log{i}.txt"}, id=f"toolu_{i}", text=THOUGHTS) for i in range(count)]


def test_a_session_at_the_wall_continues_compacted_and_keeps_everything(fake_api, cli_env, tmp_path):
    write_logs(tmp_path, 8)
    # A long session on a model with a big window: about 25k tokens of history.
    fake_api.enqueue(*read_logs(8), text_reply("read all eight"))
    first = run_cli(["-p", "read the logs", "--model", MODEL], cli_env, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    # Then the endpoint's model has a 12k window: the stored history no longer fits in it.
    fake_api.models = {MODEL: ModelSpec(max_input_tokens=12_000)}
    fake_api.requests.clear()
    fake_api.enqueue(*summarising([tool_reply("recall", {"id": "toolu_0"}), text_reply("log 0 starts well")]))
    args = ["--continue", "-p", "what did log 0 say?", "--model", MODEL, "--output-format", "stream-json"]
    second = run_cli([*args], cli_env, cwd=tmp_path)
    assert second.returncode == 0, second.stderr
    assert fake_api.too_long == []  # never the wall: compacted before the first request
    events = [json.loads(line) for line in second.stdout.splitlines()]
    (compaction,) = [e for e in events if e["type"] == "compaction"]
    assert compaction["tokens_before"] > 0.75 * 12_000 > compaction["tokens_after"]
    assert compaction["summary"] == "## Findings\n- the logs were read"
    assert "compacted the conversation" in second.stderr
    sent = [r.body for r in fake_api.requests if not is_summary_request(r.body)]
    assert all(estimate_input_tokens(body) <= 0.75 * 12_000 for body in sent)
    # recall brought back an output the compaction had let go, from the transcript
    recalled = next(e for e in events if e["type"] == "tool_end" and e["name"] == "recall")
    assert "log 0 line 109" in recalled["output"] and not recalled["is_error"]
    # the transcript keeps every message; the conversation the model sees starts with the summary
    loaded = transcripts.load(transcripts.latest())
    assert loaded.messages[0]["content"][0]["text"].startswith("<conversation-summary>")
    whole = json.dumps(loaded.whole)
    assert all(f"log {i} line 109" in whole for i in range(8))
    markdown = transcripts.export_markdown(loaded.whole)
    assert "## Compaction" in markdown and "log 7 line 109" in markdown and "what did log 0 say?" in markdown
    # and a third run goes on from summary and tail, under the threshold
    fake_api.requests.clear()
    fake_api.discard_pending()
    fake_api.enqueue(text_reply("still here"))
    third = run_cli(["--continue", "-p", "anything else?", "--model", MODEL], cli_env, cwd=tmp_path)
    assert third.returncode == 0 and third.stdout == "still here\n", third.stderr
    assert estimate_input_tokens(fake_api.requests[-1].body) <= 0.75 * 12_000


def test_a_prompt_too_big_for_the_window_is_one_line_and_the_session_goes_on(fake_api, cli_env, tmp_path):
    huge = "word " * 20_000
    done = run_cli(["-p", huge, "--max-context-tokens", "16000"], cli_env)
    assert done.returncode != 0 and fake_api.requests == []
    assert done.stderr.count("\n") == 1 and "too long for the model's context window" in done.stderr
    fake_api.enqueue(text_reply("fine"))
    again = run_cli(["--continue", "-p", "hello", "--max-context-tokens", "16000"], cli_env)
    assert again.returncode == 0 and again.stdout == "fine\n", again.stderr
    assert "word word" not in json.dumps(fake_api.requests[-1].body)
