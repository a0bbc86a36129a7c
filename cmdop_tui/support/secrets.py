"""Secret redaction for everything the app stores or exports (transcripts, logs, Markdown).

    redact(text, extra=())        -> str   the text with every secret found replaced
    redact_json(obj, extra=())    -> obj   the same over dicts/lists/strings (a transcript record)
    Redactor(extra)                        both, with the literal secrets prepared once (hot path)

What is replaced, and with what (`MARKER` is ``[REDACTED]``; the full secret never survives):

* ``extra`` literal secrets (the configured API key, ...): every occurrence -> ``[REDACTED]``.
  Literals shorter than `MIN_LITERAL` characters are ignored (they would eat ordinary words).
* keys with a public, fixed type prefix keep only that prefix, so a reader still sees what kind
  of secret was there: ``sk-ant-[REDACTED]`` (Anthropic), ``sk-[REDACTED]`` / ``sk-proj-[REDACTED]``
  (OpenAI-style, 20+ characters with a digit), ``AKIA[REDACTED]`` / ``ASIA[REDACTED]`` (AWS access
  key ids), ``ghp_[REDACTED]`` (also ``gho_ ghu_ ghs_ ghr_ github_pat_``), ``xoxb-[REDACTED]`` (also
  ``xoxp- xoxa- xoxr- xoxs-``), ``https://hooks.slack.com/services/[REDACTED]``, ``AIza[REDACTED]``
  (Google API keys).
* JSON Web Tokens (``eyJ...``.``eyJ...``.``...``) -> ``[REDACTED]``; the credential after
  ``Authorization: Bearer|Basic|Token|Bot`` -> ``Authorization: Bearer [REDACTED]``; the password in
  a URL (``scheme://user:[REDACTED]@host``).
* assignments whose *name* ends in a secret word (password, passwd, passphrase, secret, token,
  api_key/apikey/api-key, access_key, secret_key, private_key, ``_pass``, ``_pwd``; any case, so
  ``DB_PASSWORD``, ``aws_secret_access_key``, ``accessToken``, ``spring.datasource.password``):
  the name is kept and the value masked, in shell/env (``PASSWORD=x``, ``export TOKEN="x"``),
  INI/TOML (``password = x``), YAML (``password: x``), JSON/Python (``"api_key": "x"``, escaped
  JSON too), HTTP headers (``X-Api-Key: x``) and query strings (``?token=x&``). Quotes are kept:
  ``"api_key": "[REDACTED]"``. A YAML/header line (``name: value`` at the start of a line) is masked
  to the end of the line. ``name: value`` elsewhere on a line (prose, logs) is masked only when the
  value looks like a credential (has a digit or symbol, mixed case, or 12+ characters), so
  ``password: click here`` in prose stays. Values that are not secrets stay: empty, ``null``/
  ``None``/``true``/``false``/``~``, ``$VAR``/``${VAR}``/``%VAR%``, ``<placeholder>``, anything
  starting with ``{`` (``{{ template }}``, ``{name}``, a nested object), type annotations
  (``token: str``) and code (``password = getpass()``, ``os.environ["X"]``).
  Names that merely *contain* a word stay: ``max_tokens: 5``, ``token count: 3``, ``PASSWORD_FILE=``.
* private-key blocks (``-----BEGIN ... PRIVATE KEY-----`` to ``-----END ... PRIVATE KEY-----``, or to
  the end of the text when the END line never comes): the body becomes ``[REDACTED]``, the BEGIN
  and END lines stay (a key inside a JSON string keeps its ``\\n`` escapes, so the string stays
  one line).

Properties the tests hold it to: idempotent (``redact(redact(t)) == redact(t)``); linear time (every
pattern anchors at the start of a run and uses possessive quantifiers: about 10 ms per MB of
ordinary text, a few hundred ms for the worst 1 MB hostile input); no false positives on ordinary
text, commit hashes, UUIDs or base64. There is no entropy guessing: an unlabelled random string is
not a secret to this module.

`redact` output is safe to display as it is; the UI needs no separate marker.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["MARKER", "MIN_LITERAL", "Redactor", "redact", "redact_json"]

MARKER = "[REDACTED]"
MIN_LITERAL = 6


@functools.cache
def _pattern(source: str) -> re.Pattern[str]:
    """A pattern below, compiled on its first use: compiling them all costs a few milliseconds
    that a start, which redacts nothing before its first paint, does not pay."""
    return re.compile(source)


# --- keys recognised by their shape ----------------------------------------------------------
# Every pattern starts with a literal (so `re` finds candidates with a fast substring search) and
# then looks behind it to refuse a start inside a run of the key's own characters: only the first
# position of a run is ever tried, and possessive quantifiers never backtrack, so each pass is
# linear in the input.

_PRIVATE_KEY = (
    r"(-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----)"
    r"(?:[\s\S]*?(-----END [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----)|[\s\S]*+)"
)

# (pattern, keep the text of group 1 in front of the marker)
_PREFIXED = (
    r"(sk-ant-)(?<![\w-]sk-ant-)[\w-]{20,}+",  # Anthropic
    # OpenAI-style: 20+ characters with at least one digit (so prose-like words stay)
    r"(sk-(?<![\w-]sk-)(?!ant-)(?:proj-|svcacct-|admin-)?+)(?=[A-Za-z_-]*+[0-9])[\w-]{20,}+",
    r"(AKIA|ASIA)(?<![A-Za-z0-9]AKIA)(?<![A-Za-z0-9]ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])",  # AWS key id
    r"(gh[pousr]_)(?<![\w-]gh[pousr]_)[A-Za-z0-9]{20,}+",  # GitHub
    r"(github_pat_)(?<![\w-]github_pat_)[A-Za-z0-9_]{20,}+",  # GitHub fine-grained
    r"(xox[bpars]-)(?<![\w-]xox[bpars]-)[A-Za-z0-9-]{10,}+",  # Slack
    r"(https://hooks\.slack\.com/(?:services|workflows|triggers)/)[\w/-]{8,}+",  # Slack webhook
    r"(AIza)(?<![\w-]AIza)[\w-]{30,}+",  # Google API key
    r"()eyJ(?<![\w.-]eyJ)[\w-]{8,}+\.eyJ[\w-]{8,}+\.[\w-]*+",  # JSON Web Token
    r"(://[^\s/:@]++:)[^\s/@]++(?=@)",  # scheme://user:PASSWORD@host
)
_PREFIX_REPLACEMENT = r"\1" + MARKER.replace("\\", "\\\\")

_AUTH_HEADER = (
    r"(?i)(authorization[\"']?+[ \t]*+[:=][ \t]*+[\"']?+[ \t]*+(?:bearer|basic|token|bot)[ \t]++)"
    r"[A-Za-z0-9._~+/=-]++"
)

# --- assignments -----------------------------------------------------------------------------

# The name must END with one of these words. Python look-behinds are fixed-width, hence one each.
_WORDS = (
    "password", "passwd", "passphrase", "secret", "token", "apikey", "api_key", "api-key",
    "accesskey", "access_key", "access-key", "secretkey", "secret_key", "privatekey", "private_key",
)  # fmt: skip
_NAME_ENDS = "|".join(
    [f"(?<={re.escape(w)})" for w in _WORDS] + [r"(?<=[_.-]pwd)", r"(?<=[_.-]pass)", r"(?<=(?<![\w.-])pass)"]
)
_SECRET_NAME = rf"(?i)[\w.-]++(?:{_NAME_ENDS})"
# Candidates: the end of a secret word right before an optional quote and `:` or `=`. Searched in
# the lower-cased text; everything else about a candidate is checked on the original.
_CANDIDATE = r"(?:pass(?:word|wd|phrase)?+|secret|token|key|pwd)(?=\\?+[\"']?+[ \t]*+[:=])"
_NAME_RUN = r"[\w.-]*+"  # matched on the reversed text before a candidate
_LINE_LEAD = r"(?:[ \t]++tropxe)?+(?:[ \t]++-)?+[ \t]*+(?:[\n\r]|\Z)"  # reversed too
_NAME_WINDOW = 256  # longer names are looked at by their last 256 characters
_VALUE = (
    r'"(?:[^"\\\n]|\\.)*+"'  # "double quoted"
    r"|'[^'\n]*+'"  # 'single quoted'
    r'|\\"(?:[^"\\\n]|\\[^"\n])*+\\"'  # \"escaped JSON inside a string\"
    r"|[^\s\"'&;,`)}]++"  # bare: up to a space, quote, separator or closing bracket
    r"|\\?+[\"']\S*+"  # a quote that never closes
)
_REST = rf"(?P<close>\\?+[\"']?+)(?P<sep>[ \t]*+[:=](?!=)[ \t]*+)(?P<value>{_VALUE})"
_LINE_END = r"[^\n\r]*+"
_NOT_A_SECRET = (
    r"(?i)(?:|null|none|nil|true|false|undefined|~|\[REDACTED\]|\*+|\.\.\.|…)$"
    r"|\$\{?+[A-Za-z_]\w*+\}?+$|%[A-Za-z_]\w*+%$|<[^<>\n]*+>$"  # references, placeholders
    r"|\{"  # templates ({{ x }}, {x}) and nested objects
    r"|(?:str|bytes|int|bool|SecretStr|None|Optional|Any)(?![\w-])"  # type annotations
    r"|[A-Za-z_][\w.]*+(?:\(|\[(?!REDACTED\]))"  # code: a call or a subscript
)
_QUOTES = ('\\"', "\\'", '"', "'")


def _credential_like(value: str) -> bool:
    """For `name: value` inside prose: a single dictionary word is not taken for a password."""
    if len(value) >= 12 or not value.isalnum():
        return True
    return any(c.isdigit() for c in value) or (value.lower() != value and value.upper() != value)


def _unquote(value: str) -> tuple[str, str]:
    """(quote, inner) of a quoted value; ("", value) when it is not quoted."""
    for quote in _QUOTES:
        if len(value) >= 2 * len(quote) and value.startswith(quote) and value.endswith(quote):
            return quote, value[len(quote) : -len(quote)]
    return "", value


def _lower_same_length(text: str) -> str:
    lowered = text.lower()
    if len(lowered) != len(text):  # only U+0130 grows when lower-cased
        lowered = text.replace("\u0130", "I").lower()
    return lowered


def _redact_assignments(text: str, lowered: str) -> str:
    """Mask the value of every `secret-name = value` / `secret-name: value` (see module doc)."""
    pieces: list[str] = []
    done = 0  # everything before this is decided (copied to `pieces` or about to be)
    copied = 0
    for candidate in _pattern(_CANDIDATE).finditer(lowered):
        name_end = candidate.end()
        if candidate.start() < done:
            continue
        window = max(done, name_end - _NAME_WINDOW)
        name_run = _pattern(_NAME_RUN).match(text[window:name_end][::-1])
        name_start = name_end - (name_run.end() if name_run else 0)
        if _pattern(_SECRET_NAME).fullmatch(text, name_start, name_end) is None:
            continue
        rest = _pattern(_REST).match(text, name_end)
        if rest is None:
            continue
        value_start, value_end = rest.start("value"), rest.end("value")
        before = text[name_start - 1 : name_start] if name_start else ""
        quoted_name = before in ('"', "'") or bool(rest["close"])
        colon = ":" in rest["sep"]
        if colon and not quoted_name:
            lead = text[max(0, name_start - 64) : name_start][::-1]
            found = _pattern(_LINE_LEAD).match(lead)
            if found and (lead[found.end() - 1 : found.end()] in ("\n", "\r") or found.end() == name_start):
                line_end = _pattern(_LINE_END).match(text, value_start)
                value_end = line_end.end() if line_end else len(text)  # YAML/header: the whole line
                while value_end > value_start and text[value_end - 1] in " \t":
                    value_end -= 1
                quoted_name = True  # a line-start `name:` is a key, not prose
        done = value_end
        quote, inner = _unquote(text[value_start:value_end])
        if _pattern(_NOT_A_SECRET).match(inner):
            continue
        if colon and not quoted_name and not quote and not _credential_like(inner):
            continue
        pieces += (text[copied:value_start], quote, MARKER, quote)
        copied = value_end
    if not pieces:
        return text
    pieces.append(text[copied:])
    return "".join(pieces)


def _mask_private_key(match: re.Match[str]) -> str:
    end = match[2]
    if not end:
        return f"{match[1]}\n{MARKER}"
    # Keep the block's own line breaks: a key inside a JSON string ("...\\n...") stays one line.
    body = match[0][len(match[1]) : -len(end)]
    newline = "\n" if "\n" in body else "\\n" if "\\n" in body else " "
    return f"{match[1]}{newline}{MARKER}{newline}{end}"


def _redact_patterns(text: str) -> str:
    if "PRIVATE KEY" in text:
        text = _pattern(_PRIVATE_KEY).sub(_mask_private_key, text)
    for pattern in _PREFIXED:
        text = _pattern(pattern).sub(_PREFIX_REPLACEMENT, text)
    lowered = _lower_same_length(text)
    if "authorization" in lowered:
        text = _pattern(_AUTH_HEADER).sub(_PREFIX_REPLACEMENT, text)
        lowered = _lower_same_length(text)
    return _redact_assignments(text, lowered)


class Redactor:
    """Redaction with a fixed set of literal secrets, prepared once. Safe to share between threads.

    `text(s)` is `redact(s, extra)`; `json(obj)` is `redact_json(obj, extra)`.
    """

    __slots__ = ("literals",)

    def __init__(self, extra: Iterable[str | None] = ()) -> None:
        unique = {s for s in extra if s and len(s) >= MIN_LITERAL and s not in MARKER}
        # Longest first, so a secret that contains another is replaced whole.
        self.literals: tuple[str, ...] = tuple(sorted(unique, key=len, reverse=True))

    def text(self, text: str) -> str:
        for literal in self.literals:
            if literal in text:
                text = text.replace(literal, MARKER)
        return _redact_patterns(text)

    def json(self, obj: Any, default: Callable[[Any], Any] | None = None) -> Any:
        """A copy of `obj` with every string redacted (dict keys are kept).

        A string under a key whose name ends in a secret word (``{"DB_PASSWORD": "x"}``) is masked
        whole. Opaque API data is left alone: a ``thinking`` block's ``signature``, a
        ``redacted_thinking`` block and a ``base64`` source (image/document data).
        Numbers, booleans and None are returned as they are; any other object is passed to
        `default` (as with ``json.dumps``; e.g. an SDK object to its dict) and the result walked,
        or returned as it is when there is no `default`.
        """
        return _walk(obj, self.text, default)


_PLAIN = (int, float, bool, type(None))


def _walk(obj: Any, redact_text: Callable[[str], str], default: Callable[[Any], Any] | None) -> Any:
    if isinstance(obj, str):
        return redact_text(obj)
    if isinstance(obj, dict):
        kind = obj.get("type")
        if kind == "redacted_thinking" or kind == "base64":
            return dict(obj)
        out = {}
        for key, value in obj.items():
            if kind == "thinking" and key == "signature":
                out[key] = value
            elif isinstance(value, str) and isinstance(key, str) and _is_secret_name(key):
                out[key] = value if _pattern(_NOT_A_SECRET).match(value) else MARKER
            else:
                out[key] = _walk(value, redact_text, default)
        return out
    if isinstance(obj, list | tuple):
        return [_walk(item, redact_text, default) for item in obj]
    if default is None or isinstance(obj, _PLAIN):
        return obj
    return _walk(default(obj), redact_text, default)


@functools.lru_cache(maxsize=4096)
def _is_secret_name(key: str) -> bool:
    return _pattern(_SECRET_NAME).fullmatch(key) is not None


def redact(text: str, extra: Iterable[str | None] = ()) -> str:
    """`text` with every secret found replaced (see the module docstring for what and how)."""
    return Redactor(extra).text(text)


def redact_json(obj: Any, extra: Iterable[str | None] = (), default: Callable[[Any], Any] | None = None) -> Any:
    """A redacted copy of a JSON-like value (see `Redactor.json`)."""
    return Redactor(extra).json(obj, default)


CREDENTIAL_ENV = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")


def configured_secrets(environ: Mapping[str, str] | None = None) -> list[str]:
    """The credentials in use (from the environment), which no file, export or screen may show."""
    env = os.environ if environ is None else environ
    return [value for name in CREDENTIAL_ENV if (value := env.get(name))]


_display: Redactor | None = None


def mask(text: str) -> str:
    """`text` as the screen may show it: every secret masked (the configured ones included)."""
    global _display
    if _display is None:
        _display = Redactor(configured_secrets())
    return _display.text(text)
