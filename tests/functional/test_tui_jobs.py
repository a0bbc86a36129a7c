"""/jobs in the real app (the fake API through the real SDK, real commands): jobs per machine
with state, runtime and last line; Enter follows one live; `k` kills it; a job's end is a
notification, told on the terminal too while it is away."""

from __future__ import annotations

import os
from dataclasses import replace

from agent_helpers import running
from fake_anthropic import reply, text_reply, tool_reply, tool_use
from textual import events
from textual.widgets import OptionList, TextArea
from tui_helpers import finish_turn, make_app, showing, submit, wait_until

from cmdop_tui.config.model import NotifySettings
from cmdop_tui.config.settings import Settings
from cmdop_tui.tui import attention
from cmdop_tui.tui.screens.jobs import JobFollowScreen, JobsScreen
from cmdop_tui.tui.widgets.tool_card import ToolCard

OSC9 = "\x1b]9;cmdop-tui: "


def option_texts(screen: JobsScreen) -> list[str]:
    listing = screen.query_one(OptionList)
    return [str(listing.get_option_at_index(index).prompt) for index in range(listing.option_count)]


def notifying_app(fake_api):
    """An app that runs calls without asking and notifies (OSC 9) of anything that took time."""
    settings = replace(Settings(permission_mode="auto"), notify=NotifySettings(method="osc9", min_seconds=0.001))
    return make_app(fake_api, settings=settings)


