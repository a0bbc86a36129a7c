"""The prompt is where typing goes, wherever focus is on the main screen.

Tab (or a click) moves focus into the chat and the panels beside it, where arrows and Enter
move and open, and the F-keys act (F4 copies a tool's output there). A printable key or a paste
that arrives while one of them has focus is not theirs: focus goes back to the prompt and the
key lands there, at the prompt's cursor. Esc between turns brings focus back too (the app's
Esc, `action_stop`); Esc while a turn runs stops it, wherever focus is.

The move happens as the app takes the key from its queue, before it hands the key on, so the
keys after it in the same read follow it into the prompt in order. Dialogs and the other
screens keep their own keys: only the main screen's typing is steered.
"""

from __future__ import annotations

from textual import events
from textual.app import App
from textual.widgets import Input, TextArea

from cmdop_tui.tui.widgets.chat_log import ChatLog
from cmdop_tui.tui.widgets.prompt_input import PromptInput


class PromptFocusApp(App[None]):
    """The app's base that steers typing to the prompt (mixed in by tui/app.py)."""

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, (events.Key, events.Paste)) and not event.is_forwarded and self._is_typing(event):
            self.focus_prompt()
        await super().on_event(event)

    def _is_typing(self, event: events.Key | events.Paste) -> bool:
        """Text for the prompt, arriving on the main screen while something else has focus."""
        if len(self.screen_stack) != 1 or isinstance(self.focused, (Input, TextArea)):
            return False
        return isinstance(event, events.Paste) or event.is_printable

    def focus_prompt(self) -> None:
        """Focus on the prompt now (not after the next refresh, as `focus()` would): the key
        being handled and those after it go to the prompt."""
        self.screen.set_focus(self.query_one(PromptInput))

    def action_scroll_chat(self, pages: int) -> None:
        """PageUp / PageDown at the prompt: the chat scrolls, as in other terminal agents."""
        chat = self.query_one(ChatLog)
        if pages < 0:
            chat.scroll_page_up()
        else:
            chat.scroll_page_down()
