"""Images in tool results through the loop's types: the block the executor makes, the history's
repair of parts the API would refuse, the context estimate (pixels, not base64), the request's
budget of images, and what is read from an image's header."""

from __future__ import annotations

import base64
import struct
import zlib

from cmdop_tui.agent.context_usage import block_tokens, estimate_tokens
from cmdop_tui.agent.history import UNSENDABLE_PART, sanitize
from cmdop_tui.agent.messages import (
    Message,
    image_block,
    result_content_text,
    result_images,
    text_block,
    tool_result_block,
)
from cmdop_tui.agent.reduction import MAX_REQUEST_IMAGES, OutputReducer
from cmdop_tui.support.images import ImageFacts, image_tokens, sniff


def png(width: int, height: int, padding: int = 0) -> bytes:
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    ihdr = struct.pack(">I", 13) + b"IHDR" + header + struct.pack(">I", zlib.crc32(b"IHDR" + header))
    return b"\x89PNG\r\n\x1a\n" + ihdr + b"\0" * padding


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def call(call_id: str) -> Message:
    return {"role": "assistant", "content": [{"type": "tool_use", "id": call_id, "name": "mcp__x__shot", "input": {}}]}


def test_a_result_with_images_is_its_text_then_its_images():
    image = image_block("image/png", b64(png(2, 2)))
    block = tool_result_block("t1", "[image: image/png, 33 B, 2x2]", images=[image])
    assert block["content"] == [text_block("[image: image/png, 33 B, 2x2]"), image]
    assert result_images(block) == [image] and result_content_text(block["content"]) == "[image: image/png, 33 B, 2x2]"
    assert tool_result_block("t1", "plain")["content"] == "plain"  # without images: a string, as always


def test_the_history_says_what_the_api_would_refuse_in_a_result_and_keeps_the_rest():
    good = image_block("image/png", b64(png(2, 2)))
    bmp = image_block("image/bmp", b64(b"BM...."))
    broken: list[Message] = [
        {"role": "user", "content": [text_block("go")]},
        call("t1"),
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "t1",
                    "content": [text_block("shot"), bmp, good, text_block(" "), {"type": "audio"}],  # type: ignore[list-item]
                }
            ],
        },
    ]
    fixed = sanitize(broken)
    assert fixed[2]["content"][0]["content"] == [  # type: ignore[typeddict-item]
        text_block("shot"),
        text_block(UNSENDABLE_PART),
        good,
        text_block(UNSENDABLE_PART),
    ]
    healthy = [*broken[:2], {"role": "user", "content": [tool_result_block("t1", "shot", images=[good])]}]
    assert sanitize(healthy)[2] is healthy[2]  # nothing to fix: the same message


def test_an_image_counts_by_its_pixels_not_its_base64():
    big = image_block("image/png", b64(png(100, 100, padding=300_000)))
    block = tool_result_block("t1", "[image]", images=[big])
    assert block_tokens(block) < 100 and estimate_tokens(str(block)) > 100_000  # its base64 would be 100k
    assert 13 <= block_tokens(block) - block_tokens(tool_result_block("t1", "[image]")) <= 25  # 100*100/750, the list
    assert image_tokens(8000, 8000, 0) == 1600 and image_tokens(None, None, 50_000) == 500


def test_a_request_carries_the_images_of_the_newest_results_only():
    messages: list[Message] = [{"role": "user", "content": [text_block("go")]}]
    for n in range(MAX_REQUEST_IMAGES + 2):
        image = image_block("image/png", b64(png(n + 1, 1)))
        messages += [call(f"t{n}"), {"role": "user", "content": [tool_result_block(f"t{n}", "shot", images=[image])]}]
    sent = OutputReducer().reduce(messages, window=None, estimate=0)
    results = [message["content"][0] for message in sent if message["role"] == "user"][1:]
    assert [len(result_images(result)) for result in results] == [0, 0] + [1] * MAX_REQUEST_IMAGES
    assert results[0]["content"] == "shot\n[1 image of this result not sent again, to keep the request small]"
    assert result_images(messages[2]["content"][0])  # the history keeps it: only the request changes


def test_the_kind_and_size_of_an_image_are_read_from_its_header():
    assert sniff(png(640, 480)) == ImageFacts("image/png", 640, 480)
    assert sniff(b"GIF89a" + struct.pack("<HH", 32, 16)) == ImageFacts("image/gif", 32, 16)
    jpeg = b"\xff\xd8\xff\xe0" + struct.pack(">H", 4) + b"\0\0" + b"\xff\xc0" + struct.pack(">HBHH", 11, 8, 48, 64)
    assert sniff(jpeg + b"\x01" * 8) == ImageFacts("image/jpeg", 64, 48)
    webp = b"RIFF\0\0\0\0WEBPVP8X" + b"\0" * 8 + (99).to_bytes(3, "little") + (49).to_bytes(3, "little")
    assert sniff(webp) == ImageFacts("image/webp", 100, 50)
    assert sniff(b"BM\0\0") is None and sniff(b"") is None


def test_a_model_that_takes_no_images_gets_none_only_their_lines():
    image = image_block("image/png", b64(png(4, 4)))
    messages: list[Message] = [
        {"role": "user", "content": [text_block("go")]},
        call("t1"),
        {"role": "user", "content": [tool_result_block("t1", "[image: image/png, 33 B, 4x4]", images=[image])]},
    ]
    sent = OutputReducer().reduce(messages, window=None, estimate=0, images=False)
    assert sent[2]["content"][0]["content"] == (
        "[image: image/png, 33 B, 4x4]\n[1 image of this result not sent: this model takes no images]"
    )
