"""How MCP tools are named for the model: `mcp__SERVER__TOOL`, within the pattern every endpoint
we talk to accepts (`^[a-zA-Z0-9_-]{1,64}$`: some allow 128, some 64), unique, and the same at
every start and reconnection.

Anything else in a server's or a tool's name becomes `_` (a server's runs of `_` collapse to one,
so `mcp__SERVER__` always ends where the server's name does: a rule `mcp__SERVER` covers that
server alone). A name is made from the names alone, never from the order servers or tools come
in: a server's part past 24 characters, or a whole name past 64, keeps its start and gets a
short digest of the original; two names that would be spelled the same are told apart by a
digest too, the one already spelled so (`a_b` beside `a.b`) keeping its name.

A shortened name keeps its full spelling (`McpName.full`): permission rules written against
it still apply (`Tool.aliases`).
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

PREFIX = "mcp__"
MAX_NAME = 64
MAX_SERVER_KEY = 24
DIGEST = 6  # hex characters of the digest a shortened name ends with
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_RUNS = re.compile(r"_{2,}")


@dataclass(frozen=True)
class McpName:
    """A tool's name for the model, and its full spelling when that is longer (else None)."""

    name: str
    full: str | None = None


def _digest(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:DIGEST]


def _shortened(head: str, tail: str, limit: int, original: str) -> str:
    """`head` and as much of `tail` as leaves room within `limit` for `_` and the digest of
    `original`."""
    return head + tail[: max(0, limit - len(head) - DIGEST - 1)].rstrip("_") + "_" + _digest(original)


def spelled_server(name: str) -> str:
    """A server's name in the safe characters, however long."""
    return _RUNS.sub("_", _UNSAFE.sub("_", name)).strip("_") or "server"


def server_key(name: str) -> str:
    """A server's name as it appears in its tools' names (at most MAX_SERVER_KEY characters)."""
    spelled = spelled_server(name)
    return spelled if len(spelled) <= MAX_SERVER_KEY else _shortened("", spelled, MAX_SERVER_KEY, name)


def unique_keys(names: Iterable[str]) -> dict[str, str]:
    """Each server name to its key, no two the same: where two names are spelled alike
    (`my.db`, `my_db`), the one spelled so already keeps it and the others get a digest."""
    names = list(dict.fromkeys(names))
    keys = {name: server_key(name) for name in names}
    counts = Counter(keys.values())
    for name in names:
        if counts[keys[name]] > 1 and keys[name] != name:
            keys[name] = _shortened("", keys[name], MAX_SERVER_KEY, name)
    used: set[str] = set()
    for name in names:  # two digests alike: never expected, but a key must be unique
        key, count = keys[name], 1
        while key in used:
            count += 1
            key = f"{keys[name][: MAX_SERVER_KEY - 3]}_{count}"
        used.add(key)
        keys[name] = key
    return keys


def tool_names(server: str, key: str, tools: Sequence[str]) -> dict[str, McpName]:
    """Each of a server's tools to its name for the model; `key` is the server's `server_key`
    among the session's servers, `server` its name (for the full spellings)."""
    head = f"{PREFIX}{key}__"
    safe = {tool: _UNSAFE.sub("_", tool) or "_" for tool in tools}
    counts = Counter(safe.values())
    named: dict[str, McpName] = {}
    for tool in tools:
        clash = counts[safe[tool]] > 1 and safe[tool] != tool
        name = head + safe[tool]
        if clash or len(name) > MAX_NAME:
            name = _shortened(head, safe[tool], MAX_NAME, tool)
        full = f"{PREFIX}{spelled_server(server)}__{safe[tool]}"
        named[tool] = McpName(name, full if full != name and not clash else None)
    return named


def extra_name(key: str, base: str, taken: Iterable[str]) -> str:
    """The name of a tool of ours for a server (`read_resource`): `mcp__KEY__BASE`, or with a
    digest when one of the server's own tools has that name (`taken`)."""
    name = f"{PREFIX}{key}__{base}"
    return _shortened(f"{PREFIX}{key}__", base, MAX_NAME, f"cmdop:{base}") if name in set(taken) else name
