"""An MCP server's answers as what the model reads: images as image blocks (bounded), audio
named, resource links naming the tool that reads them, embedded resources decoded by MIME type,
structured content as compact JSON without base64."""

from __future__ import annotations

import base64
import json
import struct
import zlib

import mcp_types as types

from cmdop_tui.mcp.results import OUTPUT_LIMIT, compact_json, resource_result, size_of, tool_result
from cmdop_tui.tools.base import MAX_IMAGE_BASE64, MAX_RESULT_IMAGES, ResultImage, ToolResult

READER = "mcp__demo__read_resource"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def png(width: int = 16, height: int = 16, padding: int = 0) -> bytes:
    """A PNG header saying `width` x `height`, then `padding` bytes (enough for what reads headers)."""
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    ihdr = struct.pack(">I", 13) + b"IHDR" + header + struct.pack(">I", zlib.crc32(b"IHDR" + header))
    return b"\x89PNG\r\n\x1a\n" + ihdr + b"\0" * padding


def jpeg(width: int, height: int) -> bytes:
    """A JPEG's start: an APP0 segment, then a frame header with its size."""
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\0" + b"\0" * 9
    frame = b"\xff\xc0" + struct.pack(">HBHHB", 11, 8, height, width, 1) + b"\x01\x11\x00"
    return b"\xff\xd8" + app0 + frame


def test_an_image_goes_as_an_image_named_in_the_text_its_kind_read_from_its_bytes():
    data = b64(jpeg(640, 480))
    result = tool_result(
        types.CallToolResult(
            content=[types.TextContent(text="a photo"), types.ImageContent(data=data, mime_type="image/png")]
        )
    )
    assert result.images == (ResultImage("image/jpeg", data, 640, 480),)  # the server said png: the bytes say jpeg
    assert result.content == "a photo\n[image: image/jpeg, 33 B, 640x480]"


def test_an_image_the_model_cannot_take_is_described():
    for data, mime in ((b64(b"BM" + b"\0" * 100), "image/bmp"), ("not base64 at all!" * 10, "image/png")):
        result = tool_result(types.CallToolResult(content=[types.ImageContent(data=data, mime_type=mime)]))
        assert result.images == () and f"[image: {mime}," in result.content
        assert "not sent, not a JPEG, PNG, GIF or WebP" in result.content


def test_images_past_the_bounds_are_left_out_and_said():
    big = b64(png(padding=MAX_IMAGE_BASE64))  # one image past its bound
    huge = b64(png(9000, 10))  # past the API's pixels
    many = [types.ImageContent(data=b64(png(padding=n)), mime_type="image/png") for n in range(MAX_RESULT_IMAGES + 1)]
    result = tool_result(
        types.CallToolResult(
            content=[
                types.ImageContent(data=big, mime_type="image/png"),
                types.ImageContent(data=huge, mime_type="image/png"),
                *many,
            ]
        )
    )
    assert len(result.images) == MAX_RESULT_IMAGES
    lines = result.content.splitlines()
    assert lines[0].startswith("[image: image/png, 1.0 MB, 16x16: not sent, larger than 750 kB]")
    assert lines[1] == "[image: image/png, 33 B, 9000x10: not sent, larger than 8000 pixels on a side]"
    assert lines[-1].endswith(f": not sent, a result carries {MAX_RESULT_IMAGES} images at most]")
    assert sum("not sent" in line for line in lines) == 3


def test_audio_is_named_the_model_takes_none():
    audio = types.AudioContent(data=b64(b"RIFF" + b"\0" * 2_499_996), mime_type="audio/wav")
    result = tool_result(types.CallToolResult(content=[audio]))
    assert result == ToolResult("[audio: audio/wav, 2.5 MB: not sent, the model takes no audio; not kept]")


