"""The settings file's keys, declared once: for each key the TOML types it takes, its bounds or
choices and what a good value is (the words the error messages use), table by table.

One generic check (`TableKeys.check`) reads these declarations, so a new key is one line here
plus its field in config/model.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cmdop_tui.config.model import SettingsError
from cmdop_tui.machines.sandbox import MODES

MCP_TABLES = ("mcp", "mcp_servers", "mcpServers")  # [mcp.NAME]; the other spellings other tools use


@dataclass(frozen=True)
class Key:
    """One key: the TOML types it takes (none: any value, read as text or checked by its table's
    own reader), bounds for numbers, choices for text, the type of a list's items."""

    name: str
    types: tuple[type, ...] = ()
    what: str = ""  # a good value, as the error message says it
    low: float | None = None  # inclusive
    high: float | None = None  # inclusive
    positive: bool = False
    choices: tuple[str, ...] = ()
    items: type | None = None

    def accepts(self, value: Any) -> bool:
        if self.choices:
            return isinstance(value, str) and value in self.choices
        if not self.types:
            return True
        if isinstance(value, bool) and bool not in self.types:
            return False  # TOML's true is no number
        if not isinstance(value, self.types):
            return False
        if self.items is not None and not (
            isinstance(value, list) and all(isinstance(item, self.items) for item in value)
        ):
            return False
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return (
                (self.low is None or value >= self.low)
                and (self.high is None or value <= self.high)
                and (not self.positive or value > 0)
            )
        return True


def typed(name: str, kind: type) -> Key:
    """A key that takes one type, named in messages as Python names it ('int', 'str', 'list')."""
    return Key(name, (kind,), kind.__name__)


@dataclass(frozen=True)
class TableKeys:
    """The keys one table takes, and how its messages read (`place` names the file and table)."""

    keys: tuple[Key, ...]
    unknown: str  # with {place}, {key} and {known}
    wrong: str  # with {place}, {key} and {what}

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(key.name for key in self.keys)

    def check(self, table: Mapping[str, Any], place: str, known: str | None = None) -> None:
        """Refuse an unknown key first, then the first value its declaration does not accept."""
        for name in table:
            if name not in self.names:
                listed = known if known is not None else ", ".join(self.names)
                raise SettingsError(self.unknown.format(place=place, key=name, known=listed))
        for key in self.keys:
            if key.name in table and not key.accepts(table[key.name]):
                raise SettingsError(self.wrong.format(place=place, key=key.name, what=key.what))


_POSITIVE = "a positive number"
_TRUE_OR_FALSE = "true or false"
_TOKENS = "a number of tokens (>= 256)"

TOP_LEVEL = TableKeys(
    (
        Key("agent"),  # a profile's name, or an [agent] table of overrides for the default profile
        *(Key(table) for table in ("agents", "aliases", "prices", "models", "machines", "context", "sandbox")),
        *(Key(table) for table in ("groups", "inventory", *MCP_TABLES)),
        Key("max_budget_usd", (int, float), _POSITIVE, positive=True),
        Key("approval_timeout_s", (int, float), _POSITIVE, positive=True),
        Key("low_bandwidth", (bool,), _TRUE_OR_FALSE),
        *(Key(text) for text in ("router_model", "base_url", "theme", "permission_mode", "stream")),
        *(Key(path) for path in ("ssh_config", "local_model")),
    ),
    unknown="{place}: unknown setting {key!r} (known: {known})",
    wrong="{place}: {key!r} must be {what}",
)
TOP_LEVEL_KEYS = frozenset(TOP_LEVEL.names)

PROFILE = TableKeys(
    (
        typed("model", str),
        typed("max_turns", int),
        typed("max_tokens", int),
        typed("loop", bool),
        typed("loop_message", str),
        typed("loop_breakers", list),
        typed("max_loops", int),
        typed("allow_tags", list),
        typed("hidden_tools", list),
        typed("instructions", str),
        typed("parallel_tools", bool),
        typed("thinking_budget", int),
        typed("sandbox", str),
        typed("sandbox_writable", list),
    ),
    unknown="{place}: unknown key {key!r}",
    wrong="{place}: {key!r} must be {what}",
)

MACHINE = TableKeys(
    (
        typed("host", str),
        typed("user", str),
        typed("port", int),
        typed("tags", list),
        typed("cmdop", str),
        typed("writable", list),
    ),
    unknown="{place}: unknown key {key!r} (known: {known})",
    wrong="{place}: {key!r} must be {what}",
)

_SECTION_UNKNOWN = "{place} has no setting {key!r}"

CONTEXT = TableKeys(
    (
        Key("compact_at", (int, float), "a share of the window from 0.3 to 0.95", low=0.3, high=0.95),
        Key("tail_tokens", (int,), _TOKENS, low=256),
        Key("summary_tokens", (int,), _TOKENS, low=256),
        Key("summary_model"),
    ),
    unknown=_SECTION_UNKNOWN,
    wrong="{place} {key} must be {what}",
)

SANDBOX = TableKeys(
    (
        Key("mode", what=f"one of {', '.join(MODES)}", choices=MODES),
        Key("writable", (list,), "a list of paths", items=str),
        Key("network", (bool,), _TRUE_OR_FALSE),
    ),
    unknown=_SECTION_UNKNOWN,
    wrong="{place} {key} must be {what}",
)

INVENTORY = TableKeys(
    (Key("ansible", (str,), "a path"),),
    unknown=_SECTION_UNKNOWN + " (known: {known})",
    wrong="{place} {key!r} must be {what}",
)
