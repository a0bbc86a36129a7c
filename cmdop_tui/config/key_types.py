"""How one key of the settings file is declared (`Key`) and how a table's keys are checked
(`TableKeys`); the declarations themselves are config/keys.py."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cmdop_tui.config.model import SettingsError


@dataclass(frozen=True)
class Key:
    """One key: the TOML types it takes (none: any value, read as text or checked by its table's
    own reader), bounds for numbers, choices for text, the type of a list's items; its help,
    and an example shown instead of the default (when the default is none or says little)."""

    name: str
    types: tuple[type, ...] = ()
    what: str = ""  # a good value, as the error message says it
    low: float | None = None  # inclusive
    high: float | None = None  # inclusive
    positive: bool = False
    choices: tuple[str, ...] = ()
    items: type | None = None
    help: str = ""
    example: Any = None

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


def typed(name: str, kind: type, help: str = "", example: Any = None) -> Key:
    """A key that takes one type, named in messages as Python names it ('int', 'str', 'list')."""
    return Key(name, (kind,), kind.__name__, help=help, example=example)


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