def test_a_resource_link_names_the_tool_that_reads_it():
    link = types.ResourceLink(uri="demo://notes/1", name="notes", mime_type="text/plain", size=2048)
    assert tool_result(types.CallToolResult(content=[link]), READER).content == (
        f"[resource link: demo://notes/1 (notes), text/plain, 2 kB: read it with {READER}]"
    )
    assert "this server offers no way to read it" in tool_result(types.CallToolResult(content=[link])).content


def test_embedded_resources_are_decoded_by_their_mime_type():
    def embedded(blob: bytes, mime: str | None) -> types.EmbeddedResource:
        return types.EmbeddedResource(
            resource=types.BlobResourceContents(uri="demo://r", mime_type=mime, blob=b64(blob))
        )

    result = tool_result(
        types.CallToolResult(
            content=[
                types.EmbeddedResource(resource=types.TextResourceContents(uri="demo://t", text="plain text")),
                embedded(b'{"a": 1}', "application/json"),
                embedded("héllo".encode(), "text/markdown; charset=utf-8"),
                embedded(png(), "image/png"),
                embedded(b"PK\x03\x04" + b"\0" * 3000, "application/zip"),
                embedded(b"no type said", None),
                embedded(png(2, 2), None),
            ]
        )
    )
    assert result.content.split("\n") == [
        "[resource: demo://t]",
        "plain text",
        "[resource: demo://r, application/json]",
        '{"a": 1}',
        "[resource: demo://r, text/markdown; charset=utf-8]",
        "héllo",
        "[resource: demo://r, image/png]",
        "[image: image/png, 33 B, 16x16]",
        "[resource: demo://r, application/zip, 3 kB: binary, not shown]",
        "[resource: demo://r]",
        "no type said",
        "[resource: demo://r]",
        "[image: image/png, 33 B, 2x2]",
    ]
    assert [image.width for image in result.images] == [16, 2]


def test_a_long_resource_text_is_bounded():
    long = types.TextResourceContents(uri="demo://big", text="z" * (OUTPUT_LIMIT * 3))
    result = resource_result(types.ReadResourceResult(contents=[long]))
    assert len(result.content) < OUTPUT_LIMIT and "cut ...]" in result.content


def test_structured_content_alone_is_compact_json_without_base64():
    picture = b64(png(padding=12_000))
    structured = {"name": "chart", "image": picture, "uri": f"data:image/png;base64,{picture}", "n": [1, 2]}
    result = tool_result(types.CallToolResult(content=[], structured_content=structured))
    assert result.content == (
        '{"name":"chart","image":"[base64: 12 kB, image/png]","uri":"[base64: 12 kB, image/png]","n":[1,2]}'
    )
    text_too = tool_result(types.CallToolResult(content=[types.TextContent(text="t")], structured_content={"n": 1}))
    assert text_too.content == "t"  # the text says it already
    serialised = json.dumps(structured, indent=2)  # the same, as the spec asks servers to send it too
    echoed = tool_result(
        types.CallToolResult(content=[types.TextContent(text=serialised)], structured_content=structured)
    )
    assert echoed.content == result.content


def test_long_ordinary_strings_stay_as_they_are():
    prose = "word " * 100
    hexdigest = "ab12" * 80  # base64's alphabet, but text
    assert json.loads(compact_json({"p": prose, "h": hexdigest, "short": "QUJD"})) == {
        "p": prose,
        "h": "[base64: 240 B, binary]",
        "short": "QUJD",
    }


def test_empty_results_errors_and_long_ones():
    assert tool_result(types.CallToolResult(content=[])) == ToolResult("(no output)")
    failed = tool_result(types.CallToolResult(content=[], structured_content={"n": 1}, is_error=True))
    assert failed == ToolResult('{"n":1}', is_error=True)
    long = tool_result(types.CallToolResult(content=[types.TextContent(text="\x1b[31m" + "y" * (OUTPUT_LIMIT * 2))]))
    assert len(long.content) < OUTPUT_LIMIT + 100 and "cut ...]" in long.content and "\x1b" not in long.content
    assert size_of(b64(b"x")) == "1 B" and size_of(b64(b"x" * 999_999)) == "1000 kB"
