"""`cmdop-tui rewind` as a user runs it: headless sessions (`-p`, recorded) in child processes that
change a project through the fake API, then the rewind command, with no API key, in another; and
`Operator.turns` / `Operator.rewind` in the library."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from fake_anthropic import text_reply, tool_reply

from cmdop_tui import Operator, RewindConflict, RewindError
from cmdop_tui.transcripts import Transcript, list_sessions

CLI = [sys.executable, "-m", "cmdop_tui"]
SHELL_EDIT = "sed -i s/one/two/ a.txt && rm gone.txt && printf 'made\\n' > made.txt && chmod +x run.sh"


def project(root: Path) -> Path:
    tree = root / "project"
    tree.mkdir()
    (tree / "a.txt").write_text("one\nline two\n")
    (tree / "gone.txt").write_text("to be removed\n")
    (tree / "run.sh").write_text("#!/bin/sh\necho run\n")
    (tree / "bytes.bin").write_bytes(bytes(range(256)))
    return tree


def state(tree: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under `tree`: its bytes and its permission bits."""
    return {
        str(path.relative_to(tree)): (path.read_bytes(), stat.S_IMODE(path.stat().st_mode))
        for path in sorted(tree.rglob("*"))
        if path.is_file()
    }


@pytest.fixture
def cli_env(anthropic_env, tmp_path):
    env = {**os.environ, **anthropic_env, "CMDOP_TUI_CONFIG": str(tmp_path / "config.toml")}
    env.pop("CMDOP_INTENT_ROUTER", None)
    return env


