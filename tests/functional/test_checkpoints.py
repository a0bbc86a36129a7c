"""Checkpoints and /rewind on this machine: a session whose turns change files with the file
tools and with shell commands (sed -i, rm, mv, chmod +x, a new file) goes back to any turn, byte
for byte and mode for mode; the rewind itself can be undone; a file changed by someone else is
not overwritten unasked; a checkpoint that fails is said and the turn goes on."""

from __future__ import annotations

import asyncio
import os
import shutil
import stat
import subprocess
import time
from pathlib import Path

import pytest
from agent_helpers import Recorder
from fake_anthropic import text_reply, tool_reply
from remote_side import make_home, remove_home

from cmdop_tui.agent.approval import Approval, ToolCall
from cmdop_tui.config.settings import CheckpointSettings, Settings
from cmdop_tui.machines.sandbox import bubblewrap
from cmdop_tui.session.checkpoint_records import checkpoints_dir
from cmdop_tui.session.rewind import RewindConflict
from cmdop_tui.session.session import Session

SHELL_EDITS = (
    "sed -i s/one/two/ a.txt && rm gone.txt && mv conf/app.ini conf/app.conf && chmod +x run.sh && "
    "printf 'new\\n' > made.txt"
)


def project(root: Path) -> Path:
    tree = root / "project"
    (tree / "conf").mkdir(parents=True)
    (tree / "a.txt").write_text("one\nline two\n")
    (tree / "gone.txt").write_text("to be removed\n")
    (tree / "conf" / "app.ini").write_text("[app]\nport = 80\n")
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


def settings(**checkpoints: object) -> Settings:
    return Settings(checkpoints=CheckpointSettings(**checkpoints)).with_run(auto_approve=True)  # type: ignore[arg-type]


async def three_turns(fake_api, session: Session, tree: Path) -> list[dict[str, tuple[bytes, int]]]:
    """Turn 1: the file tools; turn 2: shell edits; turn 3: nothing changed. The tree's state
    before each turn, and at the end."""
    fake_api.enqueue(
        tool_reply("write_file", {"path": "notes.md", "content": "# notes\n"}),
        tool_reply("edit_file", {"path": "a.txt", "old_string": "line two", "new_string": "line 2"}),
        text_reply("edited"),
        tool_reply("execute_command", {"command": SHELL_EDITS}),
        text_reply("shell done"),
        text_reply("nothing to change"),
    )
    states = [state(tree)]
    for prompt in ("edit with the tools", "edit with the shell", "just talk"):
        assert (await session.run(prompt, Recorder())).status == "final"
        states.append(state(tree))
    return states


async def test_every_turn_can_be_rewound_byte_for_byte_and_the_rewind_undone(fake_api, anthropic_env, tmp_path):
    tree = project(tmp_path)
    async with Session(settings(), platform="headless", cwd=tree, record=False) as session:
        states = await three_turns(fake_api, session, tree)
        assert states[2]["run.sh"][1] & 0o111 and "conf/app.conf" in states[2]

        turns = await session.turns()
        assert [t.prompt for t in turns] == ["edit with the tools", "edit with the shell", "just talk"]
        first, second, third = turns
        assert {f.path: f.status for m in first.machines for f in m.files} == {"notes.md": "added", "a.txt": "modified"}
        assert {f.path: f.status for m in second.machines for f in m.files} == {
            "a.txt": "modified",
            "gone.txt": "deleted",
            "conf/app.ini": "deleted",
            "conf/app.conf": "added",
            "run.sh": "modified",
            "made.txt": "added",
        }
        assert third.machines == ()  # a turn that changed nothing took no checkpoint

        plan = await session.rewind_plan(2)
        assert "\n-two\n+one\n" in plan.machines[0].patch  # what will change, from now to then
        assert plan.conflicts == [] and plan.files_changed == 6
        done = await session.rewind(plan)
        assert state(tree) == states[1]  # as before turn 2: byte for byte, modes too
        assert done.prompt == "edit with the shell" and done.conversation
        assert len(session.runner.conversation.messages) == 6  # turn 1: its prompt, two calls, answer

        p1 = await session.rewind_plan(1)
        print("RECORDS", session.checkpoints.log.checkpoints())
        print("P1", [(m.present, m.target, m.changed_by_others) for m in p1.machines])
        back = await session.rewind(p1, conversation=False)
        assert state(tree) == states[0] and back.files is not None

        undo = await session.rewind(await session.rewind_plan(back.files.undo_turn))
        assert state(tree) == states[1]  # the last rewind undone
        assert undo.conversation_note is not None  # a rewind's turn has no conversation to go back to


async def test_a_file_changed_by_someone_else_is_not_overwritten_unasked(fake_api, anthropic_env, tmp_path):
    tree = project(tmp_path)
    async with Session(settings(), platform="headless", cwd=tree, record=False) as session:
        await three_turns(fake_api, session, tree)
        (tree / "a.txt").write_text("the user's own edit\n")  # after the session's last turn
        plan = await session.rewind_plan(1)
        assert plan.conflicts == ["local:a.txt"]
        with pytest.raises(RewindConflict):
            await session.rewind(plan)
        assert (tree / "a.txt").read_text() == "the user's own edit\n"  # nothing written
        await session.rewind(plan, force=True)
        assert (tree / "a.txt").read_text() == "one\nline two\n"


