"""Text safety helpers: decoding, neutralizing escape sequences, truncation, bounded buffers."""

from __future__ import annotations

import re
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cmdop_tui.support.text import (
    BoundedBuffer,
    StreamSanitizer,
    Utf8StreamDecoder,
    cut_note,
    decode_output,
    inert_line,
    strip_terminal_sequences,
    truncate_middle,
)

UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
HOSTILE_PIECES = [
    b"\x1b",
    b"[",
    b"]",
    b"P",
    b"_",
    b"\x07",
    b"\\",
    b"3",
    b"1",
    b";",
    b"m",
    b"a",
    b" ",
    b"\r",
    b"\n",
    b"\t",
    b"\xc3",
    b"\xa9",
    b"\xe2\x82\xac",
    b"\x9c",
    b"\xc2\x9b",
    b"\x18",
    b"\x08",
]


def assert_inert(text: str) -> None:
    """No control character other than newline and tab survives."""
    assert not UNSAFE.search(text), repr(text)


# --- decoding ------------------------------------------------------------------------------------


def test_decode_output_replaces_invalid_bytes() -> None:
    assert decode_output(b"ok \xff\xfe end") == "ok \ufffd\ufffd end"
    assert decode_output("héllo".encode()) == "héllo"


def test_stream_decoder_keeps_characters_split_across_chunks() -> None:
    data = "é€😀 done".encode()
    for cut in range(len(data) + 1):
        decoder = Utf8StreamDecoder()
        text = decoder.decode(data[:cut]) + decoder.decode(data[cut:]) + decoder.flush()
        assert text == "é€😀 done"


def test_stream_decoder_flush_replaces_a_truncated_character() -> None:
    decoder = Utf8StreamDecoder()
    assert decoder.decode(b"a\xe2\x82") == "a"
    assert decoder.flush() == "\ufffd"


# --- strip_terminal_sequences -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("\x1b[31mred\x1b[0m", "red"),
        ("\x1b[?1049h\x1b[2J\x1b[1;1Hscreen", "screen"),
        ("\x1b]52;c;aGVsbG8=\x07copied", "copied"),  # OSC 52 clipboard write, BEL-terminated
        ("\x1b]0;evil title\x1b\\text", "text"),  # title set, ST-terminated
        ("\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "link"),  # hyperlink
        ("\x1bPq#0;2;0;0;0\x1b\\after", "after"),  # DCS (sixel)
        ("\x1b_apc\x1b\\\x1b^pm\x1b\\\x1bXsos\x1b\\x", "x"),  # APC, PM, SOS
        ("\x1b(B\x1b=\x1b>\x1bc\x1b7\x1b8plain", "plain"),  # two-character ESC sequences
        ("a\x1bbc", "ac"),  # ESC b is a 2-char sequence: both characters go
        ("bell\x07", "bell^G"),
        ("back\x08\x08space", "back^H^Hspace"),
        ("nul\x00del\x7f", "nul^@del^?"),
        ("lone esc \x1b", "lone esc ^["),
        ("c1 csi \x9b31m", "c1 csi M-^[31m"),
        ("a\r\nb\rc\n", "a\nb\nc\n"),
        ("tab\tand\nnewline", "tab\tand\nnewline"),
        ("unterminated \x1b[31", "unterminated ^[[31"),
        ("unterminated \x1b]0;title", "unterminated ^[]0;title"),
        ("plain text ünïcödé", "plain text ünïcödé"),
    ],
)
def test_strip_terminal_sequences(raw: str, expected: str) -> None:
    assert strip_terminal_sequences(raw) == expected


@given(st.lists(st.sampled_from(HOSTILE_PIECES)).map(b"".join))
def test_strip_leaves_no_control_characters(data: bytes) -> None:
    assert_inert(strip_terminal_sequences(decode_output(data)))


HOSTILE_10_MB = {
    "csi-introducers": lambda: "\x1b[" * 5_000_000,
    "osc-introducers": lambda: "\x1b]" * 5_000_000,
    "unterminated-osc": lambda: "\x1b]" + "x" * 10_000_000,
}


@pytest.mark.parametrize("kind", HOSTILE_10_MB)
def test_strip_is_linear_on_10_mb_of_hostile_input(kind: str) -> None:
    hostile = HOSTILE_10_MB[kind]()
    started = time.perf_counter()
    result = strip_terminal_sequences(hostile)
    elapsed = time.perf_counter() - started
    assert_inert(result)
    assert elapsed < 5, f"took {elapsed:.1f}s: not linear"


def test_inert_line_keeps_text_on_one_line() -> None:
    assert inert_line("a\nb\rc\x1b[1md") == "a^Jb^Mcd"


# --- StreamSanitizer ----------------------------------------------------------------------------


