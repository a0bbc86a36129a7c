"""todo: the checklist the model keeps for the task at hand.

Each call replaces the whole list. The loop shows the latest list to the model again before
every request (agent/reminders.py), so the plan stays in view however long the session grows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .base import Tool, ToolContext, ToolResult
from .schema import object_schema

STATUSES = ("pending", "in_progress", "done")
MARKS = {"pending": "[ ]", "in_progress": "[>]", "done": "[x]"}


def render_checklist(items: Sequence[Mapping[str, Any]]) -> str:
    """The list as lines a person and a model both read at a glance."""
    if not items:
        return "(the checklist is empty)"
    return "\n".join(f"{MARKS.get(str(item.get('status')), '[ ]')} {item.get('text', '')}" for item in items)


async def _todo(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    items = args["items"]
    done = sum(1 for item in items if item["status"] == "done")
    return ToolResult(f"Checklist ({done} of {len(items)} done):\n{render_checklist(items)}")


TODO = Tool(
    name="todo",
    description=(
        "Keep a checklist for a task of several steps: send the whole list each time (it replaces the "
        "last one), marking each item pending, in_progress or done as you go. The latest list is shown "
        "to you before every turn."
    ),
    input_schema=object_schema(
        {
            "items": {
                "type": "array",
                "description": "The whole checklist, in order.",
                "items": {
                    "type": "object",
                    "properties": {
                        "text": {"type": "string", "description": "The step."},
                        "status": {"type": "string", "enum": list(STATUSES)},
                    },
                    "required": ["text", "status"],
                    "additionalProperties": False,
                },
            }
        },
        required=["items"],
    ),
    run=_todo,
    tags=frozenset({"planning"}),
)
