"""Copying to the clipboard with OSC 52, so it works over SSH too; secrets stay masked."""

from __future__ import annotations

from typing import Any, cast

from textual.app import App

from cmdop_tui.tui.vocabulary.copying import copy_masked
from cmdop_tui.tui.vocabulary.messages import ToolOutputCopyRequested
from cmdop_tui.tui.widgets.chat_log import ChatLog
from cmdop_tui.tui.widgets.tool_panel import ToolPanel


class ClipboardActions:
    """The app's copy actions (mixed into the app): F4 the last reply, `c` a tool's output."""

    def action_copy_reply(self) -> None:
        app = cast("App[Any]", self)
        copy_masked(app, app.query_one(ChatLog).last_reply, "the last reply")

    def copy_tool_output(self) -> None:
        cast("App[Any]", self).query_one(ToolPanel).action_copy_output()

    def on_tool_output_copy_requested(self, message: ToolOutputCopyRequested) -> None:
        copy_masked(cast("App[Any]", self), message.record.shown_output, f"the output of {message.record.name}")
