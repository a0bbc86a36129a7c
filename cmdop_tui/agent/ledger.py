"""The session's ledger: what its requests cost, and whether the next one still fits the budget.

Prices and estimates are agent/budget.py's; this keeps the running account (the estimated spend,
the last request's usage, the warning given once at 80 %).
"""

from __future__ import annotations

from dataclasses import replace

from cmdop_tui.agent.agent_config import LoopConfig
from cmdop_tui.agent.budget import WARN_AT, estimate_cost, estimate_request_cost, format_usd
from cmdop_tui.agent.events import BudgetWarning, Usage
from cmdop_tui.agent.llm import EventSink
from cmdop_tui.agent.messages import ApiRequest


class Ledger:
    """Spending of one session (a runner's lifetime), against the configured budget."""

    def __init__(self, config: LoopConfig) -> None:
        self._config = config
        self.spent_usd = 0.0  # the session's estimated cost so far
        self.last_usage: Usage | None = None
        self._budget_warned = False

    def over_budget(self, request: ApiRequest, emit: EventSink) -> str | None:
        """Why the next request must not be sent (it would take the session past its budget).

        The warning comes when the session is about to pass 80 % of it; not when this request
        is the one that stops the run: the stop says it all, in one line.
        """
        config = self._config.current
        budget = config.max_budget_usd
        if budget is None:
            return None
        estimate = estimate_request_cost(config.model, request, self.last_usage, config.prices)
        if estimate is None:
            return None
        if self.spent_usd + estimate <= budget:
            self._warn_budget(self.spent_usd + estimate, budget, emit)
            return None
        return (
            f"stopped before a request that would cross the budget: {format_usd(self.spent_usd)} of "
            f"{format_usd(budget)} spent, the next request would cost about {format_usd(estimate)}"
        )

    def account(self, usage: Usage, emit: EventSink) -> None:
        """A reply's usage: spent, and the base of the next request's estimate."""
        self._spend(usage, emit)
        self.last_usage = usage

    def account_summary(self, usage: Usage, emit: EventSink) -> None:
        """What a compaction summary cost."""
        self._spend(replace(usage, purpose="summary"), emit)

    def account_sampling(self, usage: Usage, emit: EventSink) -> None:
        """What a completion an MCP server asked for cost (mcp/asks.py: sampling)."""
        self._spend(replace(usage, purpose="sampling"), emit)

    def _spend(self, usage: Usage, emit: EventSink) -> None:
        config = self._config.current
        cost = estimate_cost(usage.model or config.model, usage, config.prices)
        self.spent_usd += cost or 0.0
        emit(replace(usage, cost_usd=cost, session_cost_usd=self.spent_usd if cost is not None else None))
        if config.max_budget_usd is not None:
            self._warn_budget(self.spent_usd, config.max_budget_usd, emit)

    def _warn_budget(self, projected: float, budget: float, emit: EventSink) -> None:
        if not self._budget_warned and projected >= WARN_AT * budget:
            self._budget_warned = True
            spent = float(f"{self.spent_usd:.6g}")  # six significant digits: a tiny amount stays above 0
            emit(BudgetWarning(spent_usd=spent, budget_usd=budget))
