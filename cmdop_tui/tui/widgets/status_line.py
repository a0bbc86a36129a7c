"""One line of facts: model, target machine, the permission mode and the sandbox, turn, loop,
tokens, cache share, estimated cost.

The mode and the sandbox are always shown (how freely the model acts, and what holds its
commands); when the line does not fit, the other facts go, the least needed first.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING

from textual import work
from textual.content import Content
from textual.reactive import reactive
from textual.widget import Widget

from cmdop_tui.agent.budget import cache_read_share, format_usd
from cmdop_tui.agent.usage_totals import UsageTotals
from cmdop_tui.machines.spec import LOCAL
from cmdop_tui.tui.vocabulary.messages import Agent

if TYPE_CHECKING:
    from cmdop_tui.session.session import Session
    from cmdop_tui.session.status import SessionStatus


@dataclass(frozen=True)
class StatusFacts:
    model: str = ""
    machine: str = LOCAL
    turn: int = 0
    max_turns: int = 0
    loop_enabled: bool = False
    loop: int = 0
    max_loops: int = 0
    running: bool = False
    usage: UsageTotals = field(default_factory=UsageTotals)
    cost_usd: float | None = None
    budget_usd: float | None = None
    context_window: int | None = None
    context_tokens: int = 0  # the last request's context and its reply: where the next one starts
    sandbox: str = ""  # what holds commands ("sandbox workspace", "no sandbox")
    mode: str = "default"  # the permission mode (config/model.py PERMISSION_MODES)


CONTEXT_WARN_AT = 0.75  # the context's share shown as a warning from here on
MODE_LABELS = {"accept_edits": "accept edits"}  # a mode as people read it (else its name)
MODE_STYLES = {"accept_edits": "$accent", "plan": "$accent", "auto": "$warning", "strict": "$success"}


def compact_count(tokens: int) -> str:
    if tokens < 1000:
        return str(tokens)
    if tokens < 1_000_000:
        return f"{tokens / 1000:.1f}k"
    return f"{tokens / 1_000_000:.1f}M"


class StatusLine(Widget):
    DEFAULT_CSS = """
    StatusLine {
        height: 1;
        padding: 0 1;
        background: $panel;
        color: $text-muted;
    }
    """

    facts: reactive[StatusFacts] = reactive(StatusFacts, always_update=True)

    def render(self) -> Content:
        parts = self._parts()
        width = self.content_size.width
        while sum(len(text) for _, text, _ in parts) > width and any(rank for rank, _, _ in parts):
            drop = max(rank for rank, _, _ in parts)  # the least needed fact goes first
            parts = [part for part in parts if part[0] != drop]
        return Content.assemble(*((text, style) for _, text, style in parts))

    def _parts(self) -> list[tuple[int, str, str]]:
        """(rank, text, style) of each fact, in the line's order; the highest rank goes first
        when the line is too narrow, rank 0 never (what runs, the mode and the sandbox), the cost
        (rank 1) last of the others."""
        facts = self.facts
        usage = facts.usage
        total_in = usage.total_input_tokens
        parts = [(0, "● working · ", "$warning")] if facts.running else []
        if facts.model:  # none while the session opens
            parts.append((4, f"{facts.model} · ", "bold"))
        # This machine is where work goes by default: said when there is room; another is kept longer.
        parts.append((5 if facts.machine == LOCAL else 3, f"{facts.machine} · ", ""))
        parts.append((0, MODE_LABELS.get(facts.mode, facts.mode), MODE_STYLES.get(facts.mode, "")))
        if facts.sandbox:
            calm = facts.sandbox.startswith(("sandbox workspace", "sandbox strict"))
            parts.append((0, f" · {facts.sandbox}", "" if calm else "$warning"))
        if facts.turn:
            parts.append((6, f" · turn {facts.turn}/{facts.max_turns}", ""))
        if facts.loop_enabled:
            parts.append((3, f" · loop {facts.loop}/{facts.max_loops}", "$accent"))
        if facts.context_window and facts.context_tokens:
            share = facts.context_tokens / facts.context_window
            parts.append((2, f" · ctx {share:.0%}", "$warning" if share >= CONTEXT_WARN_AT else ""))
        parts.append((7, f" · ↑{compact_count(total_in)} ↓{compact_count(usage.output_tokens)} tok", ""))
        if total_in:
            parts.append((8, f" · cache {cache_read_share(usage):.0%}", ""))
        if facts.cost_usd is not None or facts.budget_usd is not None:
            budget = "/" + format_usd(facts.budget_usd).lstrip("$") if facts.budget_usd is not None else ""
            parts.append((1, f" · {format_usd(facts.cost_usd or 0)}{budget}", ""))  # money: the last to go
        return parts

    def update_facts(self, **changes: object) -> None:
        self.facts = replace(self.facts, **changes)  # type: ignore[arg-type]

    @work(group="window", exclusive=True, exit_on_error=False)
    async def learn_window(self, session: Session) -> None:
        """Learn the model's context window (the Models API may be asked once a model)."""
        self.update_facts(context_window=await session.context_window())

    def show_session(self, status: SessionStatus | None) -> None:
        """What the session says of itself (None: no session is open)."""
        if status is None:
            self.update_facts(model="(no model)", machine=LOCAL, sandbox="", budget_usd=None, loop_enabled=False)
            return
        self.update_facts(**asdict(status))  # each of its facts is one of the line's, by name

    def on_agent_turn_started(self, message: Agent.TurnStarted) -> None:
        event = message.event
        self.update_facts(turn=event.turn, max_turns=event.max_turns, loop=event.loop)

    def on_agent_usage_reported(self, message: Agent.UsageReported) -> None:
        event = message.event
        usage = replace(self.facts.usage)
        usage.add(event)
        if event.purpose != "reply":  # a summary, a sampling: it costs, but fills no context
            self.update_facts(usage=usage, cost_usd=event.session_cost_usd)
            return
        context = event.total_input_tokens + event.output_tokens
        self.update_facts(usage=usage, cost_usd=event.session_cost_usd, context_tokens=context)

    def on_agent_compacted(self, message: Agent.Compacted) -> None:
        self.update_facts(context_tokens=message.event.tokens_after)

    def on_agent_loop_continued(self, message: Agent.LoopContinued) -> None:
        self.update_facts(loop=message.event.loop, max_loops=message.event.max_loops)
