"""The model client: the official SDK, pointed at Anthropic, any compatible endpoint, or a local model."""

from __future__ import annotations

import os
from collections.abc import Mapping
from urllib.parse import urlsplit

import anthropic

from cmdop_tui.config.settings import Settings, SettingsError
from cmdop_tui.session.errors import BASE_URL_ENV, KEY_ENV, TOKEN_ENV, MissingKeyError
from cmdop_tui.session.local_model import LocalModelServer


def make_client(
    settings: Settings, environ: Mapping[str, str] = os.environ, *, local: LocalModelServer | None = None
) -> anthropic.AsyncAnthropic:
    """The SDK client, its own retries off (tenacity owns retries). With a local model server it
    talks to that, and needs no key."""
    if local is not None:
        return anthropic.AsyncAnthropic(api_key="local-model", base_url=local.url, max_retries=0)
    key, token = environ.get(KEY_ENV), environ.get(TOKEN_ENV)
    if not key and not token:
        raise MissingKeyError()
    return anthropic.AsyncAnthropic(
        api_key=key or None,
        auth_token=None if key else token,
        base_url=checked_base_url(settings.base_url or environ.get(BASE_URL_ENV) or None),
        max_retries=0,
    )


def checked_base_url(url: str | None) -> str | None:
    """`url` if requests can go to it; else a SettingsError saying what to write (a URL without
    http:// or https:// would otherwise fail every request, retried, for many seconds)."""
    if url is None:
        return None
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        hint = f"; did you mean https://{url.strip()}?" if not parts.scheme or "://" not in url else ""
        raise SettingsError(f"the model endpoint {url!r} (base_url or {BASE_URL_ENV}) is not an http(s) URL{hint}")
    return url.strip()
