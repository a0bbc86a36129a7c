"""`cmdop-tui acp` given something other than `initialize` first: the SDK answers it, the line we
read by hand handed to it first (cmdop_tui/acp/first_answer.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def test_a_first_line_not_initialize_is_answered_by_the_sdk(anthropic_env: dict[str, str], tmp_path: Path) -> None:
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "authenticate", "params": {"methodId": "nope"}},
        {"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {"protocolVersion": 1}},
    ]
    stdin = "".join(json.dumps(line) + "\n" for line in lines)
    done = subprocess.run(
        [sys.executable, "-m", "cmdop_tui", "acp"], input=stdin, capture_output=True, text=True,
        cwd=tmp_path, env=dict(os.environ), timeout=120,
    )  # fmt: skip
    answers = {answer["id"]: answer for answer in map(json.loads, done.stdout.splitlines())}
    assert set(answers) == {1, 2}, done.stderr
    assert "unknown authentication method" in json.dumps(answers[1]["error"])
    assert answers[2]["result"]["protocolVersion"] == 1
    assert done.returncode == 0, done.stderr