def feed_all(chunks: list[bytes], max_pending: int = 4096) -> tuple[str, list[str]]:
    sanitizer = StreamSanitizer(max_pending=max_pending)
    pieces = [sanitizer.feed(chunk) for chunk in chunks] + [sanitizer.flush()]
    return "".join(pieces), pieces


def test_sanitizer_removes_sequences_split_across_chunks() -> None:
    text, pieces = feed_all([b"a\x1b]52;c;aGVs", b"bG8=\x07b\x1b[3", b"1mc\x1b", b"\\d"])
    assert text == "abcd"
    for piece in pieces:
        assert_inert(piece)


def test_sanitizer_joins_crlf_split_across_chunks() -> None:
    assert feed_all([b"line\r", b"\nnext\r", b"over"])[0] == "line\nnext\nover"


def test_sanitizer_shows_an_overlong_unterminated_sequence_as_text() -> None:
    sanitizer = StreamSanitizer(max_pending=100)
    shown = sanitizer.feed(b"\x1b]0;" + b"x" * 50)
    assert shown == ""
    shown = sanitizer.feed(b"y" * 200)
    assert shown.startswith("^[]0;xxx") and len(shown) > 100


@given(
    st.lists(st.sampled_from(HOSTILE_PIECES), max_size=40).map(b"".join),
    st.lists(st.integers(min_value=0, max_value=200), max_size=6),
)
def test_sanitizer_matches_whole_text_for_any_chunking(data: bytes, cuts: list[int]) -> None:
    bounds = sorted({0, len(data), *(cut % (len(data) + 1) for cut in cuts)})
    chunks = [data[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]
    text, pieces = feed_all(chunks)
    assert text == strip_terminal_sequences(decode_output(data))
    for piece in pieces:
        assert_inert(piece)


# --- truncate_middle ----------------------------------------------------------------------------


def test_truncate_middle_leaves_short_text_alone() -> None:
    assert truncate_middle("short", 5) == "short"


def test_truncate_middle_keeps_head_and_tail_with_a_note() -> None:
    text = "H" * 500 + "x" * 200_000 + "T" * 500
    result = truncate_middle(text, 1_000)
    head, note, tail = result.split("\n")
    assert head == "H" * 500 and tail == "T" * 500
    assert note == "[... 200,000 characters cut ...]"


def test_truncate_middle_by_lines() -> None:
    text = "".join(f"line {n}\n" for n in range(1, 101))
    result = truncate_middle(text, 4, unit="lines")
    assert result == "line 1\nline 2\n[... 96 lines cut ...]\nline 99\nline 100\n"


def test_truncate_middle_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError):
        truncate_middle("x", -1)
    with pytest.raises(ValueError):
        truncate_middle("x", 1, unit="bytes")  # type: ignore[arg-type]


def test_cut_note_formats_thousands() -> None:
    assert cut_note(1_234_567, "bytes") == "[... 1,234,567 bytes cut ...]"


# --- BoundedBuffer ------------------------------------------------------------------------------


def test_bounded_buffer_keeps_everything_under_the_limit() -> None:
    buffer = BoundedBuffer(100)
    buffer.append(b"hello ")
    buffer.append(b"\x1b[1mworld\x1b[0m")
    assert not buffer.truncated
    assert buffer.render() == "hello world"


def test_bounded_buffer_memory_stays_bounded_on_100_mb() -> None:
    buffer = BoundedBuffer(1_000)
    chunk = b"a" * 65_536
    buffer.append(b"START")
    for _ in range(1_600):  # ~100 MB
        buffer.append(chunk)
        assert buffer.kept_bytes <= 1_000
    buffer.append(b"END")
    assert buffer.total == 5 + 1_600 * 65_536 + 3
    rendered = buffer.render()
    head, note, tail = rendered.split("\n")
    assert head.startswith("START") and len(head) == 500
    assert tail.endswith("END") and len(tail) == 500
    assert note == cut_note(buffer.total - 1_000, "bytes")


def test_bounded_buffer_render_with_a_smaller_limit() -> None:
    buffer = BoundedBuffer(100)
    buffer.append(b"0123456789" * 6)  # 60 bytes: not truncated, but more than 40
    head, note, tail = buffer.render(40).split("\n")
    assert head == "01234567890123456789"
    assert tail == "01234567890123456789"
    assert note == "[... 20 bytes cut ...]"


def test_bounded_buffer_cut_through_a_character_or_sequence_stays_clean() -> None:
    buffer = BoundedBuffer(10)
    buffer.append("aaaa€".encode() + b"x" * 100 + b"\x1b[31mEND")  # € straddles the head cut
    rendered = buffer.render()
    assert "\ufffd" not in rendered
    assert_inert(rendered)
    assert rendered.startswith("aaaa\n[... ")


def test_bounded_buffer_with_zero_limit() -> None:
    buffer = BoundedBuffer(0)
    buffer.append(b"abc")
    assert buffer.kept_bytes == 0
    assert buffer.render() == "[... 3 bytes cut ...]\n"
