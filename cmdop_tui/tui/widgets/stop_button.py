"""The prompt bar's Stop: Textual's Button, styled by its own few rules.

Textual's Button carries 7 KB of CSS, every variant in every style (a third of all the CSS the
app parses before its first frame), where Stop is one of them: compact, in the default style,
the error variant. `inherit_css=False` keeps Button's behaviour (press, action, disabled, focus)
with only these rules, as Button's own CSS says them for that variant; a dialog's Button
brings the rest when it opens.
"""

from __future__ import annotations

from textual.widgets import Button


class StopButton(Button, inherit_css=False):
    DEFAULT_CSS = """
    StopButton {
        width: auto;
        min-width: 16;
        height: auto;
        line-pad: 1;
        text-align: center;
        content-align: center middle;
        pointer: pointer;
        text-style: bold;
        color: $button-color-foreground;
        background: $error;
        border: none;

        &:disabled {
            text-opacity: 0.6;
            pointer: not-allowed;
        }
        &:focus {
            text-style: $button-focus-text-style;
            background-tint: $foreground 5%;
        }
        &:hover {
            background: $error-darken-1;
        }
        &.-active {
            background: $error;
            tint: $background 30%;
        }
    }
    """

    def __init__(self, *, id: str, action: str) -> None:
        super().__init__("Stop", id=id, variant="error", disabled=True, compact=True, action=action)
