"""How many tokens a model reads at most: its context window.

In order: `--max-context-tokens` (it overrides); the endpoint's Models API (`max_input_tokens`),
where it has one; `[models."ID"] context_window` in the settings; else DEFAULT_CONTEXT_WINDOW.
"""

from __future__ import annotations

import asyncio
import logging

import anthropic
import httpx2

from cmdop_tui.config.settings import Settings

DEFAULT_CONTEXT_WINDOW = 200_000
MODELS_API_TIMEOUT_S = 5.0  # a Models API that does not answer by then is taken as absent

_log = logging.getLogger(__name__)


async def context_window(client: anthropic.AsyncAnthropic, model: str, settings: Settings) -> int:
    """The context window of `model` on this endpoint, in tokens."""
    if settings.max_context_tokens:
        return settings.max_context_tokens
    from_api = await window_from_models_api(client, model)
    return from_api or settings.context_windows.get(model, DEFAULT_CONTEXT_WINDOW)


async def window_from_models_api(client: anthropic.AsyncAnthropic, model: str) -> int | None:
    """`max_input_tokens` from the Models API; None where the endpoint has no such API or model."""
    try:
        async with asyncio.timeout(MODELS_API_TIMEOUT_S):
            info = await client.models.retrieve(model)
    except (anthropic.APIError, httpx2.HTTPError, TimeoutError) as exc:
        _log.info("no context window for %s from the Models API: %s", model, exc)
        return None
    return info.max_input_tokens or None
