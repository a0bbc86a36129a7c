"""The console script's front door: `-h` names every subcommand, a run that cannot start says so
to a stream-json reader too, and the full-screen app without a terminal says so and exits 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from cmdop_tui.cli import EXIT_USAGE, SUBCOMMANDS
from cmdop_tui.support import warm

CLI = [sys.executable, "-m", "cmdop_tui"]


@pytest.fixture
def cli_env(anthropic_env, tmp_path):
    env = {**os.environ, **anthropic_env, "CMDOP_TUI_CONFIG": str(tmp_path / "config.toml")}
    env.pop("CMDOP_INTENT_ROUTER", None)
    env.pop("TEXTUAL_DRIVER", None)
    return env


def test_help_lists_every_subcommand_on_a_line_of_its_own(cli_env):
    done = subprocess.run([*CLI, "-h"], env=cli_env, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    commands = lines[lines.index("commands:") + 1 :]
    named = {line.split()[1] for line in commands if line.startswith("  cmdop-tui ")}
    assert named == set(SUBCOMMANDS)  # every subcommand `main` dispatches, and no other
    for line in commands:  # a name, its arguments, then what it does: one line each
        assert len(line.split("   ")) >= 2 and line.rstrip() == line


def test_the_warm_agent_knows_every_subcommand_is_not_a_prompt_run():
    assert set(SUBCOMMANDS) == warm.SUBCOMMANDS


def test_stream_json_without_a_key_ends_with_an_error_event(cli_env):
    keyless = {k: v for k, v in cli_env.items() if k not in {"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"}}
    args = ["-p", "hi", "--output-format", "stream-json", "--no-warm"]
    done = subprocess.run([*CLI, *args], env=keyless, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    (event,) = [json.loads(line) for line in done.stdout.splitlines()]
    assert set(event) == {"type", "code", "message"}  # the shape of the loop's `error` events
    assert (event["type"], event["code"]) == ("error", "no_api_key")
    assert "ANTHROPIC_API_KEY" in event["message"]
    assert done.stderr == f"cmdop-tui: {event['message']}\n"  # and the one line on stderr, as before


def test_without_a_terminal_the_app_says_so_and_exits_2(cli_env, tmp_path):
    """`cmdop-tui </dev/null >out` in a script: one line on stderr, exit 2, nothing drawn."""
    with open(tmp_path / "out", "w") as out:
        done = subprocess.run(
            CLI, env=cli_env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.PIPE, text=True, timeout=60
        )
    assert done.returncode == EXIT_USAGE
    assert done.stderr.count("\n") == 1 and "needs a terminal" in done.stderr and "-p PROMPT" in done.stderr
    assert (tmp_path / "out").read_text() == ""


def test_with_input_from_a_file_on_a_terminal_the_app_says_so_and_exits_2(cli_env, tmp_path):
    """In a terminal, `cmdop-tui </dev/null >out`: the line is on the screen, and no escapes."""
    from pty_app import PtyApp

    app = PtyApp(cli_env, size=(100, 30), redirect={0: os.devnull, 1: str(tmp_path / "out")})
    try:
        assert app.wait_exit(timeout=60) == EXIT_USAGE
        app.wait_for(b"-p PROMPT")
    finally:
        app.close()
    written = bytes(app.output).decode()
    assert written.startswith("cmdop-tui: the app needs a terminal, and standard input is not one")
    assert "\x1b" not in written


def test_with_output_to_a_file_on_a_terminal_the_app_still_runs(cli_env, tmp_path):
    """`cmdop-tui >out` at a terminal: keys come from it and the app draws on it (standard error)."""
    from pty_app import PtyApp

    app = PtyApp(cli_env, size=(100, 30), redirect={1: str(tmp_path / "out")})
    try:
        app.wait_for_text("Ask for something and press Enter", timeout=60)
        assert stop_column(app) == 100 - STOP_FROM_RIGHT  # drawn at the terminal's size, not 80x24
        app.resize(120, 40)  # and it follows the terminal, not standard output, when it changes
        app.wait_until_screen(lambda: stop_column(app) == 120 - STOP_FROM_RIGHT)
    finally:
        app.close()


STOP_FROM_RIGHT = len("Stop   ")  # the button's label and its padding, at the right edge


def stop_column(app) -> int:
    """Where the prompt's Stop button starts, on the bottom rows."""
    return max(row.rfind("Stop") for row in app.screen.display[-4:])
