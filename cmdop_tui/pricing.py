"""Estimated cost of a session from token usage.

Prices are US dollars per million tokens (input, output). Cache reads cost a tenth of the input
price and cache writes a quarter more, as Anthropic bills them. Unknown models (a local server,
another endpoint) have no estimate.
"""

from __future__ import annotations

from collections.abc import Mapping

from cmdop_tui.agent.events import UsageTotals

PRICES_PER_MTOK: dict[str, tuple[float, float]] = {
    "claude-haiku-5-5": (1.0, 5.0),
    "claude-sonnet-5-5": (3.0, 15.0),
    "claude-opus-5-5": (5.0, 25.0),
}
CACHE_READ_FACTOR = 0.1
CACHE_WRITE_FACTOR = 1.25


def estimate_cost(
    model: str, usage: UsageTotals, prices: Mapping[str, tuple[float, float]] = PRICES_PER_MTOK
) -> float | None:
    price = prices.get(model)
    if price is None:
        return None
    input_price, output_price = price
    cost = (
        usage.input_tokens * input_price
        + usage.cache_read_input_tokens * input_price * CACHE_READ_FACTOR
        + usage.cache_creation_input_tokens * input_price * CACHE_WRITE_FACTOR
        + usage.output_tokens * output_price
    )
    return cost / 1_000_000


def cache_read_share(usage: UsageTotals) -> float:
    """The share of input tokens served from the prompt cache."""
    total = usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens
    return usage.cache_read_input_tokens / total if total else 0.0
