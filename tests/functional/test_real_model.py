"""The whole stack against a real model: llama.cpp's Anthropic-compatible server (xllamacpp) with
SmolLM2-135M. Asserts structure, not wording: the small model answers in text and calls no tools."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from cmdop_tui.session.local_model import LocalModelServer, default_gguf

pytest.importorskip("xllamacpp")


@pytest.fixture(scope="module")
def local_model():
    try:
        default_gguf()
    except Exception as exc:  # pragma: no cover - README's install command provides it
        pytest.skip(str(exc))
    with LocalModelServer() as server:
        yield server


def run_headless(local_model, tmp_path, *extra):
    # A small model may ramble; a budget well past a short answer keeps the test quick whatever it
    # says (an answer cut at the limit is an error, as it should be: 48 tokens cut it now and then).
    config = tmp_path / "config.toml"
    config.write_text("[agent]\nmax_tokens = 256\n")
    env = {
        **os.environ,
        "ANTHROPIC_API_KEY": "local-no-key-needed",
        "ANTHROPIC_BASE_URL": local_model.url,
        "CMDOP_TUI_CONFIG": str(config),
    }
    command = [sys.executable, "-m", "cmdop_tui", "-p", "Reply with the one word: hello.", *extra]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)


def test_streamed_final_answer_from_a_real_model(local_model, tmp_path):
    done = run_headless(local_model, tmp_path, "--output-format", "stream-json", "--max-turns", "2")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    tokens = [e for e in events if e["type"] == "token"]
    assert len(tokens) > 1, "the reply should arrive as several streamed fragments"
    assert events[-1]["type"] == "final" and events[-1]["text"].strip()
    retried = max((i for i, e in enumerate(events) if e["type"] == "retry"), default=-1)
    kept = [e for e in events[retried + 1 :] if e["type"] == "token"]  # text before a retry is void
    assert events[-1]["text"] == "".join(e["text"] for e in kept)
    assert any(e["type"] == "usage" and e["output_tokens"] > 0 for e in events)


def test_non_streaming_answer_from_a_real_model(local_model, tmp_path):
    done = run_headless(local_model, tmp_path, "--no-stream", "--output-format", "json", "--max-turns", "2")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["status"] == "final" and summary["result"].strip()


def test_local_flag_starts_and_stops_the_model_itself(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text("[agent]\nmax_tokens = 256\n")  # past a short answer: a cut is an error
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env["CMDOP_TUI_CONFIG"] = str(config)
    command = [
        sys.executable,
        "-m",
        "cmdop_tui",
        "--local",
        "-p",
        "Reply with the one word: hi.",
        "--output-format",
        "json",
        "--max-turns",
        "2",
    ]
    before = set(local_servers())
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["status"] == "final" and summary["result"].strip()
    assert "starting the local model" in done.stderr
    assert set(local_servers()) <= before, "the local model server outlived the run"


def local_servers() -> list[str]:
    found = subprocess.run(["pgrep", "-f", "cmdop_tui.session.local_model"], capture_output=True, text=True)
    return found.stdout.split()


async def test_the_app_offers_the_local_model_when_there_is_no_key(tmp_path):
    from dataclasses import replace

    from tui_helpers import finish_turn, make_app, notices, replies, showing, submit, wait_until

    from cmdop_tui.config.settings import Settings
    from cmdop_tui.tui.screens.confirm import ConfirmScreen

    settings = replace(Settings(), agent=replace(Settings().agent, max_tokens=256))
    before = set(local_servers())
    app = make_app(settings=settings, offer_local=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: showing(app, ConfirmScreen), what="the local-model offer")
        await pilot.press("y")
        await wait_until(pilot, lambda: app.session is not None, timeout=60, what="the local model")
        assert any("ready in" in n for n in notices(app)) and app.session.runner.config.model.startswith("local:")
        await submit(pilot, "Say hi.")
        await finish_turn(pilot)
        assert replies(app) and replies(app)[-1].strip()
    assert set(local_servers()) <= before, "the app left its local model running"
