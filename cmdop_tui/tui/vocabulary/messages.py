"""Agent events as Textual messages.

The agent loop knows nothing of Textual; the app's event sink wraps each loop event in the message
below and posts it to the widgets it concerns, where handlers such as `on_agent_token_received`
react. The messages do not bubble: each widget that should see one is sent its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Generic, TypeVar

from textual.message import Message

if TYPE_CHECKING:  # named, not loaded: the loop's events load with the session, after the first paint
    from cmdop_tui.agent import events as ev
    from cmdop_tui.tui.vocabulary.tool_records import ToolRecord  # with the first tool call

EventT = TypeVar("EventT", bound="ev.Event")


class AgentMessage(Message, Generic[EventT], bubble=False):
    """A loop event delivered to a widget."""

    def __init__(self, event: EventT) -> None:
        super().__init__()
        self.event = event


class TextBatch:
    """Text fragments gathered while their message waits in the queue.

    A fast stream produces fragments faster than a screen can show them; instead of one message
    per fragment, the sink appends to the batch of the message not yet handled, and the handler
    takes everything at once. There is one consumer per batch (the chat log).
    """

    def __init__(self, first: str) -> None:
        self.parts = [first]
        self.taken = False

    def take(self) -> str:
        self.taken = True
        return "".join(self.parts)


class ToolMessage(AgentMessage[EventT]):
    """A tool event with the UI's record of that call (shared by the chat and the panel)."""

    def __init__(self, event: EventT, record: ToolRecord) -> None:
        super().__init__(event)
        self.record = record


class BatchedMessage(AgentMessage[EventT]):
    def __init__(self, event: EventT, batch: TextBatch) -> None:
        super().__init__(event)
        self.batch = batch


class ToolOutputRequested(Message):
    """The user asked to see the whole output of a tool call (from its card or its panel row)."""

    def __init__(self, record: ToolRecord) -> None:
        super().__init__()
        self.record = record


class ToolOutputCopyRequested(Message):
    """The user asked to copy the whole output of a tool call to the clipboard."""

    def __init__(self, record: ToolRecord) -> None:
        super().__init__()
        self.record = record


class Agent:
    """Namespace for the messages, so handlers read `on_agent_<what happened>`."""

    class TurnStarted(AgentMessage["ev.TurnStarted"]): ...

    class TokenReceived(BatchedMessage["ev.Token"]): ...

    class ThinkingReceived(BatchedMessage["ev.Thinking"]): ...

    class Retrying(AgentMessage["ev.Retrying"]): ...

    class Waiting(AgentMessage["ev.Waiting"]): ...

    class ToolStarted(ToolMessage["ev.ToolStart"]): ...

    class ToolProgressed(ToolMessage["ev.ToolProgress"]): ...

    class ToolEnded(ToolMessage["ev.ToolEnd"]): ...

    class ToolNested(ToolMessage["ev.ToolNested"]): ...

    class UsageReported(AgentMessage["ev.Usage"]): ...

    class LoopContinued(AgentMessage["ev.LoopContinued"]): ...

    class BudgetWarned(AgentMessage["ev.BudgetWarning"]): ...

    class CompactionStarted(AgentMessage["ev.CompactionStarted"]): ...

    class Compacted(AgentMessage["ev.Compacted"]): ...

    class HookRan(AgentMessage["ev.HookRan"]): ...

    class CompactionFailed(AgentMessage["ev.CompactionFailed"]): ...

    class Finished(AgentMessage["ev.Final"]): ...

    class Failed(AgentMessage["ev.Error"]): ...

    class Cancelled(AgentMessage["ev.Cancelled"]): ...

    class Steered(AgentMessage["ev.SteeringDelivered"]): ...
