"""A tool call as the approval gate sees it, and the gate's answer.

Kept apart from the runner so that a UI can import these without loading the model SDK.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from cmdop_tui.machines.machine import SandboxRefusal
from cmdop_tui.tools.base import Tool


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    input: dict[str, Any]
    tool: Tool | None
    machine: str = "local"  # where it runs: its `machine` argument, else the session's target
    escalation: SandboxRefusal | None = None  # asked again to run outside the sandbox: what it refused
    preview: str | None = None  # what it would change (a write's or an edit's diff), read before asking


@dataclass(frozen=True)
class Approval:
    allowed: bool
    reason: str = ""


Approver = Callable[[ToolCall], Awaitable[Approval]]

# Why the rules deny this call on this machine (a tool that runs on many hosts asks it per host),
# or None: never asks a person.
HostRules = Callable[[ToolCall, str], str | None]