async def test_a_file_outside_the_working_tree_is_kept_and_put_back(fake_api, anthropic_env, tmp_path):
    tree, outside = project(tmp_path), tmp_path / "elsewhere.conf"
    outside.write_text("before\n")
    os.chmod(outside, 0o600)
    fake_api.enqueue(tool_reply("write_file", {"path": str(outside), "content": "after\n"}), text_reply("ok"))
    policy = Settings(checkpoints=CheckpointSettings()).with_run(auto_approve=True, sandbox_mode="off")
    async with Session(policy, platform="headless", cwd=tree, record=False) as session:
        await session.run("change it", Recorder())
        assert outside.read_text() == "after\n"
        await session.rewind(await session.rewind_plan(1))
    assert outside.read_text() == "before\n" and stat.S_IMODE(outside.stat().st_mode) == 0o600


async def test_a_failed_checkpoint_is_said_and_the_turn_goes_on(fake_api, anthropic_env, tmp_path):
    tree = project(tmp_path)
    checkpoints_dir().mkdir(parents=True)
    (checkpoints_dir() / "repositories").write_text("not a folder")  # the repositories cannot be made
    said: list[str] = []
    async with Session(settings(), platform="headless", cwd=tree, record=False) as session:
        session.recorder.listeners.append(lambda notice: said.append(notice.text))
        fake_api.enqueue(tool_reply("execute_command", {"command": "echo x > x.txt"}), text_reply("done"))
        assert (await session.run("go", Recorder())).text == "done"
        assert (tree / "x.txt").read_text() == "x\n"  # the turn went on
        assert any("checkpoint on local failed" in text for text in said), said
        [turn] = await session.turns()
        assert any("no checkpoint on local" in m.note for m in turn.machines)


async def test_checkpoints_can_be_turned_off(fake_api, anthropic_env, tmp_path):
    tree = project(tmp_path)
    async with Session(settings(enabled=False), platform="headless", cwd=tree, record=False) as session:
        fake_api.enqueue(tool_reply("execute_command", {"command": "echo x > x.txt"}), text_reply("done"))
        await session.run("go", Recorder())
        [turn] = await session.turns()
        assert turn.machines == ()
    assert not (checkpoints_dir() / "repositories").exists()


async def test_checkpoints_live_with_the_session_and_come_back_with_it(fake_api, anthropic_env, tmp_path):
    tree = project(tmp_path)
    original = state(tree)
    fake_api.enqueue(tool_reply("execute_command", {"command": SHELL_EDITS}), text_reply("done"))
    async with Session(settings(), platform="headless", cwd=tree) as session:
        await session.run("edit with the shell", Recorder())
    assert state(tree) != original
    resumed = settings().with_run(continue_latest=True)
    async with Session(resumed, platform="headless", cwd=tree) as session:
        [turn] = await session.turns()
        assert turn.prompt == "edit with the shell" and len(turn.machines[0].files) == 6
        done = await session.rewind(await session.rewind_plan(1))
        assert done.conversation and session.runner.conversation.messages == []
    assert state(tree) == original


async def test_a_rewind_writes_nothing_through_a_symlink_a_command_left(fake_api, anthropic_env, tmp_path):
    # A hostile turn swaps a folder for a link to a place outside the tree: putting the folder's
    # files back must make the folder again, not write into where the link points.
    tree, outside = project(tmp_path), tmp_path / "outside"
    outside.mkdir()
    (outside / "app.ini").write_text("someone else's\n")
    original = state(tree)
    swap = f"rm -rf conf && ln -s {outside} conf && rm a.txt && ln -s {outside}/app.ini a.txt"
    fake_api.enqueue(tool_reply("execute_command", {"command": swap}), text_reply("swapped"))
    policy = settings().with_run(sandbox_mode="off")  # the sandbox would refuse nothing here anyway
    async with Session(policy, platform="headless", cwd=tree, record=False) as session:
        await session.run("swap", Recorder())
        assert (tree / "conf").is_symlink()
        await session.rewind(await session.rewind_plan(1))
    assert not (tree / "conf").is_symlink() and not (tree / "a.txt").is_symlink()
    assert state(tree) == original
    assert [p.name for p in outside.iterdir()] == ["app.ini"] and (
        outside / "app.ini"
    ).read_text() == "someone else's\n"


async def test_checkpoints_older_than_the_settings_keep_are_removed(fake_api, anthropic_env, tmp_path):
    tree = project(tmp_path)
    fake_api.enqueue(tool_reply("execute_command", {"command": "echo x > x.txt"}), text_reply("done"))
    async with Session(settings(), platform="headless", cwd=tree) as session:
        await session.run("go", Recorder())
        old = session.checkpoints.log.folder
        repository = next((checkpoints_dir() / "repositories").iterdir())
        ref = f"refs/cmdop/{session.checkpoints.ref}"
    git = ["git", f"--git-dir={repository}"]
    assert subprocess.run([*git, "rev-parse", "--verify", ref], capture_output=True).returncode == 0
    long_ago = time.time() - 40 * 86_400
    for path in (old, old / "records.jsonl"):
        os.utime(path, (long_ago, long_ago))
    async with Session(settings(keep_days=30), platform="headless", cwd=tree, record=False):
        pass  # opening a session prunes
    assert not old.exists()
    assert subprocess.run([*git, "rev-parse", "--verify", ref], capture_output=True).returncode != 0