def run_cli(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(CLI + args, env=env, capture_output=True, text=True, timeout=60, cwd=cwd)


def rewind(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """`cmdop-tui rewind ARGS` without an API key: a rewind asks no model."""
    keyless = {k: v for k, v in env.items() if not k.startswith("ANTHROPIC_")}
    return run_cli(["rewind", *args], keyless, cwd)


def two_turns(fake_api, env: dict[str, str], tree: Path) -> list[dict[str, tuple[bytes, int]]]:
    """Turn 1 (`-p`): the file tools; turn 2 (`--continue -p`): a shell edit. The tree's state
    before each turn, and at the end."""
    fake_api.enqueue(
        tool_reply("write_file", {"path": "notes.md", "content": "# notes\n"}),
        tool_reply("edit_file", {"path": "a.txt", "old_string": "line two", "new_string": "line 2"}),
        text_reply("edited"),
        tool_reply("execute_command", {"command": SHELL_EDIT}),
        text_reply("shell done"),
    )
    states = [state(tree)]
    for args in (["-p", "edit with the tools"], ["--continue", "-p", "edit with the shell"]):
        done = run_cli([*args, "--yes"], env, tree)
        assert done.returncode == 0, done.stderr
        states.append(state(tree))
    assert states[0] != states[1] != states[2]
    return states


def sent_texts(request) -> list[str]:
    """Every user text of a request, in order."""
    return [
        block["text"]
        for message in request.body["messages"]
        if message["role"] == "user"
        for block in message["content"]
        if block.get("type") == "text"
    ]


def test_turns_are_listed_with_what_each_changed(fake_api, cli_env, tmp_path):
    tree = project(tmp_path)
    two_turns(fake_api, cli_env, tree)
    listed = rewind([], cli_env, tree)
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("#1  "))
    assert lines[first].endswith("edit with the tools")
    assert lines[first + 1] == "    local: 2 files +2 \N{MINUS SIGN}1"  # notes.md added, a.txt edited
    second = next(i for i, line in enumerate(lines) if line.startswith("#2  "))
    assert lines[second].endswith("edit with the shell")
    assert lines[second + 1].startswith("    local: 4 files ")


def test_a_dry_run_prints_the_diff_and_writes_nothing(fake_api, cli_env, tmp_path):
    tree = project(tmp_path)
    after = two_turns(fake_api, cli_env, tree)[-1]
    transcripts = sorted((Path(os.environ["HOME"]) / ".local/share").rglob("sessions/*.jsonl"))
    before = [path.read_bytes() for path in transcripts]
    dry = rewind(["--turn", "2", "--dry-run"], cli_env, tree)
    assert dry.returncode == 0, dry.stderr
    assert "=== local: 4 files" in dry.stdout
    assert "\n-two\n+one\n" in dry.stdout and "+to be removed" in dry.stdout  # from now to then
    assert "nothing was written" in dry.stdout
    assert state(tree) == after and [path.read_bytes() for path in transcripts] == before


def test_rewind_restores_the_files_and_continue_goes_on_without_the_turn(fake_api, cli_env, tmp_path):
    tree = project(tmp_path)
    states = two_turns(fake_api, cli_env, tree)
    back = rewind(["--turn", "2"], cli_env, tree)
    assert back.returncode == 0, back.stderr
    assert state(tree) == states[1]  # byte for byte, modes too
    assert "restored local: 4 files" in back.stdout and "--continue" in back.stdout

    fake_api.enqueue(text_reply("third answer"))
    done = run_cli(["--continue", "-p", "a third prompt"], cli_env, tree)
    assert done.returncode == 0, done.stderr
    texts = sent_texts(fake_api.requests[-1])
    assert texts[0] == "edit with the tools" and texts[-1] == "a third prompt"
    assert not any("edit with the shell" in text for text in texts)

    to_start = rewind(["--turn", "1"], cli_env, tree)
    assert to_start.returncode == 0, to_start.stderr
    assert state(tree) == states[0]
    listed = rewind([], cli_env, tree).stdout
    assert "(rewind to turn 2)" in listed and "(rewind to turn 1)" in listed


def test_the_files_only_and_the_conversation_only(fake_api, cli_env, tmp_path):
    tree = project(tmp_path)
    states = two_turns(fake_api, cli_env, tree)
    conversation = rewind(["--turn", "2", "--conversation-only"], cli_env, tree)
    assert conversation.returncode == 0, conversation.stderr
    assert state(tree) == states[2] and "=== local" not in conversation.stdout
    files = rewind(["--turn", "1", "--files-only"], cli_env, tree)
    assert files.returncode == 0, files.stderr
    assert state(tree) == states[0]
    fake_api.enqueue(text_reply("go on"))
    assert run_cli(["--continue", "-p", "next"], cli_env, tree).returncode == 0
    assert sent_texts(fake_api.requests[-1])[0] == "edit with the tools"  # turn 1 stayed in the conversation


def test_a_file_changed_by_someone_else_is_refused_unless_forced(fake_api, cli_env, tmp_path):
    tree = project(tmp_path)
    states = two_turns(fake_api, cli_env, tree)
    (tree / "a.txt").write_text("the user's own edit\n")
    refused = rewind(["--turn", "1"], cli_env, tree)
    assert refused.returncode == 1
    assert "local:a.txt" in refused.stderr and "--force" in refused.stderr
    assert (tree / "a.txt").read_text() == "the user's own edit\n"  # nothing written
    assert (tree / "made.txt").exists()
    forced = rewind(["--turn", "1", "--force"], cli_env, tree)
    assert forced.returncode == 0, forced.stderr
    assert state(tree) == states[0]


def test_a_session_is_chosen_by_id_prefix_from_anywhere(fake_api, cli_env, tmp_path):
    tree = project(tmp_path)
    fake_api.enqueue(tool_reply("write_file", {"path": "x.txt", "content": "x\n"}), text_reply("ok"))
    done = run_cli(["-p", "make x", "--yes", "--output-format", "json"], cli_env, tree)
    assert done.returncode == 0, done.stderr
    [path] = (Path(os.environ["HOME"]) / ".local/share").rglob("sessions/*.jsonl")
    session = json.loads(path.read_text().splitlines()[0])["id"]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    back = rewind(["--session", session[:12], "--turn", "1"], cli_env, elsewhere)
    assert back.returncode == 0, back.stderr
    assert not (tree / "x.txt").exists() and not (elsewhere / "x.txt").exists()


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--session", "nosuchsession"], "no session 'nosuchsession'"),
        (["--turn", "9"], "no turn 9 in this session"),
    ],
)
def test_an_unknown_session_or_turn_is_one_line(fake_api, cli_env, tmp_path, args, said):
    tree = project(tmp_path)
    fake_api.enqueue(tool_reply("write_file", {"path": "x.txt", "content": "x\n"}), text_reply("ok"))
    assert run_cli(["-p", "make x", "--yes"], cli_env, tree).returncode == 0
    failed = rewind(args, cli_env, tree)
    assert failed.returncode == 1 and failed.stdout == ""
    assert failed.stderr.count("\n") == 1 and said in failed.stderr, failed.stderr


