"""Type-ahead and steering in the app, driven with Pilot against the fake Messages API: Enter
while a turn runs queues, ctrl+s steers the running turn, Up and ctrl+d edit and drop, and a
Stop or a quit loses nothing."""

from __future__ import annotations

import threading

from fake_anthropic import text_reply, tool_reply
from tui_helpers import finish_turn, make_app, notices, replies, showing, submit, wait_until

from cmdop_tui.config.settings import RunOptions, Settings
from cmdop_tui.tui.screens.confirm import ConfirmScreen
from cmdop_tui.tui.widgets.queued_messages import QueuedMessages
from cmdop_tui.tui.widgets.tool_card import ToolCard
from cmdop_tui.tui.widgets.user_message import UserMessage

SIZE = (100, 30)


def stalled_reply(gate: threading.Event):
    """A reply that streams a little, then waits for `gate` before it goes on to the end."""
    return text_reply("Part of the first answer, " * 6, stall_after=6, gate=gate, gate_release_continues=True)


def user_messages(app) -> list[str]:
    return [str(m.content) for m in app.query(UserMessage)]


def queue(app) -> QueuedMessages:
    return app.query_one(QueuedMessages)


def last_user_blocks(fake_api, index: int) -> list[tuple[str, str]]:
    content = fake_api.requests[index].body["messages"][-1]["content"]
    return [(b["type"], b.get("text") or b.get("tool_use_id", "")) for b in content]


async def test_enter_while_a_turn_streams_queues_and_the_queue_goes_when_it_ends(fake_api):
    gate = threading.Event()
    fake_api.enqueue(stalled_reply(gate), text_reply("Second answer."), text_reply("Third answer."))
    app = make_app(fake_api)
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "one")
        await wait_until(pilot, lambda: any(replies(app)), what="streamed text")
        await submit(pilot, "two")
        await submit(pilot, "three")
        assert queue(app).queued == ["two", "three"] and queue(app).display
        assert "⧗ queued: two" in str(queue(app).render()) and "sent when the turn ends" in str(queue(app).render())
        assert user_messages(app) == ["one"] and not notices(app, "warning")
        assert app.query_one("#prompt").text == ""
        gate.set()
        await wait_until(pilot, lambda: len(fake_api.requests) == 3 and not app.running, what="the queue to go")
        await finish_turn(pilot)
        assert user_messages(app) == ["one", "two", "three"]
        assert replies(app)[-2:] == ["Second answer.", "Third answer."]
        assert last_user_blocks(fake_api, 1) == [("text", "two")]  # one turn each
        assert last_user_blocks(fake_api, 2) == [("text", "three")]
        assert queue(app).held == [] and not queue(app).display


async def test_ctrl_s_steers_the_running_turn_after_its_tool_result(fake_api, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    flag = tmp_path / "go-on"
    command = f"echo started; while [ ! -e {flag} ]; do sleep 0.02; done; echo finished"
    fake_api.enqueue(tool_reply("execute_command", {"command": command}, id="toolu_tui1"), text_reply("Both done."))
    app = make_app(fake_api, settings=Settings(run=RunOptions(auto_approve=True)))
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "check it")
        await wait_until(pilot, lambda: app.query(ToolCard) and "started" in app.query_one(ToolCard).record.live_output)
        prompt = app.query_one("#prompt")
        prompt.load_text("and the disk too")
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: queue(app).steering == ["and the disk too"], what="the steering shown")
        assert "↪ steering" in str(queue(app).render()) and prompt.text == ""
        flag.touch()
        await finish_turn(pilot)
        await wait_until(pilot, lambda: not app.running)
        assert last_user_blocks(fake_api, 1) == [("tool_result", "toolu_tui1"), ("text", "and the disk too")]
        steered = [m for m in app.query(UserMessage) if m.has_class("-steering")]
        assert [str(m.content) for m in steered] == ["↪ steering  and the disk too"]
        assert queue(app).held == [] and replies(app)[-1] == "Both done." and len(fake_api.requests) == 2


