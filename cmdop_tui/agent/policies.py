"""How hard to try: the retry and streaming policies of the model call.

Plain settings, importable without loading the model SDK (the TUI starts before it loads).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 6
    initial_s: float = 0.5
    max_s: float = 32.0
    jitter_s: float = 0.25

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Backoff before the attempt after `attempt` (1-based): 0.5, 1, 2, 4, 8 ... capped."""
        backoff: float = min(self.initial_s * 2 ** (attempt - 1) + random.uniform(0, self.jitter_s), self.max_s)
        if retry_after is not None:
            backoff = max(backoff, min(retry_after, self.max_s))
        return backoff


@dataclass(frozen=True)
class StreamPolicy:
    enabled: bool = True
    # After the first event, this long without one is a dead stream (the API's pings are not
    # events the SDK hands on, so a reply that pauses to think must fit in it).
    idle_timeout_s: float = 10.0
    stall_grace_s: float = 1.0  # after the idle timer, what arrives this soon still counts (a stopped process)
    first_event_timeout_s: float = 120.0
    # A model call with nothing from the endpoint this long in all, retries included, gives up
    # (the clock starts again whenever events arrive: a long reply that breaks is still retried).
    silence_deadline_s: float = 115.0  # with the time to connect, an error within 120 s
    waiting_notice_s: float = 9.0  # no first event this long: said (the Waiting event), within 10 s
    near_deadline_s: float = 30.0  # a dead stream with less time left falls back to one plain call
    request_timeout_s: float = 600.0
    # Per model id (`[models."ID"] idle_timeout_s`): an endpoint on a CPU pauses longer under load.
    idle_timeouts: Mapping[str, float] = field(default_factory=dict)

    def idle_timeout_for(self, model: str) -> float:
        """How long a stream of `model` may go quiet after its first event."""
        return self.idle_timeouts.get(model, self.idle_timeout_s)