def test_what_no_checkpoint_undoes_is_named(fake_api, cli_env, tmp_path):
    tree = project(tmp_path)
    command = "printf 'x\\n' > x.txt && echo systemctl restart web"  # a restart, as far as a checkpoint can tell
    fake_api.enqueue(tool_reply("execute_command", {"command": command}), text_reply("ok"))
    assert run_cli(["-p", "restart web", "--yes"], cli_env, tree).returncode == 0
    listed = rewind([], cli_env, tree).stdout
    assert "    local: 1 files +1 \N{MINUS SIGN}0" in listed
    assert "    cannot be undone: local: services started, stopped or restarted: " in listed
    dry = rewind(["--turn", "1", "--dry-run"], cli_env, tree).stdout
    assert "cannot be restored: local: services started, stopped or restarted: " in dry


def test_a_session_in_use_elsewhere_is_not_rewound(fake_api, cli_env, tmp_path):
    tree = project(tmp_path)
    fake_api.enqueue(tool_reply("write_file", {"path": "x.txt", "content": "x\n"}), text_reply("ok"))
    assert run_cli(["-p", "make x", "--yes"], cli_env, tree).returncode == 0
    [info] = list_sessions()
    held = Transcript.open(info.id)  # as the app holds the session it runs
    try:
        busy = rewind(["--turn", "1"], cli_env, tree)
    finally:
        held.close()
    assert busy.returncode == 1 and "is in use by another cmdop-tui process" in busy.stderr
    assert (tree / "x.txt").exists()


def test_nothing_to_rewind_is_said(fake_api, cli_env, tmp_path):
    tree = project(tmp_path)
    none = rewind([], cli_env, tree)
    assert none.returncode == 1 and "no session was recorded in" in none.stderr
    fake_api.enqueue(text_reply("just talk"))
    assert run_cli(["-p", "hello", "--yes"], cli_env, tree).returncode == 0
    listed = rewind([], cli_env, tree)
    assert listed.returncode == 0, listed.stderr
    assert "#1  " in listed.stdout and "no files changed" in listed.stdout
    usage = rewind(["--files-only", "--conversation-only"], cli_env, tree)
    assert usage.returncode == 2 and "not allowed with" in usage.stderr


def test_a_session_killed_mid_turn_is_rewound(fake_api, cli_env, tmp_path):
    """kill -9 after the turn's write: its end was never kept, so what it wrote cannot be told
    from a change by someone else (refused unasked); --force goes back, and the conversation too."""
    tree = project(tmp_path)
    before, held = state(tree), threading.Event()
    fake_api.enqueue(
        tool_reply("write_file", {"path": "a.txt", "content": "half done\n"}), text_reply("never", gate=held)
    )
    child = subprocess.Popen(
        [*CLI, "-p", "rewrite a.txt", "--yes"], env=cli_env, cwd=tree, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        assert fake_api.wait_for_requests(2, timeout=30)  # the write ran, its result went to the model
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=10)
    finally:
        held.set()
        child.stderr.close()
    assert (tree / "a.txt").read_text() == "half done\n"
    listed = rewind([], cli_env, tree)
    assert "#1  " in listed.stdout and "local: its end was not kept" in listed.stdout, listed.stderr
    refused = rewind(["--turn", "1"], cli_env, tree)
    assert refused.returncode == 1 and "local:a.txt" in refused.stderr
    forced = rewind(["--turn", "1", "--force"], cli_env, tree)
    assert forced.returncode == 0, forced.stderr
    assert state(tree) == before and "the conversation is back" in forced.stdout


