"""Keys applied in the order they came, when several arrive in one read (as over SSH).

Textual hands every key to the focused widget's queue, in order. A printable key is inserted by
the widget as it takes the key from its queue; a key the widget leaves alone (Backspace, Delete,
the arrows, Home, ctrl keys) bubbles up, one queue after another (the widget's parent, the
screen, the app), and only at the app runs its binding, which may be the widget's own
(`delete_left`). By then the widget has inserted the printable keys that came after it: `abc`,
Backspace, `xyz` in one read left `abcxy`.

`run_binding_now` runs that binding when the widget takes the key instead: the bindings Textual
would try for it, from the widget up through its containers and screen to the app (stopping at a
modal screen, as Textual does), only without the trip up the queues. The priority bindings are
the app's, tried before the key was handed to the widget at all. A widget calls it from its key
handler for the keys it does not insert itself.
"""

from __future__ import annotations

from textual import events
from textual.widget import Widget
from textual.widgets import Input


async def run_binding_now(widget: Widget, event: events.Key) -> bool:
    """Run the binding of `event`'s key for `widget` now; True (and the event stopped) when one
    ran, False when none did (or each passed the key on) and the key goes on up as Textual sends
    it. Looked up from `widget` itself, not from the focus: a key keeps the widget it was given to
    even when a key before it in the same read moved the focus (Tab)."""
    for node in widget.ancestors_with_self:
        for binding in node._bindings.key_to_bindings.get(event.key, ()):
            if not binding.priority and await widget.app.run_action(binding.action, node):
                event.stop()
                event.prevent_default()
                return True
        if node.is_modal:
            break
    return False


class InOrderInput(Input):
    """Textual's one-line input, with its keys applied in the order they came (a dialog's form)."""

    async def _on_key(self, event: events.Key) -> None:
        if event.is_printable or not await run_binding_now(self, event):
            await super()._on_key(event)
