"""Long sessions in the TUI: a resumed session draws its tail at once, earlier messages come back
on request, and a live chat keeps a bounded number of entries."""

from __future__ import annotations

from fake_anthropic import text_reply
from textual import events
from tui_helpers import finish_turn, make_app, replies, submit, wait_until

from cmdop_tui.agent.history import Conversation
from cmdop_tui.agent.messages import text_block, tool_result_block
from cmdop_tui.config.settings import RunOptions, Settings
from cmdop_tui.transcripts import Transcript
from cmdop_tui.tui.widgets.assistant_reply import AssistantReply
from cmdop_tui.tui.widgets.chat_log import DEFAULT_PACE, MAX_ITEMS, RESUME_PAGE, ChatLog
from cmdop_tui.tui.widgets.earlier_messages import EarlierMessages
from cmdop_tui.tui.widgets.notice import Notice
from cmdop_tui.tui.widgets.tool_card import ToolCard
from cmdop_tui.tui.widgets.user_message import UserMessage

TURNS = 500  # 2,000 messages: a prompt, a tool call, its result and an answer each


def long_session() -> None:
    conversation = Conversation()
    with Transcript.create(model="claude-sonnet-5-5", cwd="/") as transcript:
        conversation.listeners.append(transcript.append)
        for n in range(TURNS):
            call = {"type": "tool_use", "id": f"toolu_{n:05d}", "name": "execute_command", "input": {"command": "df"}}
            conversation.append_user(f"prompt {n}")
            conversation.append_assistant([text_block(f"checking {n}"), call])
            conversation.append_tool_results([tool_result_block(call["id"], f"output {n}")])
            conversation.append_assistant([text_block(f"answer {n}")])


async def test_a_resumed_session_draws_its_tail_and_brings_back_more_on_request(fake_api):
    long_session()
    app = make_app(fake_api, settings=Settings(run=RunOptions(continue_latest=True)))
    async with app.run_test() as pilot:
        await wait_until(pilot, lambda: replies(app) and replies(app)[-1] == f"answer {TURNS - 1}", what="the tail")
        chat = app.query_one(ChatLog)
        assert len(chat.children) <= 2 * RESUME_PAGE  # the tail, not 2,000 messages
        (earlier,) = app.query(EarlierMessages)
        assert earlier.hidden == 4 * TURNS - RESUME_PAGE and "earlier messages not shown" in str(earlier.render())
        first_prompt = app.query(UserMessage).first()
        earlier.focus()
        await pilot.press("enter")
        await wait_until(pilot, lambda: earlier.hidden == 4 * TURNS - 2 * RESUME_PAGE, what="a page more")
        assert app.query(UserMessage).first() is not first_prompt  # an earlier prompt now comes first
        children = list(chat.children)
        assert children.index(earlier) < children.index(app.query(UserMessage).first())  # above the drawn pages
        assert len(app.query(ToolCard)) > RESUME_PAGE // 4


async def test_a_live_chat_keeps_a_bounded_number_of_entries(fake_api):
    app = make_app(fake_api)
    async with app.run_test() as pilot:
        chat = app.query_one(ChatLog)
        for n in range(MAX_ITEMS + 50):
            await chat.add_notice(f"note {n}")
        await pilot.pause()
        assert len(chat.children) <= MAX_ITEMS + 1
        earlier = chat.children[0]
        assert isinstance(earlier, EarlierMessages) and earlier.hidden >= 50 and not earlier.can_show
        notes = [str(n.content) for n in app.query(Notice)]
        assert notes[-1] == f"note {MAX_ITEMS + 49}" and "note 0" not in notes


def test_the_app_draws_before_the_sdk_is_imported():
    """The SDK takes about a second to import: the app must paint (and a resumed session show its
    tail) without it; only the session, opened after the first paint, loads it."""
    import subprocess
    import sys

    probe = "import sys, cmdop_tui.tui.app; print(sorted(m for m in ('anthropic', 'mcp') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stderr


