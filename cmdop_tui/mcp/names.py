"""How MCP tools are named for the model: `mcp__SERVER__TOOL`, within what the Messages API
accepts (`^[a-zA-Z0-9_-]{1,128}$`).

Anything else in a server's or a tool's name becomes `_` (a server's runs of `_` collapse to one,
so `mcp__SERVER__` always ends where the server's name does: a rule `mcp__SERVER` covers that
server alone). A name too long, or one that two tools would share once spelled so, keeps its
start and gets a short hash of the original.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

PREFIX = "mcp__"
MAX_NAME = 128
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_RUNS = re.compile(r"_{2,}")


def server_key(name: str) -> str:
    """A server's name as it appears in its tools' names."""
    key = _RUNS.sub("_", _UNSAFE.sub("_", name)).strip("_")
    return (key or "server")[:40]


def _digest(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:8]


def tool_name(server: str, tool: str, taken: Iterable[str] = ()) -> str:
    """`mcp__SERVER__TOOL` for the model; `server` is already a `server_key`. A name in `taken`
    (another tool of the server spelled the same) gets a hash of the original."""
    head = f"{PREFIX}{server}__"
    safe = _UNSAFE.sub("_", tool) or "_"
    name = head + safe
    if len(name) > MAX_NAME or name in set(taken):
        name = head + safe[: MAX_NAME - len(head) - 9] + "_" + _digest(tool)
    return name


def unique_keys(names: Iterable[str]) -> dict[str, str]:
    """Each server name to its key, no two the same (`my.db` and `my_db`: `my_db`, `my_db_2`)."""
    keys: dict[str, str] = {}
    used: set[str] = set()
    for name in names:
        key = base = server_key(name)
        count = 1
        while key in used:
            count += 1
            key = f"{base}_{count}"
        used.add(key)
        keys[name] = key
    return keys
