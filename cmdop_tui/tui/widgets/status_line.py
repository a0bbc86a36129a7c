"""One line of facts: model, target machine, turn, loop, tokens, cache share, estimated cost."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING

from textual import work
from textual.content import Content
from textual.reactive import reactive
from textual.widget import Widget

from cmdop_tui.agent.budget import cache_read_share, format_usd
from cmdop_tui.agent.events import UsageTotals
from cmdop_tui.tui.vocabulary.messages import Agent

if TYPE_CHECKING:
    from cmdop_tui.session.session import Session
    from cmdop_tui.session.status import SessionStatus


@dataclass(frozen=True)
class StatusFacts:
    model: str = ""
    machine: str = "local"
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
    sandbox: str = ""  # what holds commands, when it is not the default workspace sandbox


CONTEXT_WARN_AT = 0.75  # the context's share shown as a warning from here on


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
        parts = self._parts(with_cache=True)
        if sum(len(part if isinstance(part, str) else part[0]) for part in parts) > self.content_size.width:
            parts = self._parts(with_cache=False)  # on a narrow terminal the cache share goes first
        return Content.assemble(*parts)

    def _parts(self, *, with_cache: bool) -> list[tuple[str, str] | str]:
        facts = self.facts
        usage = facts.usage
        total_in = usage.total_input_tokens
        parts: list[tuple[str, str] | str] = [("● working ", "$warning")] if facts.running else []
        parts += [(facts.model, "bold"), f" · {facts.machine}"]
        if facts.sandbox and facts.sandbox != "sandbox: workspace":
            parts.append((f" · {facts.sandbox}", "$warning" if facts.sandbox != "sandbox: strict" else ""))
        if facts.turn:
            parts.append(f" · turn {facts.turn}/{facts.max_turns}")
        if facts.loop_enabled:
            parts.append((f" · loop {facts.loop}/{facts.max_loops}", "$accent"))
        if facts.context_window and facts.context_tokens:
            share = facts.context_tokens / facts.context_window
            parts.append((f" · ctx {share:.0%}", "$warning" if share >= CONTEXT_WARN_AT else ""))
        parts.append(f" · ↑{compact_count(total_in)} ↓{compact_count(usage.output_tokens)}")
        if total_in and with_cache:
            parts.append(f" · cache {cache_read_share(usage):.0%}")
        if facts.cost_usd is not None or facts.budget_usd is not None:
            budget = "/" + format_usd(facts.budget_usd).lstrip("$") if facts.budget_usd is not None else ""
            parts.append(f" · {format_usd(facts.cost_usd or 0)}{budget}")
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
            self.update_facts(model="(no model)", machine="local", sandbox="", budget_usd=None, loop_enabled=False)
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
