"""A tool call's arguments as a person reads them before approving it, with what it would change,
and, for a call that asks to leave the sandbox, what the sandbox itself refused.

A command is always shown whole: a long one must not hide its tail. What the sandbox refused
comes from the machine's `SandboxRefusal` (built from the sandbox's own rules), never from what
the command printed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from cmdop_tui.machines.machine import SandboxRefusal
from cmdop_tui.support.text import inert_line, strip_terminal_sequences, truncate_middle

DIFF_SHOWS = frozenset({"content", "old_string", "new_string"})  # what a diff says better than the text
ARGUMENTS_MAX_CHARS = 2_000
PLAIN_DIFF_LINES = 80  # on a terminal: past this, a note (the rest is in the TUI's dialog)
PLAIN_DIFF_CHARS = 8_000
PLAIN_LINE_CHARS = 300

OUTSIDE_MEANS = "Outside the sandbox it can write anywhere you can and reach your secrets and sockets."
PERSON_ONLY_MEANS = "Only a person may allow this: no rule, auto mode or --yes answers it, and it is asked each time."


def is_diff(preview: str | None) -> bool:
    """Whether a preview is a diff (not just a note saying why there is none)."""
    return preview is not None and any(line.startswith("@@ ") for line in preview.split("\n", 12)[:12])


def describe_arguments(
    arguments: Mapping[str, object], preview: str | None = None, *, max_chars: int | None = None
) -> str:
    """The command itself when there is one, whole (the rest as JSON below it), else indented
    JSON; the JSON cut in its middle to about `max_chars` when given (the command never is).

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
    if isinstance(command, str):
        rest = {k: v for k, v in arguments.items() if k != "command"}
        return command + (f"\n{_cut(json.dumps(rest, ensure_ascii=False), max_chars)}" if rest else "")
    return _cut(json.dumps(arguments, indent=2, ensure_ascii=False), max_chars)


def _cut(text: str, max_chars: int | None) -> str:
    return text if max_chars is None else truncate_middle(text, max_chars)


def refusal_lines(refusal: SandboxRefusal) -> list[str]:
    """What the sandbox refused, as lines a person reads (each inert): the action and the
    places, what the sandbox allows, and what running outside it means."""
    places = ", ".join(inert_line(path) for path in refusal.paths) or "a place outside the writable ones"
    on = "" if refusal.machine == "local" else f" on {inert_line(refusal.machine)}"
    lines = [f"The sandbox refused to {inert_line(refusal.action)}: {places}{on}."]
    if refusal.held:
        lines.append(f"Sandbox rule: {inert_line(refusal.held)}.")
    return [*lines, OUTSIDE_MEANS]


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
    escalation: SandboxRefusal | None = None,
    person_only: str | None = None,
    preview: str | None = None,
) -> str:
    """The question asked on a terminal (headless mode): what runs where, why only a person may
    allow it (the sandbox refused it: `escalation`; the floor left it to a person: `person_only`),
    the arguments (a command whole), the diff when there is one, `[y/N]`; plain and inert."""
    outside = " OUTSIDE the sandbox" if escalation else ""
    why = refusal_lines(escalation) if escalation else []
    if person_only:
        why += [f"The safety floor: {inert_line(person_only)}.", PERSON_ONLY_MEANS]
    summary = describe_arguments(arguments, preview, max_chars=ARGUMENTS_MAX_CHARS)
    diff = f"{plain_preview(preview)}\n" if preview else ""
    head = "".join(f"{line}\n" for line in why)
    return strip_terminal_sequences(f"Allow {name} on {machine}{outside}:\n{head}{summary}\n{diff}[y/N] ")