async def test_up_takes_the_newest_queued_message_back_and_ctrl_d_drops_one(fake_api):
    gate = threading.Event()
    fake_api.enqueue(stalled_reply(gate), text_reply("Answer to beta, edited."))
    app = make_app(fake_api)
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "first")
        await wait_until(pilot, lambda: any(replies(app)), what="streamed text")
        await submit(pilot, "[alpha]")  # shown and dropped as text, never as markup
        await submit(pilot, "beta")
        prompt = app.query_one("#prompt")
        await pilot.press("up")
        assert prompt.text == "beta" and queue(app).queued == ["[alpha]"]
        prompt.load_text("beta, edited")
        await pilot.press("up")  # a prompt with text: Up is history, not the queue
        assert queue(app).queued == ["[alpha]"]
        prompt.load_text("")
        await pilot.press("ctrl+d")
        assert queue(app).queued == []
        await submit(pilot, "beta, edited")
        assert queue(app).queued == ["beta, edited"]
        gate.set()
        await wait_until(pilot, lambda: len(fake_api.requests) == 2 and not app.running, what="the queue to go")
        await finish_turn(pilot)
        assert user_messages(app) == ["first", "beta, edited"]
        assert last_user_blocks(fake_api, 1) == [("text", "beta, edited")]


async def test_a_stop_keeps_the_queue_and_the_steering_no_step_took(fake_api):
    gate = threading.Event()
    fake_api.enqueue(stalled_reply(gate), text_reply("Answer to later."), text_reply("Answer to sooner."))
    app = make_app(fake_api)
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "go")
        await wait_until(pilot, lambda: any(replies(app)), what="streamed text")
        await submit(pilot, "later")
        app.query_one("#prompt").load_text("sooner")
        await pilot.press("ctrl+s")
        assert queue(app).steering == ["sooner"]
        await pilot.press("escape")
        await wait_until(pilot, lambda: notices(app, "stopped") and not app.running, what="the stop")
        await pilot.pause()
        assert queue(app).queued == ["later", "sooner"] and queue(app).steering == []
        assert "stopped: Enter sends the next" in str(queue(app).render())
        assert len(fake_api.requests) == 1  # a Stop sends nothing by itself
        assert app.session.runner.steering.pending() == []  # taken back into the queue, not sent twice

        await pilot.press("ctrl+q")  # quitting would lose them: it asks
        await wait_until(pilot, lambda: showing(app, ConfirmScreen), what="the quit question")
        assert app.screen.question == "2 messages you sent during the turn would be lost. Quit anyway?"
        await pilot.press("n")
        await pilot.pause()
        assert app.is_running

        gate.set()
        await pilot.press("enter")  # at an empty prompt: the next queued message goes, and the rest after it
        await wait_until(pilot, lambda: len(fake_api.requests) == 3 and not app.running, what="the queue to go")
        await finish_turn(pilot)
        assert last_user_blocks(fake_api, 1) == [("text", "go"), ("text", "later")]  # "go" was stopped unanswered
        assert last_user_blocks(fake_api, 2) == [("text", "sooner")]
        assert user_messages(app) == ["go", "later", "sooner"] and queue(app).held == []


async def test_help_lists_the_queue_and_steering_keys(fake_api):
    app = make_app(fake_api)
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "/help")
        await wait_until(pilot, lambda: any("Ctrl+S" in n for n in notices(app)), what="the help")
        help_text = next(n for n in notices(app) if "Ctrl+S" in n)
        lines = [line.split(maxsplit=1) for line in help_text.splitlines()]
        assert ["Ctrl+S", "steer: to the running turn, at its next step"] in lines
        assert ["Enter", "send (during a turn: queued, sent when it ends)"] in lines
        assert ["Up", "earlier prompt; empty prompt: edit last queued"] in lines
        assert ["Ctrl+D", "drop the newest queued message (empty prompt)"] in lines
