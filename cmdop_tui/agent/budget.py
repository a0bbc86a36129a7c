"""Cost: what a session has spent (estimated from token usage) and what the next request may cost.

Prices are US dollars per million tokens (input, output), from settings. Cache reads cost a tenth
of the input price and cache writes a quarter more, as Anthropic bills them. Unknown models (a
local server, another endpoint) have no estimate, so no budget can be enforced for them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # types only: the status line and the chat draw before the events are loaded
    from cmdop_tui.agent.events import Usage
    from cmdop_tui.agent.messages import ApiRequest
    from cmdop_tui.agent.usage_totals import UsageTotals

WARN_AT = 0.8  # share of the budget at which the user is warned
EXPECTED_OUTPUT_TOKENS = 500  # what the next reply is assumed to cost, before it exists
CHARS_PER_TOKEN = 4

Prices = Mapping[str, tuple[float, float]]
CACHE_READ_FACTOR = 0.1
CACHE_WRITE_FACTOR = 1.25


def format_usd(amount: float) -> str:
    """Money as people read it: cents from a dollar up, else the digits a small amount needs.

    ``$5.00``, ``$0.50``, ``$0.0123``, ``$0.0001``, ``$0.000012``: at least two decimals, below a
    dollar at least four and at least two significant digits, trailing zeros dropped (but two
    decimals kept). A positive amount is never shown as ``$0.00``.
    """
    if not math.isfinite(amount):
        return f"${amount}"
    sign, amount = ("-", -amount) if amount < 0 else ("", amount)
    if amount == 0 or round(amount, 2) >= 1:
        return f"{sign}${amount:.2f}"
    decimals = max(4, 1 - math.floor(math.log10(amount)))
    text = f"{amount:.{decimals}f}".rstrip("0")
    whole, _, fraction = text.partition(".")
    return f"{sign}${whole}.{fraction.ljust(2, '0')}"


def estimate_cost(model: str, usage: UsageTotals | Usage, prices: Prices) -> float | None:
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
    total = usage.total_input_tokens
    return usage.cache_read_input_tokens / total if total else 0.0


def estimate_request_cost(model: str, request: ApiRequest, last: Usage | None, prices: Prices) -> float | None:
    """A cautious estimate of what sending `request` will cost, before sending it.

    Input: the part the last request already had is priced as the API billed it then (mostly
    cache reads); what is new is priced as fresh input. Output: a typical reply.
    """
    price = prices.get(model)
    if price is None:
        return None
    input_price, output_price = price
    size = len(json.dumps([request.get("system"), request.get("tools"), request.get("messages")], default=str))
    tokens = size // CHARS_PER_TOKEN
    known = last.total_input_tokens if last is not None else 0
    fresh = max(0, tokens - known)
    earlier = estimate_cost(model, replace(last, output_tokens=0), prices) if last else 0.0  # its input, as billed
    return (earlier or 0.0) + (
        fresh * input_price * CACHE_WRITE_FACTOR + EXPECTED_OUTPUT_TOKENS * output_price
    ) / 1_000_000
