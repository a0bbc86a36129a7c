"""recall: bring back a tool output that a request carried only as a stub, to save context.

The session's history keeps every output whole (see agent/reduction.py); this tool reads it
there by the call's id, a page at a time, so that one recall cannot fill the context again.
"""

from __future__ import annotations

from typing import Any

from .base import Tool, ToolContext, ToolResult
from .schema import object_schema, prop

PAGE_CHARS = 20_000


async def _recall(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    call_id, page = args["id"], args.get("page", 1)
    output = ctx.recall(call_id)
    if output is None:
        return ToolResult.error(f"no tool output with id {call_id!r} in this session")
    pages = max(1, -(-len(output) // PAGE_CHARS))
    if page > pages:
        return ToolResult.error(f"the output of {call_id} has {pages} page(s); there is no page {page}")
    text = output[(page - 1) * PAGE_CHARS : page * PAGE_CHARS]
    more = f"; recall page {page + 1} for more" if page < pages else ""
    return ToolResult(f"[output of {call_id}, page {page} of {pages}{more}]\n{text}")


RECALL = Tool(
    name="recall",
    description=(
        "Bring back the output of an earlier tool call that was cleared from the context to save room "
        f"(its stub gives the id). Long outputs come {PAGE_CHARS:,} characters a page."
    ),
    input_schema=object_schema(
        {
            "id": prop("string", "The id the stub names (a tool call id)."),
            "page": prop("integer", "Which page (default 1).", minimum=1),
        },
        required=["id"],
    ),
    run=_recall,
    tags=frozenset({"context"}),
)
