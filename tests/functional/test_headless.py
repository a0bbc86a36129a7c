"""`cmdop-tui -p` as a user runs it: a child process talking to the fake API over HTTP."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest
from fake_anthropic import error_reply, text_reply, tool_reply

CLI = [sys.executable, "-m", "cmdop_tui"]


def run_cli(args, env, *, input=None, timeout=30, cwd=None):
    """`cmdop-tui ARGS`; `cwd` is the session's workspace (the host's /tmp is not the session's)."""
    return subprocess.run(CLI + args, env=env, capture_output=True, text=True, input=input, timeout=timeout, cwd=cwd)


@pytest.fixture
def cli_env(anthropic_env, tmp_path):
    env = {**os.environ, **anthropic_env, "CMDOP_TUI_CONFIG": str(tmp_path / "config.toml")}
    env.pop("CMDOP_INTENT_ROUTER", None)
    return env


def json_lines(stdout):
    return [json.loads(line) for line in stdout.splitlines()]


def test_stream_json_prints_every_event_as_a_line(fake_api, cli_env, tmp_path):
    (tmp_path / "a.txt").write_text("x")
    fake_api.enqueue(tool_reply("list_dir", {"path": str(tmp_path)}), text_reply("There is a.txt."))
    done = run_cli(["-p", "list the files here", "--output-format", "stream-json"], cli_env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    events = json_lines(done.stdout)
    kinds = [e["type"] for e in events]
    assert kinds[0] == "turn_start" and kinds[-1] == "final"
    assert {"token", "tool_start", "tool_end", "usage"} <= set(kinds)
    assert "".join(e["text"] for e in events if e["type"] == "token") == "There is a.txt."
    assert events[-1]["text"] == "There is a.txt."
    assert "a.txt" in next(e for e in events if e["type"] == "tool_end")["output"]


def test_text_output_is_the_final_answer(fake_api, cli_env):
    fake_api.enqueue(text_reply("Just this."))
    done = run_cli(["-p", "hi"], cli_env)
    assert (done.returncode, done.stdout, done.stderr) == (0, "Just this.\n", "")


def test_json_output_is_one_summary_object(fake_api, cli_env):
    fake_api.enqueue(text_reply("Summary."))
    done = run_cli(["-p", "hi", "--output-format", "json"], cli_env)
    (summary,) = json_lines(done.stdout)
    assert summary["status"] == "final" and summary["result"] == "Summary." and summary["turns"] == 1
    assert summary["usage"]["output_tokens"] >= 1


def test_prompt_from_stdin(fake_api, cli_env):
    fake_api.enqueue(text_reply("read it"))
    done = run_cli(["-p", "-"], cli_env, input="a prompt from a pipe")
    assert done.returncode == 0
    assert fake_api.requests[0].body["messages"][0]["content"][0]["text"] == "a prompt from a pipe"


def test_flags_reach_the_request(fake_api, cli_env):
    fake_api.enqueue(text_reply("ok"))
    done = run_cli(["-p", "hi", "--model", "@fast", "--no-stream", "--allow-tags", "none"], cli_env)
    assert done.returncode == 0, done.stderr
    body = fake_api.requests[0].body
    assert body["model"] == "claude-haiku-5-5" and not body.get("stream")
    assert {t["name"] for t in body["tools"]} == {"execute_command", "read_file", "list_dir"}


def test_loop_flags(fake_api, cli_env):
    fake_api.enqueue(text_reply("working"), text_reply("DONE NOW"))
    args = [
        "-p",
        "go",
        "--loop",
        "--loop-message",
        "more",
        "--loop-breaker",
        "DONE NOW",
        "--output-format",
        "stream-json",
    ]
    done = run_cli(args, cli_env)
    assert done.returncode == 0, done.stderr
    assert [e["loop"] for e in json_lines(done.stdout) if e["type"] == "loop"] == [1]
    assert fake_api.requests[1].body["messages"][-1]["content"][0]["text"] == "more"


def test_mutating_tools_are_denied_without_yes_and_run_with_it(fake_api, cli_env, tmp_path):
    target = tmp_path / "made"
    fake_api.enqueue(tool_reply("execute_command", {"command": f"touch {target}"}), text_reply("no"))
    assert run_cli(["-p", "make it"], cli_env, cwd=tmp_path).returncode == 4  # denied: no one to ask
    assert not target.exists() and "--yes" in str(fake_api.requests[1].body["messages"][-1])

    fake_api.enqueue(tool_reply("execute_command", {"command": f"touch {target}"}), text_reply("yes"))
    assert run_cli(["-p", "make it", "--yes"], cli_env, cwd=tmp_path).returncode == 0
    assert target.exists()


def test_missing_key_is_one_line_naming_the_variables(cli_env):
    env = {k: v for k, v in cli_env.items() if k not in {"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"}}
    done = run_cli(["-p", "hi"], env)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "ANTHROPIC_API_KEY" in done.stderr and "ANTHROPIC_BASE_URL" in done.stderr


def test_api_failure_exits_non_zero_with_a_reason(fake_api, cli_env):
    fake_api.enqueue(error_reply(401, message="invalid x-api-key"))
    done = run_cli(["-p", "hi", "--output-format", "stream-json"], cli_env)
    assert done.returncode == 1
    assert json_lines(done.stdout)[-1] == {
        "type": "error",
        "code": "auth",
        "message": json_lines(done.stdout)[-1]["message"],
    }
    assert done.stderr.startswith("cmdop-tui: error: the API key was refused") and done.stderr.count("\n") == 1


def test_corrupt_settings_file_is_a_clear_error(cli_env, tmp_path):
    (tmp_path / "config.toml").write_text("[agent]\nmax_turns = = 3\n")
    done = run_cli(["-p", "hi"], cli_env)
    assert done.returncode == 1 and "config.toml" in done.stderr and "line 2" in done.stderr
    assert (tmp_path / "config.toml").read_text() == "[agent]\nmax_turns = = 3\n"


def test_turn_limit_is_a_non_zero_exit(fake_api, cli_env):
    fake_api.enqueue(tool_reply("glob", {"pattern": "*.a"}))
    done = run_cli(["-p", "go", "--max-turns", "1"], cli_env)
    assert done.returncode == 1 and "max_turns" in done.stderr


@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signals_cancel_cleanly_mid_stream(fake_api, cli_env, signum, code):
    gate = threading.Event()
    fake_api.enqueue(text_reply("a long answer " * 50, stall_after=6, gate=gate))
    child = subprocess.Popen(
        CLI + ["-p", "hi", "--output-format", "stream-json"],
        env=cli_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        first = json.loads(child.stdout.readline())
        while first["type"] != "token":
            first = json.loads(child.stdout.readline())
        sent = time.monotonic()
        child.send_signal(signum)
        out, err = child.communicate(timeout=10)
        elapsed = time.monotonic() - sent
    finally:
        child.kill()
        gate.set()
    assert child.returncode == code, err
    assert json.loads(out.splitlines()[-1]) == {"type": "cancelled", "reason": "ui", "message": "stopped by the user"}
    assert "cancelled" in err and elapsed < 2.0


def test_permissions_list_shows_rules_and_their_source(cli_env, isolated_home):
    from cmdop_tui.permissions import Permissions

    permissions = Permissions.load()
    permissions.add_rule("execute_command(git status*)", "allow")
    done = run_cli(["permissions", "list"], cli_env)
    assert done.returncode == 0, done.stderr
    assert "mode: default" in done.stdout and "execute_command(git status*)" in done.stdout
    assert str(permissions.path) in done.stdout
    assert permissions.path.stat().st_mode & 0o777 == 0o600


def test_a_corrupt_permissions_file_is_a_clear_error(fake_api, cli_env, isolated_home):
    from cmdop_tui.permissions import rules_path

    path = rules_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("[[rule]]\nrule = = 3\n")
    done = run_cli(["permissions", "list"], cli_env)
    assert done.returncode == 1 and str(path) in done.stderr and "line 2" in done.stderr
    headless = run_cli(["-p", "hi"], cli_env)
    assert headless.returncode == 1 and str(path) in headless.stderr
    assert path.read_text() == "[[rule]]\nrule = = 3\n"


def test_budget_warning_and_hard_stop(fake_api, cli_env, tmp_path):
    fake_api.enqueue(*[tool_reply("glob", {"pattern": f"*.{i}", "cwd": str(tmp_path)}) for i in range(40)])
    done = run_cli(
        ["-p", "work", "--max-budget-usd", "0.025", "--max-turns", "40", "--output-format", "stream-json"], cli_env
    )
    assert done.returncode == 1
    kinds = [e["type"] for e in json_lines(done.stdout)]
    # The request that would pass 80 % is the one that would cross the budget: one line says both.
    assert "budget_warning" not in kinds and kinds[-1] == "error"
    assert json_lines(done.stdout)[-1]["code"] == "budget"
    (line,) = [line for line in done.stderr.splitlines() if line.startswith("cmdop-tui: budget: ")]
    assert "would cross the budget" in line and "of $0.025 spent" in line
    fake_api.discard_pending()


def test_agent_profile_from_the_file_and_flag(fake_api, cli_env, tmp_path):
    (tmp_path / "config.toml").write_text('agent = "ops"\n[agents.ops]\nmodel = "@smart"\nmax_turns = 3\n')
    fake_api.enqueue(text_reply("ok"), text_reply("ok"))
    assert run_cli(["-p", "hi"], cli_env).returncode == 0
    assert fake_api.requests[0].body["model"] == "claude-opus-5-5"
    assert run_cli(["-p", "hi", "--agent", "default", "--model", "@fast"], cli_env).returncode == 0
    assert fake_api.requests[1].body["model"] == "claude-haiku-5-5"
    bad = run_cli(["-p", "hi", "--agent", "ghost"], cli_env)
    assert bad.returncode == 1 and "unknown agent profile 'ghost'" in bad.stderr


def test_first_run_creates_a_commented_settings_file_and_config_path(cli_env, tmp_path):
    path = tmp_path / "config.toml"
    assert run_cli(["config", "path"], cli_env).stdout.strip() == str(path)
    run_cli(["-p", "-"], cli_env, input="")  # any run: an empty prompt still creates it first
    assert path.exists() and path.read_text().startswith("# cmdop-tui settings")


@pytest.mark.fault
def test_a_cut_answer_is_shown_and_said_and_exits_1(fake_api, cli_env):
    fake_api.enqueue(text_reply("Half an answ", stop_reason="max_tokens"))
    done = run_cli(["-p", "hi"], cli_env)
    assert done.returncode == 1 and done.stdout == "Half an answ\n"
    assert done.stderr.startswith("cmdop-tui: cut: the answer was cut at the reply limit (max_tokens")


@pytest.mark.fault
@pytest.mark.parametrize("url", ["localhost:8080", "api.example.com", "ftp://example.com"])
def test_a_base_url_that_is_not_http_is_said_at_once(fake_api, cli_env, url):
    done = run_cli(["-p", "hi"], {**cli_env, "ANTHROPIC_BASE_URL": url})
    assert done.returncode != 0 and not fake_api.requests
    (line,) = done.stderr.splitlines()
    assert url in line and "not an http(s) URL" in line


@pytest.mark.fault
def test_a_silent_endpoint_is_said_on_stderr_in_text_mode(fake_api, cli_env):
    """An endpoint that sends no headers: text mode says it waits (within 10 s), then answers."""
    gate = threading.Event()
    fake_api.enqueue(text_reply("Late, but here.", hang_before_headers=True, gate=gate))
    cli = subprocess.Popen(CLI + ["-p", "hi"], env=cli_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        said = cli.stderr.readline()  # the notice, while the request still waits
        gate.set()
        out, _ = cli.communicate(timeout=30)
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.wait()
    assert said.startswith("cmdop-tui: No answer from the model endpoint for 9 s; still waiting")
    assert cli.returncode == 0 and out == "Late, but here.\n"


@pytest.mark.fault
def test_a_closed_stdin_for_dash_p_is_a_usage_error(cli_env):
    done = subprocess.run(CLI + ["-p", "-"], env=cli_env, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    assert done.returncode == 2 and "the prompt is empty" in done.stderr  # /dev/null: an empty prompt
    closed = subprocess.run(
        CLI + ["-p", "-"], env=cli_env, capture_output=True, text=True, preexec_fn=lambda: os.close(0), timeout=30
    )
    assert closed.returncode == 2 and "standard input" in closed.stderr and "Traceback" not in closed.stderr


@pytest.mark.fault
@pytest.mark.parametrize("output_format", ["text", "json", "stream-json"])
def test_stdout_on_a_full_device_is_one_line_on_stderr(fake_api, cli_env, output_format):
    fake_api.enqueue(text_reply("An answer nobody can store."))
    argv = CLI + ["-p", "hi", "--output-format", output_format]
    with open("/dev/full", "w") as full:
        done = subprocess.run(argv, env=cli_env, stdout=full, stderr=subprocess.PIPE, text=True, timeout=30)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr and "standard output" in done.stderr


@pytest.mark.fault
def test_a_reader_that_went_away_ends_quietly(fake_api, cli_env):
    """stdout a pipe whose reader is gone (`| head` that has read enough): exit 1, no traceback."""
    fake_api.enqueue(text_reply("An answer nobody reads."))
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            CLI + ["-p", "hi"], env=cli_env, stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=30
        )
    finally:
        os.close(write_end)
    assert done.returncode == 1 and "Traceback" not in done.stderr


@pytest.mark.fault
@pytest.mark.parametrize("output_format", ["text", "json", "stream-json"])
def test_stdout_closed_is_one_line_on_stderr(fake_api, cli_env, output_format):
    fake_api.enqueue(text_reply("An answer with nowhere to go."))
    argv = CLI + ["-p", "hi", "--output-format", output_format]
    done = subprocess.run(
        argv, env=cli_env, stderr=subprocess.PIPE, text=True, preexec_fn=lambda: os.close(1), timeout=30
    )
    assert done.returncode == 1
    (line,) = done.stderr.splitlines()
    assert "Traceback" not in line and "standard output" in line
    assert not fake_api.requests  # nothing asked of the model for an answer that could go nowhere
