"""How the loop behaves (`AgentConfig`) and its one writer (`LoopConfig`).

The configuration is frozen, yet a session changes it while it lives (another model, loop mode,
a budget, what the endpoint said of the window). Every change goes through
`LoopConfig.reconfigure`, so one place assigns it and every part of the loop reads the same one.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any

from cmdop_tui.agent.budget import Prices
from cmdop_tui.agent.compaction import CompactionPolicy
from cmdop_tui.agent.loop_mode import LoopSettings
from cmdop_tui.agent.routing import ToolPolicy


@dataclass(frozen=True)
class AgentConfig:
    """How the loop behaves. Settings and agent profiles produce one of these."""

    model: str
    max_turns: int = 30
    max_tokens: int = 8192
    temperature: float = 0.3
    thinking_budget: int = 0
    parallel_tools: bool = True
    tool_policy: ToolPolicy = ToolPolicy()
    loop: LoopSettings = LoopSettings()
    extra_instructions: str = ""
    intent_router: bool = False
    router_model: str | None = None
    repeat_limit: int = 3
    max_budget_usd: float | None = None  # per session (a runner's lifetime)
    context_window: int | None = None  # the model's, in tokens (None: unknown, nothing is reduced)
    compaction: CompactionPolicy = CompactionPolicy()
    summary_model: str | None = None  # writes compaction summaries (None: the session's model)
    server_compaction: bool = False  # the endpoint compacts for us (beta context_management)
    image_input: bool = True  # the model sees images (else a result's images go as the lines naming them)
    prices: Prices = field(default_factory=dict)


FIELDS = frozenset(f.name for f in fields(AgentConfig))


class LoopConfig:
    """The loop's current configuration; `reconfigure` is the only way to change it."""

    def __init__(self, config: AgentConfig) -> None:
        self._current = config

    @property
    def current(self) -> AgentConfig:
        return self._current

    def reconfigure(self, base: AgentConfig | None = None, /, **changes: Any) -> AgentConfig:
        """Replace the configuration from the next request: `base` (default: the current one)
        with `changes` applied. An unknown field is refused (TypeError) and nothing changes."""
        unknown = sorted(set(changes) - FIELDS)
        if unknown:
            raise TypeError(f"AgentConfig has no field {', '.join(unknown)}")
        self._current = replace(base if base is not None else self._current, **changes)
        return self._current
