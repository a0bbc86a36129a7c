"""Textual's Footer, its keys made in their final style.

Each key the Footer binds to its own compactness starts compact and is then set to the Footer's
(not compact), and each change restyles the key at once: two style passes per key, at every
recompose (the first paint, and each change of focus). Those keys are handed over already in
the Footer's style, so neither change happens. What the Footer shows is Textual's, unchanged
(the command palette's key, which is not bound, keeps its own). Textual recomposes it at every
change of the screen's bindings, a dozen times as the app starts: one that would make the same
keys is skipped. The keys are made as the footer is mounted, so that the first frame has them.
"""

from __future__ import annotations

from textual import events, on
from textual.app import ComposeResult
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

ShownKeys = tuple[tuple[str, str, str, bool, str, str, bool], ...]


class AppFooter(Footer):
    _composed: ShownKeys | None = None  # the keys of the last compose

    @on(events.Mount)
    async def make_the_keys(self) -> None:
        """The keys are made now, for the first frame: Textual makes them when the screen first
        says its bindings changed, after that frame (the footer was empty for a frame, then laid
        the screen out again in the way of the first key). That later recompose is then skipped."""
        self._bindings_ready = True
        await self.recompose()

    async def recompose(self) -> None:
        """Textual recomposes at every change of the screen's bindings (a dozen times as the app
        starts, at each focus change); a recompose that would make the same keys is skipped."""
        if self._shown_keys() != self._composed:
            await super().recompose()

    def _shown_keys(self) -> ShownKeys:
        """What compose makes keys of: each shown binding, and the command palette's."""
        if not self._bindings_ready:
            return ()
        active = self.screen.active_bindings
        palette = self.app.COMMAND_PALETTE_BINDING if self.show_command_palette else None
        return tuple(
            (
                binding.key,
                binding.description,
                binding.action,
                enabled,
                tooltip,
                binding.group.description if binding.group is not None else "",
                binding.group is not None and binding.group.compact,
            )
            for key, (_node, binding, enabled, tooltip) in active.items()
            if binding.show or key == palette
        )

    def compose(self) -> ComposeResult:
        self._composed = self._shown_keys()
        for widget in super().compose():
            if isinstance(widget, FooterKey) and not widget.has_class("-command-palette"):
                widget.set_reactive(FooterKey.compact, self.compact)  # what its binding would set
            yield widget
