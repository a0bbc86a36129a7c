"""Which tools the model sees this turn. Four filters, in order:

1. the intent router (off by default): DIRECT sends no tool definitions at all;
2. the turn-1 category allowlist: tools whose tags meet it, plus core tools (turn 1 only);
3. the only tools a prompt may use, when it says (a custom command's `allowed-tools`);
4. the hide map, last, so it wins over everything.

A call to a tool outside the resolved set is answered with an error and never executed.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from cmdop_tui.tools.base import Tool

Route = Literal["direct", "agent"]

INTENT_ROUTER_ENV = "CMDOP_INTENT_ROUTER"

INTENT_SYSTEM_PROMPT = (
    "You route messages for an operator that can run commands and read files on the user's "
    "machines. Answer with exactly one word. DIRECT: the message can be fully answered from "
    "general knowledge or the conversation alone (greetings, explanations, writing). AGENT: the "
    "answer depends on a machine, a file, a command, or any action. When unsure, answer AGENT."
)


@dataclass(frozen=True)
class ToolPolicy:
    """The turn-1 allowlist of tags (empty: no filter), the hidden tool names, and the only
    tools offered (None: no such limit; a custom command's `allowed-tools`, for its prompt)."""

    turn1_allow_tags: frozenset[str] = frozenset()
    hidden: frozenset[str] = frozenset()
    only: frozenset[str] | None = None


def intent_router_enabled(environ: Mapping[str, str] = os.environ) -> bool:
    return environ.get(INTENT_ROUTER_ENV, "").strip().lower() in {"on", "1", "true", "yes"}


def parse_route(answer: str) -> Route:
    """The classifier's answer as a route; anything but a clear DIRECT means AGENT (fail open)."""
    return "direct" if answer.strip().upper().startswith("DIRECT") else "agent"


def resolve_tools(tools: Iterable[Tool], *, turn: int, policy: ToolPolicy, route: Route = "agent") -> list[Tool]:
    if route == "direct":
        return []
    resolved = list(tools)
    if turn == 1 and policy.turn1_allow_tags:
        resolved = [t for t in resolved if t.core or t.tags & policy.turn1_allow_tags]
    if policy.only is not None:
        resolved = [t for t in resolved if t.name in policy.only]
    return [t for t in resolved if t.name not in policy.hidden]
