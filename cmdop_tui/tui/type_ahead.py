"""Type-ahead and steering: what the user sends while a turn runs. Nothing typed is lost.

* Enter queues the message (shown above the prompt, widgets/queued_messages.py). When the turn
  ends by itself the queued messages are sent in order, one turn each, as Codex does; after a
  Stop they stay, and Enter at an empty prompt sends the next.
* ctrl+s sends it as steering: the session gives it to the running turn, which delivers it at
  its next step without stopping (agent/steering.py). It waits in the list until the model gets
  it; then the chat shows it as the user's, marked as steering. Steering no step took (a Stop,
  or the turn ended first) becomes a queued message.
* At an empty prompt, Up takes the newest queued message back into the prompt to edit; ctrl+d
  drops it.
* Quitting with messages queued asks first (the app's quit question says how many).

`TypeAheadKeys` is mixed into the app: the handlers of the prompt's messages and of a steering
delivered, which hand everything to `TypeAhead`. It keeps no state of its own: the queue is the
widget's, the steering waiting is the runner's inbox, a Stop is the UI cancel signal's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, cast

from textual.app import App

from cmdop_tui.tui.commands import parse_slash
from cmdop_tui.tui.vocabulary.messages import Agent
from cmdop_tui.tui.widgets.chat_log import ChatLog
from cmdop_tui.tui.widgets.prompt_input import PromptInput
from cmdop_tui.tui.widgets.queued_messages import QueuedMessages, shown

if TYPE_CHECKING:
    from cmdop_tui.agent.cancel import UICancel
    from cmdop_tui.session.session import Session


class TypeAheadHost(Protocol):
    """What type-ahead uses of the app."""

    ui_cancel: UICancel

    @property
    def session(self) -> Session | None: ...
    @property
    def running(self) -> bool: ...
    async def send(self, text: str) -> None: ...


class TypeAhead:
    """The decisions of type-ahead, over the app's widgets and session."""

    def __init__(self, app: object) -> None:
        self.app = cast("App[Any]", app)
        self.host = cast(TypeAheadHost, app)

    @property
    def queue(self) -> QueuedMessages:
        return self.app.query_one(QueuedMessages)

    @property
    def prompt(self) -> PromptInput:
        return self.app.query_one(PromptInput)

    def _synced(self) -> None:
        self.prompt.held_messages = len(self.queue.queued)

    def hold(self, text: str) -> None:
        """Enter while a turn runs: queue the message."""
        self.queue.add(text)
        self._synced()

    def steer(self, text: str) -> None:
        """ctrl+s: to the running turn's next step; a command, or no turn running: as Enter;
        a session not open yet: queued."""
        session = self.host.session
        if not self.host.running or parse_slash(text) is not None:
            self.app.post_message(PromptInput.Submitted(self.prompt, text))
        elif session is not None and session.steer(text):
            self.queue.add(text, steering=True)
        else:
            self.hold(text)

    async def delivered(self, text: str) -> None:
        """The model got this steering: the chat shows it, the list lets it go."""
        self.queue.delivered(text)
        await self.app.query_one(ChatLog).add_user_message(text, steering=True)

    def running_changed(self, running: bool) -> None:
        """A turn ended: steering no step took becomes queued; unless a Stop ended the turn, the
        next queued message goes."""
        stopped = not running and self.host.ui_cancel.fired
        self.queue.set_paused(stopped)
        if running:
            return
        session = self.host.session
        self.queue.steering_returned(session.runner.steering.take_all() if session else ())
        self._synced()
        if self.queue.queued and not stopped:
            self.app.call_later(self.send_next)

    async def send_next(self) -> None:
        if self.host.running or (text := self.queue.take_first_queued()) is None:
            return
        self._synced()
        await self.host.send(text)

    async def edit(self, message: PromptInput.QueueEdit) -> None:
        if message.action == "send":
            await self.send_next()
            return
        text = self.queue.take_newest_queued()
        self._synced()
        if text is not None and message.action == "edit":
            message.prompt_input.put_back(text)
        elif text is not None:
            self.app.notify(f"Dropped the queued message: {shown(text)}", timeout=3, markup=False)

    def quit_question(self) -> str | None:
        """What to ask before quitting (a turn running, messages queued); None: quit at once."""
        held = len(self.queue.held)
        unsent = f"{held} message{'s' if held != 1 else ''} you sent during the turn would be lost" if held else ""
        if self.host.running:
            return f"A turn is running{f' and {unsent}' if unsent else ''}. Stop it and quit?"
        return f"{unsent[0].upper()}{unsent[1:]}. Quit anyway?" if unsent else None


class TypeAheadKeys:
    """The app's handlers for type-ahead (mixed into the app)."""

    def on_prompt_input_steered(self, message: PromptInput.Steered) -> None:
        TypeAhead(self).steer(message.text)

    async def on_prompt_input_queue_edit(self, message: PromptInput.QueueEdit) -> None:
        await TypeAhead(self).edit(message)

    async def on_agent_steered(self, message: Agent.Steered) -> None:
        await TypeAhead(self).delivered(message.event.text)
