"""The running sum of a run's or a session's token usage.

A module of its own, apart from the loop's events (agent/events.py): the status line holds one
from the app's first frame, and the events are loaded with the session, after it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


class TokenCounts(Protocol):
    """What one response used (agent/events.py's Usage event)."""

    @property
    def input_tokens(self) -> int: ...

    @property
    def output_tokens(self) -> int: ...

    @property
    def cache_read_input_tokens(self) -> int: ...

    @property
    def cache_creation_input_tokens(self) -> int: ...


@dataclass
class UsageTotals:
    """The running sum of Usage events (a run's, a session's)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0

    def add(self, usage: TokenCounts) -> None:
        self.input_tokens += usage.input_tokens
        self.output_tokens += usage.output_tokens
        self.cache_read_input_tokens += usage.cache_read_input_tokens
        self.cache_creation_input_tokens += usage.cache_creation_input_tokens

    @property
    def total_input_tokens(self) -> int:
        return self.input_tokens + self.cache_read_input_tokens + self.cache_creation_input_tokens
