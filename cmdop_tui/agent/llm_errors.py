"""Failed model calls: which are worth retrying, and each said in one line for a person.

The endpoint's own word is used where it gives one (the API's `error.message`, another server's
`message` or `detail`, an HTML page's title), whitespace folded and cut at ERROR_MESSAGE_CHARS.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import anthropic
import httpx2

RETRYABLE_STREAM_ERROR_TYPES = frozenset({"overloaded_error", "api_error"})


class DeadStreamError(Exception):
    """The stream went quiet for longer than the idle timeout, or ended before message_stop."""


class InvalidReplyError(Exception):
    """The endpoint answered something that is not a Messages API reply."""


def is_retryable(exc: BaseException) -> bool:
    if isinstance(exc, (anthropic.RateLimitError, anthropic.InternalServerError)):
        return True
    if isinstance(exc, anthropic.APIStatusError):
        # An `event: error` inside a 200 stream: the SDK raises it with status 200.
        return exc.status_code == 200 and _error_type(exc) in RETRYABLE_STREAM_ERROR_TYPES
    return isinstance(exc, (anthropic.APIConnectionError, httpx2.TransportError, DeadStreamError))


def _error_type(exc: anthropic.APIStatusError) -> str | None:
    body = exc.body
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and isinstance(error.get("type"), str):
            return str(error["type"])
    kind = getattr(exc, "type", None)
    return kind if isinstance(kind, str) else None


ERROR_MESSAGE_CHARS = 200  # an endpoint's error text is cut to this: one line, never a page
_HTML_TITLE = re.compile(r"<(title|h1)[^>]*>(.*?)</\1>", re.IGNORECASE | re.DOTALL)
_HTML_TAG = re.compile(r"<[^>]+>")


def _error_message(exc: anthropic.APIStatusError) -> str:
    """The endpoint's own word on the error, as one line: the API's `error.message`, another
    server's `message`/`detail`, an HTML page's title, else its text, whitespace folded and cut."""
    body = exc.body
    if isinstance(body, dict):
        error = body.get("error")
        found = error.get("message") if isinstance(error, dict) else error
        found = found or body.get("message") or body.get("detail")
        if isinstance(found, str) and found.strip():
            return _one_line(found)
    text = body if isinstance(body, str) else exc.message  # the SDK keeps a body that is not JSON as text
    if "<" in text and (title := _HTML_TITLE.search(text)) is not None:
        text = title.group(2)
    return _one_line(_HTML_TAG.sub(" ", text) or exc.message)


def _one_line(text: str) -> str:
    folded = " ".join(text.split())
    return folded if len(folded) <= ERROR_MESSAGE_CHARS else folded[: ERROR_MESSAGE_CHARS - 1] + "…"


def retry_after(exc: BaseException | None) -> float | None:
    if not isinstance(exc, anthropic.APIStatusError):
        return None
    value = exc.response.headers.get("retry-after")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


_STATED_LIMIT = re.compile(r"(\d+)\s*(?:tokens)?\s*>\s*(\d+)")
_OVERFLOW_WORDS = ("prompt is too long", "context limit", "context length", "context window", "too many tokens")


@dataclass(frozen=True)
class ContextOverflow:
    """The endpoint refused a request as too big for the model's context (or its request size)."""

    tokens: int | None = None  # what it counted, when it says
    maximum: int | None = None  # the model's limit, when it says


def context_overflow(exc: BaseException) -> ContextOverflow | None:
    """A `prompt is too long` answer (or HTTP 413, or another endpoint's wording of it), or None."""
    if not isinstance(exc, anthropic.APIStatusError):
        return None
    if exc.status_code == 413:
        return ContextOverflow()
    if exc.status_code != 400:
        return None
    message = _error_message(exc)
    if not any(words in message.lower() for words in _OVERFLOW_WORDS):
        return None
    stated = _STATED_LIMIT.search(message)
    return ContextOverflow(int(stated[1]), int(stated[2])) if stated else ContextOverflow()


def request_too_large(exc: BaseException) -> bool:
    """HTTP 413: the request's bytes are over what the endpoint takes (not its token window)."""
    return isinstance(exc, anthropic.APIStatusError) and exc.status_code == 413


def server_compaction_refused(exc: BaseException) -> bool:
    """Whether the endpoint refused a request for its server-side compaction (the beta field or
    header), so that it can be sent again without."""
    if not isinstance(exc, anthropic.BadRequestError):
        return False
    message = _error_message(exc).lower()
    return any(words in message for words in ("context_management", "anthropic-beta", "compact_2026", "compact-2026"))


def describe_error(exc: BaseException) -> tuple[str, str]:
    """(code, one-line message for a person) for a failed model call."""
    if isinstance(exc, anthropic.AuthenticationError):
        return "auth", f"the API key was refused (401: {_error_message(exc)}); check ANTHROPIC_API_KEY"
    if isinstance(exc, anthropic.PermissionDeniedError):
        return "permission", f"the API refused access (403: {_error_message(exc)})"
    if isinstance(exc, anthropic.NotFoundError):
        return "not_found", f"not found (404: {_error_message(exc)}); check the model name and ANTHROPIC_BASE_URL"
    if isinstance(exc, anthropic.RateLimitError):
        return "rate_limited", f"rate limited (429: {_error_message(exc)}), still after retries"
    if isinstance(exc, anthropic.APIStatusError):
        code = "overloaded" if _error_type(exc) == "overloaded_error" else "api_error"
        if isinstance(exc, anthropic.BadRequestError):
            code = "bad_request"
        return code, f"API error ({exc.status_code} {_error_type(exc) or ''}: {_error_message(exc)})".replace(" :", ":")
    if isinstance(exc, anthropic.APITimeoutError):
        return "timeout", "the model endpoint did not answer in time"
    if isinstance(exc, anthropic.APIConnectionError):
        cause = exc.__cause__ or exc
        return "connection", f"could not reach the model endpoint ({type(cause).__name__}: {cause})"
    if isinstance(exc, InvalidReplyError):
        return "invalid_reply", str(exc)
    if isinstance(exc, json.JSONDecodeError):
        return (
            "invalid_reply",
            f"the endpoint's reply is not valid JSON ({exc.msg} at character {exc.pos}); check ANTHROPIC_BASE_URL",
        )
    if isinstance(exc, UnicodeDecodeError):
        return (
            "invalid_reply",
            f"the endpoint's reply is not UTF-8 text ({exc.reason} at byte {exc.start}); check ANTHROPIC_BASE_URL",
        )
    if isinstance(exc, DeadStreamError):
        return "dead_stream", f"the reply stream stalled: {exc}"
    if isinstance(exc, httpx2.TransportError):
        return "connection", f"the connection to the model endpoint broke ({type(exc).__name__}: {exc})"
    return "internal", f"{type(exc).__name__}: {exc}"


def page_text(body: str) -> str:
    """A response body as one line: an HTML page's title, else its text without tags."""
    if "<" in body and (title := _HTML_TITLE.search(body)) is not None:
        body = title.group(2)
    return _one_line(_HTML_TAG.sub(" ", body))
