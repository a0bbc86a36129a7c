"""The streamed Markdown view: block cutting, lazy rendering, and what reaches the screen."""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult
from tui_helpers import wait_until

from cmdop_tui.tui.vocabulary.markdown_blocks import split_finished
from cmdop_tui.tui.vocabulary.rich_markdown import parsed_markdown
from cmdop_tui.tui.widgets.assistant_reply import AssistantReply, estimate_height

REPLY = "\n\n".join(
    [
        "# Disk report",
        "The **root** volume is fine. " * 12,
        "- one\n- two\n  continued\n- three",
        "```sh\ndf -h /\n\ndu -sh /var/*\n```",
        "1. first\n\n2. second",
        "> quoted line",
        "Last paragraph with `code` and a [link](https://example.com).",
    ]
)


@pytest.mark.parametrize(
    "text, blocks, rest",
    [
        ("one\n\ntwo", ["one"], "two"),
        ("one\n\n", [], "one\n\n"),  # the next block has not started: 'one' may go on
        ("```\na\n\nb\n```\n\nnext", ["```\na\n\nb\n```"], "next"),  # blank lines inside a fence
        ("```\nopen fence\n\nstill code", [], "```\nopen fence\n\nstill code"),
        ("- item\n\n  continued\n\nnext", ["- item\n\n  continued"], "next"),  # indented continuation
        ("~~~\nx\n~~~\n\ny", ["~~~\nx\n~~~"], "y"),
    ],
)
def test_split_finished(text, blocks, rest):
    assert split_finished(text) == (blocks, rest)


@pytest.mark.parametrize("code_theme", ["monokai", "default"])
def test_the_shared_parser_renders_as_rich_s_own_markdown(code_theme):
    from rich.console import Console
    from rich.markdown import Markdown

    console = Console(width=60, color_system="truecolor", force_terminal=True)
    for text in [REPLY, "| a | b |\n|---|---|\n| 1 | ~~2~~ |", "plain", ""]:
        ours = console.render_lines(parsed_markdown(text, code_theme), pad=False)
        rich_s = console.render_lines(Markdown(text, code_theme=code_theme), pad=False)
        assert ours == rich_s
    assert parsed_markdown("a", code_theme).markup == "a"  # each call its own, the shared one unchanged
    assert parsed_markdown("b", code_theme).markup == "b"


def test_estimate_is_exact_for_code_and_short_paragraphs():
    assert estimate_height("```sh\nls\n```", 80) == 3
    assert estimate_height("a short line", 80) == 1
    assert estimate_height("x" * 200, 54) == 4


class ReplyApp(App):
    def compose(self) -> ComposeResult:
        yield AssistantReply()


def screen_lines(reply: AssistantReply) -> list[str]:
    # Painting an unrendered block may change the layout, so read until it is stable.
    lines: list[str] = []
    for _ in range(3):
        lines = ["".join(s.text for s in reply.render_line(y)).rstrip() for y in range(reply._total)]
    return lines


@pytest.mark.parametrize("piece", [1, 7, 64, len(REPLY)])
async def test_streamed_in_any_pieces_it_renders_like_the_whole_text(piece):
    app = ReplyApp()
    async with app.run_test(size=(60, 50)) as pilot:
        reply = app.query_one(AssistantReply)
        for start in range(0, len(REPLY), piece):
            reply.append(REPLY[start : start + piece])
            if start % (piece * 10) == 0:
                await pilot.pause()
        reply.finish()
        await pilot.pause()
        whole = AssistantReply(REPLY)
        await app.mount(whole)
        whole.finish()
        await pilot.pause()
        assert reply.source == REPLY
        assert screen_lines(reply) == screen_lines(whole)
        text = "\n".join(screen_lines(reply))
        assert "Disk report" in text and "du -sh /var/*" in text and "• two" in text and "```" not in text


