"""The intent router's call: one cheap classifier request on the prompt (agent/routing.py says
what each route does)."""

from __future__ import annotations

from collections.abc import Mapping

from cmdop_tui.agent.agent_config import AgentConfig
from cmdop_tui.agent.cancel import Operation
from cmdop_tui.agent.history import Conversation
from cmdop_tui.agent.llm import ModelClient
from cmdop_tui.agent.messages import ApiRequest, message_text
from cmdop_tui.agent.routing import INTENT_SYSTEM_PROMPT, Route, parse_route


async def route_prompt(
    model: ModelClient, config: AgentConfig, conversation: Conversation, operation: Operation
) -> Route:
    """DIRECT or AGENT for the last message. Off, or on any failure: AGENT."""
    if not config.intent_router:
        return "agent"
    last: Mapping[str, object] = conversation.messages[-1] if conversation.messages else {}
    request: ApiRequest = {
        "model": config.router_model or config.model,
        "max_tokens": 8,
        "system": INTENT_SYSTEM_PROMPT,
        "messages": [{"role": "user", "content": message_text(last) or "(empty)"}],
        "extra_body": {"temperature": 0.0},
    }
    try:
        return parse_route(await model.classify(request, operation))
    except Exception:
        return "agent"