def test_a_remote_machine_is_rewound_over_ssh(ssh_hosts, fake_api, cli_env, tmp_path):
    remote_data = tmp_path / "remote-data"
    workspace = remote_data / "cmdop-tui-workspace"  # beside the data dir there
    workspace.mkdir(parents=True)
    (workspace / "app.conf").write_text("port = 80\n")
    lab = ssh_hosts(1, env={"XDG_DATA_HOME": str(remote_data)})
    Path(cli_env["CMDOP_TUI_CONFIG"]).write_text(f"ssh_config = {json.dumps(str(lab.config))}\n")
    tree = project(tmp_path)
    fake_api.enqueue(
        tool_reply("edit_file", {"path": "app.conf", "old_string": "80", "new_string": "8080"}),
        tool_reply("execute_command", {"command": "printf 'x\\n' > made.txt"}),
        text_reply("changed on alpha"),
    )
    done = run_cli(["-p", "change alpha", "--machine", "alpha", "--yes"], cli_env, tree)
    assert done.returncode == 0, done.stderr
    assert (workspace / "app.conf").read_text() == "port = 8080\n" and (workspace / "made.txt").exists()

    listed = rewind([], cli_env, tree)
    assert "    alpha: 2 files +2 \N{MINUS SIGN}1" in listed.stdout, listed.stdout + listed.stderr
    back = rewind(["--turn", "1"], cli_env, tree)
    assert back.returncode == 0, back.stderr
    assert "=== alpha: 2 files" in back.stdout and "-port = 8080" in back.stdout
    assert (workspace / "app.conf").read_text() == "port = 80\n" and not (workspace / "made.txt").exists()


def test_the_operator_rewinds_files_and_conversation(fake_api, anthropic_env, tmp_path):
    tree = project(tmp_path)
    fake_api.enqueue(
        tool_reply("write_file", {"path": "notes.md", "content": "# notes\n"}),
        text_reply("wrote"),
        tool_reply("execute_command", {"command": SHELL_EDIT}),
        text_reply("shell done"),
        text_reply("after the rewind"),
    )
    before = state(tree)
    with Operator(cwd=tree, approval="auto") as operator:
        operator.chat("write notes")
        after_first = state(tree)
        operator.chat("edit with the shell")
        turns = operator.turns()
        assert [t.prompt for t in turns] == ["write notes", "edit with the shell"]
        assert [len(t.machines[0].files) for t in turns] == [1, 4]

        done = operator.rewind()  # the last turn
        assert state(tree) == after_first and done.conversation and done.prompt == "edit with the shell"
        assert [m["role"] for m in operator.messages] == ["user", "assistant", "user", "assistant"]
        assert operator.chat("again") == "after the rewind"
        assert sent_texts(fake_api.requests[-1]) == ["write notes", "again"]

        (tree / "notes.md").write_text("mine\n")
        with pytest.raises(RewindConflict) as conflict:
            operator.rewind(1, conversation=False)
        assert conflict.value.paths == ["local:notes.md"]
        forced = operator.rewind(1, conversation=False, force=True)
        assert state(tree) == before and forced.files is not None and not forced.conversation
        with pytest.raises(RewindError, match="no turn 42"):
            operator.rewind(42)


def test_the_help_names_the_command(cli_env, tmp_path):
    shown = run_cli(["-h"], cli_env, tmp_path)
    assert shown.returncode == 0 and "cmdop-tui rewind [--session ID] [--turn N]" in shown.stdout