def test_low_bandwidth_mode_is_on_over_ssh_unless_the_user_says_otherwise(tmp_path):
    from cmdop_tui.cli import LOW_BANDWIDTH_FPS, apply_flags, parser, prepare_terminal

    over_ssh = {"SSH_CONNECTION": "10.0.0.1 50000 10.0.0.2 22"}
    assert Settings().low_bandwidth_mode(over_ssh) and not Settings().low_bandwidth_mode({})
    environ = dict(over_ssh)
    prepare_terminal(Settings(), environ)
    assert environ["TEXTUAL_FPS"] == LOW_BANDWIDTH_FPS and environ["TEXTUAL_ANIMATIONS"] == "none"
    off = apply_flags(Settings(), parser().parse_args(["--no-low-bandwidth"]))
    environ = dict(over_ssh)
    prepare_terminal(off, environ)
    assert "TEXTUAL_FPS" not in environ
    on = apply_flags(Settings(), parser().parse_args(["--low-bandwidth"]))
    assert on.low_bandwidth_mode({})
    (tmp_path / "config.toml").write_text("low_bandwidth = true\n")
    from cmdop_tui.config.settings import load_settings

    assert load_settings(tmp_path / "config.toml", environ={}).low_bandwidth_mode({})


def numbered_reply(lines: int) -> str:
    return "\n\n".join(f"Line {n}: checked web{n:02d}, every service active." for n in range(lines))


async def test_a_followed_reply_scrolls_a_share_of_the_view_at_a_time(fake_api):
    fake_api.enqueue(text_reply(numbered_reply(80), chunk_size=9))
    app = make_app(fake_api)
    async with app.run_test(size=(80, 24)) as pilot:
        chat = app.query_one(ChatLog)
        seen: list[
            tuple[float, float]
        ] = []  # each scroll: the move, and how far the newest text is from the view's top

        def scrolled(old: float, new: float) -> None:
            reply = app.query(AssistantReply).last()
            seen.append((new - old, reply.virtual_region.y + reply._total - new))

        chat.watch(chat, "scroll_y", scrolled, init=False)
        await submit(pilot, "report")
        await finish_turn(pilot)
        view = chat.scrollable_content_region.height
        reply = app.query(AssistantReply).last()
        forward = [move for move, _ in seen if move > 0]
        assert 159 <= reply._total and len(forward) < reply._total / 3  # jumps, not a scroll per line
        assert sum(move >= view // DEFAULT_PACE.jump_share for move in forward) >= len(forward) - 2
        assert all(0 < newest <= view for _, newest in seen)  # the newest line always in view
        assert reply.size.height == reply._total and chat.scroll_y == chat.max_scroll_y  # no room left over


async def test_a_reader_scrolled_back_is_left_where_they_are(fake_api):
    fake_api.enqueue(text_reply(numbered_reply(80), chunk_size=9, delay_s=0.005))
    app = make_app(fake_api)
    async with app.run_test(size=(80, 24)) as pilot:
        chat = app.query_one(ChatLog)
        await submit(pilot, "report")
        await wait_until(pilot, lambda: chat.max_scroll_y > 10, what="the reply to pass the view")
        chat.scroll_home(animate=False)
        streaming = app.running
        await finish_turn(pilot)
        assert streaming and chat.scroll_y == 0 and app.query(AssistantReply).last()._reserved == 0


async def test_ctrl_l_a_resize_or_a_resume_paint_the_whole_screen_again(fake_api):
    from textual._compositor import LayoutUpdate

    from cmdop_tui.tui.app import CmdopApp

    app = make_app(fake_api)
    frames: list[object] = []

    def display(screen, renderable) -> None:
        frames.append(renderable)
        CmdopApp._display(app, screen, renderable)

    app._display = display  # type: ignore[method-assign]  (sees each frame on its way out)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()

        async def full_frame_after(act) -> bool:
            frames.clear()
            act()
            await pilot.pause()
            return any(isinstance(frame, LayoutUpdate) and frame.region.size == app.size for frame in frames)

        assert await full_frame_after(lambda: app.call_later(app.action_redraw))
        assert await full_frame_after(lambda: app.app_resume_signal.publish(app))
        assert await full_frame_after(lambda: app.post_message(events.Resize(app.size, app.size)))
        frames.clear()
        await pilot.press("ctrl+l")
        await pilot.pause()
        assert any(isinstance(frame, LayoutUpdate) for frame in frames)
