"""System reminders: rebuilt every turn, never stored in history.

The system prompt has a static prefix (who the operator is and how it works: the same for every
session with the same profile) and, after the cache-boundary marker, the facts of this session and
this turn. The request builder splits the prompt at the marker and puts a cache breakpoint on the
static part, so prompt caching covers tools + static prefix across sessions.
"""

from __future__ import annotations

import os
import platform
import socket
import time
from dataclasses import dataclass
from typing import Literal

from cmdop_tui.machines.local_load import current_user

CACHE_BOUNDARY = "\n<!-- cmdop:cache-boundary -->\n"

Platform = Literal["tui", "headless", "remote", "editor"]

IDENTITY_STATIC = """\
You are CMDOP Operator, an operator that does real work on the user's machines through tools: \
running shell commands, reading and writing files, searching. You act, then report what you found \
or did, briefly and accurately."""

CRITICAL_TOOLS = """\
<system-reminder>
Prefer tools for real work. When a question depends on the state of a machine (files, processes, \
services, disk, logs, versions), find out with a tool instead of guessing. Never claim a command \
ran or show output you did not get from a tool. Commands that change the machine may need the \
user's approval; if a call is denied, do not retry it unchanged.
</system-reminder>"""

INSPECTOR_LINKS = """\
<system-reminder>
When you refer to a file, link it as cmdop://<machine>/<absolute path> (with #L<line> for a line), \
for example [app.py](cmdop://local/home/me/app.py#L12), so the user can open it.
</system-reminder>"""

NO_TOOLS_HONESTY = """\
<system-reminder>
No tools are available for this reply. Answer from what you know and what is in the \
conversation. Never invent command output, file contents or machine state; if the answer needs \
them, say what you would run and ask the user to enable tools.
</system-reminder>"""

PLAN_MODE = (
    "Plan mode is on: nothing may be changed now, and every call that could change something is "
    "refused. Find out what you need with the read-only tools, then present a short plan (the "
    "steps, the commands, the files) and ask the user whether to go on. When the user switches "
    "mode, this note is gone and you may carry the plan out."
)

PLATFORM_HINTS: dict[Platform, str] = {
    "tui": "The user reads your replies in a terminal UI, often 80 columns wide, often over SSH. "
    "Keep replies short; use Markdown lists and code blocks, no wide tables.",
    "headless": "Your reply is read by a program or a script in a terminal. Be concise and plain.",
    "remote": "Another CMDOP Operator asked you this through ask_machine. Do the work on this "
    "machine and report the facts it needs, concisely.",
    "editor": "The user reads your replies in a code editor's agent panel, which renders Markdown and "
    "shows your tool calls and diffs beside them. Keep replies short.",
}


@dataclass(frozen=True)
class SessionFacts:
    """What the operator knows about where it runs."""

    hostname: str
    os_name: str
    timezone: str
    user: str
    cwd: str
    platform: Platform = "tui"
    target_machine: str | None = None
    machines: tuple[str, ...] = ()  # other machines the session can reach
    sandbox: str = ""  # what holds commands here, in a sentence for the model
    plan_mode: bool = False  # the permission mode is `plan`: the model proposes, nothing changes

    @classmethod
    def gather(
        cls,
        *,
        platform_name: Platform = "tui",
        target_machine: str | None = None,
        machines: tuple[str, ...] = (),
        cwd: str | None = None,
    ) -> SessionFacts:
        """This machine's facts; `cwd` is where the tools' relative paths start (default: ours)."""
        return cls(
            hostname=socket.gethostname(),
            os_name=f"{platform.system()} {platform.release()} ({platform.machine()})",
            timezone=time.strftime("%Z") or "UTC",
            user=current_user(),
            cwd=cwd or os.getcwd(),
            platform=platform_name,
            target_machine=target_machine,
            machines=machines,
        )


def static_prefix(extra_instructions: str = "") -> str:
    parts = [IDENTITY_STATIC, CRITICAL_TOOLS, INSPECTOR_LINKS]
    if extra_instructions.strip():
        parts.append(extra_instructions.strip())
    return "\n\n".join(parts)


def session_reminders(facts: SessionFacts, *, tools_available: bool) -> str:
    lines = [f"I'm CMDOP Operator on {facts.hostname}."]
    if facts.target_machine:
        lines.append(
            f"Target machine: the user is working on {facts.target_machine}. Your tools act there "
            f"by default (for multi-step work you may also use ask_machine); {facts.hostname}, "
            "where you run, is not the subject."
        )
    else:
        lines.append(
            f"Environment: {facts.os_name}; timezone {facts.timezone}; user {facts.user}; "
            f"working directory {facts.cwd}."
        )
    if facts.sandbox:
        lines.append(facts.sandbox)
    if facts.machines:
        others = ", ".join(facts.machines)
        lines.append(
            f"Machines you can work on besides this one: {others}. Give a tool `machine=NAME` for "
            "single steps there; use ask_machine (or ask_machines for several) for multi-step work; "
            "run_on_machines runs one command on many at once (names, `tag:T`, group names)."
        )
    lines.append(PLATFORM_HINTS[facts.platform])
    if facts.plan_mode:
        lines.append(PLAN_MODE)
    text = "<system-reminder>\n" + "\n".join(lines) + "\n</system-reminder>"
    if not tools_available:
        text += "\n\n" + NO_TOOLS_HONESTY
    return text


def build_system_prompt(facts: SessionFacts, *, tools_available: bool, extra_instructions: str = "") -> str:
    """The whole system prompt, static prefix first, then the cache-boundary marker."""
    return (
        static_prefix(extra_instructions) + CACHE_BOUNDARY + session_reminders(facts, tools_available=tools_available)
    )


def split_at_boundary(system_prompt: str) -> tuple[str, str]:
    """(static prefix, the rest). Without a marker the whole prompt counts as static."""
    static, _, rest = system_prompt.partition(CACHE_BOUNDARY)
    return static, rest