async def test_jobs_are_listed_followed_killed_and_their_end_told(fake_api, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    os.mkfifo(tmp_path / "gate")
    marker = "1000.6161"
    fake_api.enqueue(
        tool_reply("execute_command", {"command": "echo waiting; cat gate; echo released; exit 2", "background": True}),
        tool_reply("execute_command", {"command": f"echo sleeping; exec sleep {marker}", "background": True}),
        text_reply("Two jobs run."),
    )
    app = notifying_app(fake_api)
    async with app.run_test(size=(140, 36)) as pilot:
        written: list[str] = []
        app.notifier.write = written.append
        await submit(pilot, "start two jobs")
        await finish_turn(pilot)
        await wait_until(pilot, lambda: running("sleep", marker), what="the second job's sleep")

        await submit(pilot, "/jobs")
        await wait_until(pilot, lambda: showing(app, JobsScreen), what="the jobs screen")
        screen = app.screen
        assert isinstance(screen, JobsScreen)
        await wait_until(pilot, lambda: "sleeping" in " ".join(option_texts(screen)), what="the last lines")
        rows = option_texts(screen)
        assert rows[0].startswith("local") and "2 of 2 running" in rows[0]
        assert "job-1" in rows[1] and "running" in rows[1] and "waiting" in rows[1]
        assert "job-2" in rows[2] and "sleeping" in rows[2]

        screen.query_one(OptionList).highlighted = 1
        await pilot.press("enter")  # follow job-1 live
        await wait_until(pilot, lambda: showing(app, JobFollowScreen), what="the followed job")
        follow = app.screen
        await wait_until(pilot, lambda: "waiting" in follow.query_one(TextArea).text, what="its output")
        app.post_message(events.AppBlur())  # the terminal is away when it ends
        await wait_until(pilot, lambda: not app.app_focus, what="the app unfocused")
        with open(tmp_path / "gate", "w") as gate:
            gate.write("let go\n")
        await wait_until(pilot, lambda: "released" in follow.query_one(TextArea).text, what="the output that follows")
        await wait_until(pilot, lambda: written, what="the end told")
        assert written == [f"{OSC9}Background job job-1 on local ended: exit 2\x07\x07"]
        await pilot.press("escape")

        await wait_until(pilot, lambda: showing(app, JobsScreen), what="back to the list")
        screen.query_one(OptionList).highlighted = 2
        await pilot.press("k")
        await wait_until(pilot, lambda: "killed" in option_texts(screen)[2], what="job-2 killed")
        assert running("sleep", marker) == []
        assert "exit 2" in option_texts(screen)[1] and "0 of 2 running" in option_texts(screen)[0]
        await pilot.press("escape")


async def test_ctrl_b_moves_the_running_command_to_the_background(fake_api, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    os.mkfifo(tmp_path / "gate")
    fake_api.enqueue(
        tool_reply("execute_command", {"command": "echo before; cat gate > /dev/null; echo after; exit 5"}),
        text_reply("It runs on in the background."),
    )
    app = make_app(fake_api, settings=Settings(permission_mode="auto"))
    async with app.run_test(size=(140, 36)) as pilot:
        assert any(b.key == "ctrl+b" and b.tooltip for _, b in app._bindings)  # listed in /help and the footer
        await submit(pilot, "run it")
        cards = lambda: list(app.query(ToolCard))  # noqa: E731
        await wait_until(pilot, lambda: cards() and "before" in cards()[0].record.live_output, what="its first line")
        await pilot.press("ctrl+b")
        await finish_turn(pilot)  # the call returned without the command's end
        told = fake_api.requests[1].body["messages"][-1]["content"][0]
        assert "moved this command to the background" in told["content"] and "job-1" in told["content"]
        jobs = app.session.jobs
        assert jobs is not None
        job = jobs.info("job-1")
        assert job is not None and job.running and job.call_id == told["tool_use_id"]
        with open(tmp_path / "gate", "w") as gate:  # the same process goes on to its end
            gate.write("go\n")
        await wait_until(pilot, lambda: not jobs.info("job-1").running, what="the job's end")
        ended = jobs.info("job-1")
        assert ended.state == "exited" and ended.exit_code == 5
        assert open(ended.output_file).read() == "before\nafter\n"
        await pilot.press("ctrl+b")  # nothing runs: said, nothing breaks
        await wait_until(
            pilot, lambda: any("No running command" in n.message for n in app._notifications), what="the warning"
        )


async def test_jobs_that_end_together_are_told_in_one_notice(fake_api, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(attention, "GATHER_S", 3.0)  # however loaded the machine, the four ends are one moment
    waits = [f"until [ -e go ]; do sleep 0.02; done; exit {code}" for code in (0, 0, 0, 3)]
    fake_api.enqueue(
        reply(
            *(
                tool_use("execute_command", {"command": f"echo {n}; {wait}", "background": True})
                for n, wait in enumerate(waits)
            )
        ),
        text_reply("Four jobs run."),
    )
    app = notifying_app(fake_api)
    async with app.run_test(size=(140, 36)) as pilot:
        written: list[str] = []
        app.notifier.write = written.append
        await submit(pilot, "start four jobs")
        await finish_turn(pilot)
        jobs = app.session.jobs
        assert jobs is not None and len(jobs.jobs()) == 4
        app.post_message(events.AppBlur())  # the terminal is away: the end is told there too
        await wait_until(pilot, lambda: not app.app_focus, what="the app unfocused")
        (tmp_path / "go").touch()
        await wait_until(pilot, lambda: not any(job.running for job in jobs.jobs()), what="the four ends")
        await wait_until(pilot, lambda: written, what="the ends told")
        told = [n.message for n in app._notifications if "ended" in n.message]
        assert told == ["4 background jobs ended: 3 exit 0, 1 exit 3 (/jobs)"]
        assert written == [f"{OSC9}4 background jobs ended: 3 exit 0, 1 exit 3\x07\x07"]


async def test_a_command_moved_to_the_background_loses_its_foreground_timeout(fake_api, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    os.mkfifo(tmp_path / "gate")
    command = "echo before; cat gate > /dev/null; sleep 1.5; echo past-its-timeout; exit 5"
    fake_api.enqueue(
        tool_reply("execute_command", {"command": command, "timeout_ms": 1000}),
        text_reply("It runs on in the background."),
    )
    app = make_app(fake_api, settings=Settings(permission_mode="auto"))
    async with app.run_test(size=(140, 36)) as pilot:
        await submit(pilot, "run it")
        cards = lambda: list(app.query(ToolCard))  # noqa: E731
        await wait_until(pilot, lambda: cards() and "before" in cards()[0].record.live_output, what="its first line")
        await pilot.press("ctrl+b")
        await finish_turn(pilot)
        jobs = app.session.jobs
        assert jobs is not None and jobs.info("job-1").running
        with open(tmp_path / "gate", "w") as gate:  # from here it sleeps past its 1 s timeout
            gate.write("go\n")
        await wait_until(pilot, lambda: not jobs.info("job-1").running, what="the job's end", timeout=30)
        ended = jobs.info("job-1")
        assert (ended.state, ended.exit_code) == ("exited", 5), ended.outcome()
        assert open(ended.output_file).read() == "before\npast-its-timeout\n"
