"""A model's own stream idle timeout (`[models."ID"] idle_timeout_s`), headless over the fake API."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from fake_anthropic import text_reply


def test_a_models_idle_timeout_from_the_settings_judges_its_stream(fake_api, anthropic_env, tmp_path):
    config = tmp_path / "config.toml"
    config.write_text('[models."claude-sonnet-5-5"]\nidle_timeout_s = 0.2\n')
    fake_api.enqueue(text_reply("never finished " * 10, stall_after=4), text_reply("complete"))
    env = {**os.environ, **anthropic_env, "CMDOP_TUI_CONFIG": str(config)}
    command = [sys.executable, "-m", "cmdop_tui", "-p", "hi", "--output-format", "stream-json"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    (retry,) = [e for e in events if e["type"] == "retry"]
    assert "no event for 0.2 s" in retry["reason"] and events[-1]["text"] == "complete"
