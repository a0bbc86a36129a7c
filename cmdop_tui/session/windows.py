"""What the endpoint says of a model: how many tokens it reads at most (its context window),
whether it compacts a conversation itself (server-side compaction, `compact_20260112`), and
whether it sees images.

The window, in order: `--max-context-tokens` (it overrides); the endpoint's Models API
(`max_input_tokens`), where it has one; `[models."ID"] context_window` in the settings; else
DEFAULT_CONTEXT_WINDOW. Server-side compaction only where the Models API says so.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

import anthropic
import httpx2

from cmdop_tui.config.settings import Settings
from cmdop_tui.session.local_model import LOCAL_MODEL_PREFIX

DEFAULT_CONTEXT_WINDOW = 200_000
MODELS_API_TIMEOUT_S = 5.0  # a Models API that does not answer by then is taken as absent

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ModelFacts:
    window: int  # tokens
    server_compaction: bool = False  # the API compacts for us (beta context_management)
    image_input: bool = True  # the model sees images in tool results


async def model_facts(client: anthropic.AsyncAnthropic, model: str, settings: Settings) -> ModelFacts:
    """The context window of `model` on this endpoint, and whether it compacts server-side."""
    info = await _model_info(client, model)
    from_api = getattr(info, "max_input_tokens", None) or None
    window = settings.run.max_context_tokens or from_api or settings.context_windows.get(model, DEFAULT_CONTEXT_WINDOW)
    return ModelFacts(window, server_compaction=_compacts(info), image_input=_takes_images(info, model))


async def context_window(client: anthropic.AsyncAnthropic, model: str, settings: Settings) -> int:
    """The context window of `model` on this endpoint, in tokens."""
    return (await model_facts(client, model, settings)).window


async def _model_info(client: anthropic.AsyncAnthropic, model: str) -> Any:
    """The Models API's `ModelInfo`; None where the endpoint has no such API or model."""
    try:
        async with asyncio.timeout(MODELS_API_TIMEOUT_S):
            return await client.models.retrieve(model)
    except (anthropic.APIError, httpx2.HTTPError, TimeoutError) as exc:
        _log.info("nothing about %s from the Models API: %s", model, exc)
        return None


def _takes_images(info: Any, model: str) -> bool:
    """Whether the model sees images: not a local one (llama.cpp's text models); else as the
    Models API says, and yes where it says nothing (every Claude model does)."""
    if model.startswith(LOCAL_MODEL_PREFIX):
        return False
    support = getattr(getattr(info, "capabilities", None), "image_input", None)
    return bool(getattr(support, "supported", True))


def _compacts(info: Any) -> bool:
    """Whether the model supports the `compact_20260112` context-management edit."""
    management = getattr(getattr(info, "capabilities", None), "context_management", None)
    strategy = getattr(management, "compact_20260112", None)
    return bool(getattr(management, "supported", False) and getattr(strategy, "supported", False))
