"""A tool call's arguments as a person reads them before approving it, with what it would change."""

from __future__ import annotations

import json
from collections.abc import Mapping

from cmdop_tui.support.text import strip_terminal_sequences, truncate_middle

DIFF_SHOWS = frozenset({"content", "old_string", "new_string"})  # what a diff says better than the text
ARGUMENTS_MAX_CHARS = 2_000
PLAIN_DIFF_LINES = 80  # on a terminal: past this, a note (the rest is in the TUI's dialog)
PLAIN_DIFF_CHARS = 8_000
PLAIN_LINE_CHARS = 300


def is_diff(preview: str | None) -> bool:
    """Whether a preview is a diff (not just a note saying why there is none)."""
    return preview is not None and any(line.startswith("@@ ") for line in preview.split("\n", 12)[:12])


def describe_arguments(arguments: Mapping[str, object], preview: str | None = None) -> str:
    """The command itself when there is one (the rest as JSON below it), else indented JSON.

    With a diff as `preview`, the texts it shows (`content`, `old_string`, `new_string`) are left
    out and the rest goes one `name: value` a line.
    """
    if is_diff(preview):
        rest = {key: value for key, value in arguments.items() if key not in DIFF_SHOWS}
        return "\n".join(
            f"{key}: {value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)}"
            for key, value in rest.items()
        )
    command = arguments.get("command")
    if isinstance(command, str) and len(arguments) <= 2:
        rest = {k: v for k, v in arguments.items() if k != "command"}
        return command + (f"\n{json.dumps(rest, ensure_ascii=False)}" if rest else "")
    return json.dumps(arguments, indent=2, ensure_ascii=False)


def plain_preview(preview: str, max_lines: int = PLAIN_DIFF_LINES, max_chars: int = PLAIN_DIFF_CHARS) -> str:
    """A preview for a plain terminal: inert, long lines cut, at most `max_lines` lines and about
    `max_chars` characters, then a note of how many lines were left out."""
    lines = strip_terminal_sequences(preview).split("\n")
    shown: list[str] = []
    used = 0
    for line in lines:
        cut = line if len(line) <= PLAIN_LINE_CHARS else line[: PLAIN_LINE_CHARS - 1] + "…"
        if len(shown) == max_lines or used + len(cut) > max_chars:
            break
        shown.append(cut)
        used += len(cut) + 1
    if len(shown) < len(lines):
        shown.append(f"[... {len(lines) - len(shown):,} more lines of the diff not shown]")
    return "\n".join(shown)


def approval_question(
    name: str,
    machine: str,
    arguments: Mapping[str, object],
    *,
    escalation: str | None = None,
    preview: str | None = None,
) -> str:
    """The question asked on a terminal (headless mode): what runs where, the arguments, the
    diff when there is one, `[y/N]`; plain, inert and cut to size."""
    summary = truncate_middle(strip_terminal_sequences(describe_arguments(arguments, preview)), ARGUMENTS_MAX_CHARS)
    outside = f" OUTSIDE the sandbox (it refused: needs to {escalation})" if escalation else ""
    diff = f"{plain_preview(preview)}\n" if preview else ""
    return strip_terminal_sequences(f"Allow {name} on {machine}{outside}:\n{summary}\n{diff}[y/N] ")
