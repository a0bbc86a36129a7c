"""Where a streamed Markdown reply can be cut into finished blocks.

A block is finished at a blank line that is outside a code fence and followed by a line that
does not continue it (an indented line may be a list item's continuation, so it waits). Finished
blocks never change again, so they are rendered once; only the open block is re-rendered as
tokens arrive.
"""

from __future__ import annotations

import re

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def _fence_marker(line: str) -> str | None:
    match = FENCE.match(line)
    return match.group(1) if match else None


def split_finished(text: str) -> tuple[list[str], str]:
    """(finished blocks, the open rest). `text` must start at a block boundary."""
    lines = text.split("\n")
    blocks: list[str] = []
    start = 0
    fence: str | None = None
    # A boundary needs the first character of the line after the blank one; the last line may
    # be incomplete, so it never closes a fence.
    for index in range(len(lines) - 1):
        line = lines[index]
        marker = _fence_marker(line)
        if fence is not None:
            if (
                marker is not None
                and marker[0] == fence[0]
                and len(marker) >= len(fence)
                and not line.strip()[len(marker) :].strip()
            ):
                fence = None
            continue
        if marker is not None:
            fence = marker
            continue
        following = lines[index + 1]
        if not line.strip() and following.strip() and not following[0].isspace():
            block = "\n".join(lines[start:index]).strip("\n")
            if block:
                blocks.append(block)
            start = index + 1
    return blocks, "\n".join(lines[start:])
