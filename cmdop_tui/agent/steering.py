"""The steering inbox: what the user sends while a run goes on, for the run's next step.

`steer(text)` may be called from any thread (a library user's, the app's) while the loop runs on
its own. The loop takes everything waiting at its next step, without stopping:

* after a step's tool calls are answered, the texts join the user message that holds their
  results, after them (the API wants tool results first in that message);
* after a reply with no tool calls (the run would end there), they become the next user message
  and the run goes on.

Each text delivered is told as a `SteeringDelivered` event. Nothing is dropped: what a Stop (or
a run that ended before its next step) leaves undelivered stays here, for the surface to show
(`pending`) or take back (`take_all`); left here, it goes with the next run's prompt, after it.
"""

from __future__ import annotations

import threading

from cmdop_tui.agent.events import Event, SteeringDelivered
from cmdop_tui.agent.history import Conversation
from cmdop_tui.agent.llm import EventSink
from cmdop_tui.agent.messages import Block, text_block


class SteeringInbox:
    """Texts waiting for the running turn's next step, oldest first (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: list[str] = []

    def steer(self, text: str) -> bool:
        """Queue `text` for the next step; False (nothing queued) when it is blank."""
        if not text.strip():
            return False
        with self._lock:
            self._waiting.append(text)
        return True

    def pending(self) -> list[str]:
        """What waits, oldest first (left in the inbox)."""
        with self._lock:
            return list(self._waiting)

    def take_all(self) -> list[str]:
        """What waits, oldest first, taken out of the inbox."""
        with self._lock:
            taken, self._waiting = self._waiting, []
        return taken

    def deliver(self, conversation: Conversation, emit: EventSink) -> bool:
        """Put what waits into the conversation as the user's text (after the tool results of the
        last user message, or as a new user message) and tell it; False when nothing waited."""
        texts = self.take_all()
        if not texts:
            return False
        blocks: list[Block] = [text_block(text) for text in texts]
        conversation.append_user(blocks)
        events: list[Event] = [SteeringDelivered(text=text) for text in texts]
        for event in events:
            emit(event)
        return True
