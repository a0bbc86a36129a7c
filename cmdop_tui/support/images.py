"""What an image is, read from its first bytes: its kind (the bytes, not what a sender claims) and
its size in pixels, for the four kinds the Messages API takes (JPEG, PNG, GIF, WebP). Pure: no
decoding library, only the headers.

    sniff(data) -> ImageFacts("image/png", 16, 16) | None
"""

from __future__ import annotations

import base64
import binascii
import struct
from dataclasses import dataclass

MEDIA_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})  # what the Messages API takes
HEAD_BYTES = 64 * 1024  # of an image read for its size (a JPEG's frame header may follow its metadata)
TOKENS_PER_PIXEL = 1 / 750  # the Messages API's own estimate of an image's tokens: (width * height) / 750
LONGEST_SIDE = 1568  # the API scales a longer image down to this first
MAX_IMAGE_TOKENS = 1600  # so no image counts for more than about this
BYTES_PER_TOKEN_GUESS = 100  # an image of unknown size: its tokens guessed from its bytes (then capped)


@dataclass(frozen=True)
class ImageFacts:
    media_type: str
    width: int | None = None
    height: int | None = None


def sniff(data: bytes) -> ImageFacts | None:
    """The kind and size of the image `data` starts with; None when it is none of the four."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return _png(data)
    if data.startswith(b"\xff\xd8\xff"):
        return _jpeg(data)
    if data[:6] in (b"GIF87a", b"GIF89a"):
        width, height = struct.unpack("<HH", data[6:10]) if len(data) >= 10 else (None, None)
        return ImageFacts("image/gif", width, height)
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return _webp(data)
    return None


def decode_head(base64_data: str, limit: int = HEAD_BYTES) -> bytes:
    """The first `limit` bytes or so that `base64_data` encodes (b"" when it is not base64)."""
    chunk = "".join(base64_data[: (limit * 4 // 3) + 8].split())
    chunk = chunk[: len(chunk) - len(chunk) % 4]
    try:
        return base64.b64decode(chunk, validate=True)
    except (binascii.Error, ValueError):
        return b""


def decoded_size(base64_data: str) -> int:
    """How many bytes `base64_data` encodes (without decoding it)."""
    data = base64_data.strip()
    return max(0, len(data) * 3 // 4 - data[-2:].count("="))


def image_tokens(width: int | None, height: int | None, size: int) -> int:
    """About how many tokens the model's input counts for an image (`size`: its bytes, used
    when its pixels are unknown): (width * height) / 750, after the API's scaling to
    LONGEST_SIDE, so never past MAX_IMAGE_TOKENS."""
    if width and height:
        scale = min(1.0, LONGEST_SIDE / max(width, height))
        return max(1, min(MAX_IMAGE_TOKENS, round(width * scale * height * scale * TOKENS_PER_PIXEL)))
    return max(1, min(MAX_IMAGE_TOKENS, size // BYTES_PER_TOKEN_GUESS))


def _png(data: bytes) -> ImageFacts:
    if len(data) >= 24 and data[12:16] == b"IHDR":
        width, height = struct.unpack(">II", data[16:24])
        return ImageFacts("image/png", width, height)
    return ImageFacts("image/png")


_JPEG_FRAMES = frozenset({0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF})


def _jpeg(data: bytes) -> ImageFacts:
    """Walk the JPEG's segments to its frame header (SOFn), which holds its size."""
    index = 2
    while index + 9 < len(data):
        if data[index] != 0xFF:
            break
        marker = data[index + 1]
        if marker == 0xFF:  # fill byte
            index += 1
            continue
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:  # markers without a length
            index += 2
            continue
        (length,) = struct.unpack(">H", data[index + 2 : index + 4])
        if marker in _JPEG_FRAMES:
            height, width = struct.unpack(">HH", data[index + 5 : index + 9])
            return ImageFacts("image/jpeg", width, height)
        index += 2 + length
    return ImageFacts("image/jpeg")


def _webp(data: bytes) -> ImageFacts:
    chunk = data[12:16]
    if chunk == b"VP8X" and len(data) >= 30:
        width = 1 + int.from_bytes(data[24:27], "little")
        height = 1 + int.from_bytes(data[27:30], "little")
        return ImageFacts("image/webp", width, height)
    if chunk == b"VP8 " and len(data) >= 30:
        width, height = struct.unpack("<HH", data[26:30])
        return ImageFacts("image/webp", width & 0x3FFF, height & 0x3FFF)
    if chunk == b"VP8L" and len(data) >= 25:
        bits = int.from_bytes(data[21:25], "little")
        return ImageFacts("image/webp", (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1)
    return ImageFacts("image/webp")