@pytest.mark.skipif(bubblewrap() is None, reason="bubblewrap cannot run here")
async def test_a_command_a_person_let_out_of_the_sandbox_is_noted_and_its_refused_path_kept(
    fake_api, anthropic_env, tmp_path
):
    tree, place = project(tmp_path), make_home()  # outside /tmp: the sandbox refuses the write there
    try:
        target = place / "site.conf"
        target.write_text("listen 80\n")

        async def person(call: ToolCall) -> Approval:
            return Approval(True, by_person=True)

        command = f"echo 'listen 8080' > {target}"
        fake_api.enqueue(tool_reply("execute_command", {"command": command}), text_reply("done"))
        async with Session(Settings(), platform="headless", cwd=tree, record=False, ask=person) as session:
            await session.run("change the site", Recorder())
            assert target.read_text() == "listen 8080\n"
            [turn] = await session.turns()
            assert any("ran outside the sandbox" in text for text in turn.cannot)
            plan = await session.rewind_plan(1)
            assert [record.path for record in plan.outside] == [str(target)]
            await session.rewind(plan)
        assert target.read_text() == "listen 80\n"
    finally:
        remove_home(place)


async def test_a_stop_during_a_checkpoint_stops_at_once_and_leaves_git_usable(
    fake_api, anthropic_env, tmp_path, monkeypatch
):
    tree, hold = project(tmp_path), tmp_path / "hold"
    hold.mkdir()
    real_git = shutil.which("git")
    slow = hold / "git"  # git that waits, once, for the test to let it go on
    slow.write_text(
        f'#!/bin/bash\nif [ "$1" = update-index ] && [ -e {hold}/armed ] && [ ! -e {hold}/seen ]; then\n'
        f'  touch {hold}/seen; while [ ! -e {hold}/go ]; do sleep 0.01; done\nfi\nexec {real_git} "$@"\n'
    )
    slow.chmod(0o755)
    monkeypatch.setenv("PATH", f"{hold}:{os.environ['PATH']}")
    async with Session(settings(), platform="headless", cwd=tree, record=False) as session:
        await session.checkpoints.shadow("local").snapshot(session.checkpoints.ref, "the tree known")
        (tree / "a.txt").write_text("changed before the turn\n")  # so the turn's checkpoint hashes
        (hold / "armed").touch()
        fake_api.enqueue(tool_reply("execute_command", {"command": "echo x > x.txt"}))  # stopped before more
        run = asyncio.create_task(session.run("go", Recorder()))
        while not (hold / "seen").exists():
            await asyncio.sleep(0.01)  # the checkpoint is under way
        session.stop()
        result = await asyncio.wait_for(run, 5)
        assert result.status == "cancelled" and not (tree / "x.txt").exists()
        (hold / "go").touch()
        fake_api.enqueue(tool_reply("execute_command", {"command": "echo y > y.txt"}), text_reply("done"))
        assert (await session.run("again", Recorder())).text == "done"
        turns = await session.turns()
        assert [len(t.machines) for t in turns] == [1, 1] and all(not m.note for t in turns for m in t.machines)


async def test_nothing_a_command_plants_in_the_tree_runs_when_it_is_checkpointed(fake_api, anthropic_env, tmp_path):
    # The checkpoint's git runs outside the sandbox, on a tree the model wrote: a filter, an
    # fsmonitor or a hook planted there (in the tree or a nested repository) must never run.
    tree, marker = project(tmp_path), tmp_path / "ran"
    plant = (
        f"printf '* filter=evil diff=evil\\n' > .gitattributes && mkdir -p sub && git -C sub init -q && "
        f"git -C sub config core.fsmonitor 'touch {marker}' && git -C sub config filter.evil.clean 'touch {marker}' && "
        f"printf '[filter \"evil\"]\\n\\tclean = touch {marker}\\n[core]\\n\\tfsmonitor = touch {marker}\\n' > gitconfig && "
        f"mkdir -p .git/hooks && printf '#!/bin/sh\\ntouch {marker}\\n' > .git/hooks/pre-commit && echo x > new.txt"
    )
    fake_api.enqueue(tool_reply("execute_command", {"command": plant}), text_reply("planted"))
    policy = settings().with_run(sandbox_mode="off")  # the worst case: the command wrote everything it wanted
    async with Session(policy, platform="headless", cwd=tree, record=False) as session:
        await session.run("plant", Recorder())
        assert (tree / "sub" / ".git").is_dir() and (tree / "new.txt").exists()  # all planted
        await session.rewind(await session.rewind_plan(1))
    assert not marker.exists() and not (tree / "new.txt").exists()