async def test_off_screen_blocks_wait_and_are_rendered_when_idle():
    long_reply = "\n\n".join(f"paragraph {i} " + "words " * 30 for i in range(60))
    app = ReplyApp()
    async with app.run_test(size=(60, 20)) as pilot:
        reply = app.query_one(AssistantReply)
        reply.append(long_reply + "\n\nend")
        reply.finish()
        await pilot.pause()
        assert any(block.lines is None for block in reply._blocks)  # a long reply is not rendered at once
        assert reply._blocks[0].lines is not None  # but what is on screen (the top here) is
        await wait_until(pilot, lambda: all(block.lines is not None for block in reply._blocks), what="idle rendering")
        assert screen_lines(reply)[-1] == "end"


async def test_escape_sequences_from_the_model_never_reach_the_screen():
    app = ReplyApp()
    async with app.run_test(size=(60, 10)) as pilot:
        reply = app.query_one(AssistantReply)
        reply.append("title\x1b]0;pwned\x07 and \x1b[2Jclear and \x1b]52;c;aGk=\x07 clip")
        reply.finish()
        await pilot.pause()
        painted = "".join(screen_lines(reply))
        assert "\x1b" not in painted and "\x07" not in painted
        assert "title" in painted and "clip" in painted


def test_the_markdown_theme_reads_every_builtin_theme():
    from rich.style import Style
    from textual.theme import BUILTIN_THEMES

    from cmdop_tui.tui.widgets.assistant_reply import markdown_theme

    for name, theme in BUILTIN_THEMES.items():
        styles = markdown_theme(theme).styles
        assert all(isinstance(style, Style) for style in styles.values()), name


async def test_a_token_repaints_only_the_line_it_lands_on():
    app = ReplyApp()
    async with app.run_test(size=(60, 30)) as pilot:
        reply = app.query_one(AssistantReply)
        reply.append("The service restarted cleanly and the logs show no errors. " * 7 + "Done")  # one paragraph
        await pilot.pause()
        lines = screen_lines(reply)
        assert len(lines) > 4 and len(reply._strips) == len(lines)  # every line painted once
        reply.append("ok")  # lands on the last line
        kept = set(reply._strips)
        assert kept == set(range(len(lines) - 1))  # the lines above keep their painting
        await pilot.pause()
        assert screen_lines(reply)[-1] == "Doneok" and screen_lines(reply)[:-1] == lines[:-1]


async def test_the_room_a_streaming_reply_takes_follows_its_text_when_the_view_widens():
    app = ReplyApp()
    async with app.run_test(size=(40, 30)) as pilot:
        reply = app.query_one(AssistantReply)
        reply.jump_lines = 4
        reply.append("The service restarted cleanly and the logs show no errors. " * 12)
        await pilot.pause()
        narrow = reply.size.height
        assert reply._total < narrow <= reply._total + 4  # room ahead of the text
        await pilot.resize_terminal(120, 30)
        await pilot.pause()
        assert reply._total < narrow - 4 and reply._total < reply.size.height <= reply._total + 4


@pytest.mark.parametrize("piece", [3, 17, 64])
async def test_while_it_streams_into_its_room_every_painted_line_is_current(piece):
    """With room ahead of the text, blocks finish and lines grow without a layout: the lines
    painted so far must still be what the whole text renders (no stale painting kept)."""
    app = ReplyApp()
    async with app.run_test(size=(60, 50)) as pilot:
        reply = app.query_one(AssistantReply)
        reply.jump_lines = 6
        for start in range(0, len(REPLY), piece):
            reply.append(REPLY[start : start + piece])
            if start % (piece * 4) == 0:
                screen_lines(reply)  # paint what is there now, as a frame would
                await pilot.pause()
        await pilot.pause()
        whole = AssistantReply()
        await app.mount(whole)
        whole.append(REPLY)  # the same text, the last block still open
        await pilot.pause()
        assert reply._reserved >= reply._total and screen_lines(reply) == screen_lines(whole)
