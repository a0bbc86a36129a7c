"""What can stop a session from opening, importable without loading the model SDK."""

from __future__ import annotations

from cmdop_tui.support.secrets import CREDENTIAL_ENV

KEY_ENV, TOKEN_ENV = CREDENTIAL_ENV  # the API key, or a bearer token
BASE_URL_ENV = "ANTHROPIC_BASE_URL"


class MissingKeyError(Exception):
    """No credentials in the environment."""

    def __init__(self) -> None:
        super().__init__(
            f"no API key: set {KEY_ENV} (or {TOKEN_ENV}); for another Anthropic-compatible "
            f"endpoint also set {BASE_URL_ENV}; or --local for a local model with no key"
        )
