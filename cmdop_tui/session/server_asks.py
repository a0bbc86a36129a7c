"""The session's answers to what its MCP servers ask (mcp/asks.py): the roots, sampling and
elicitation.

- **Roots**: where the session's commands write (the working directory, or the scratch workspace
  when it holds the home: never the home), and the folders the user made writable to the
  sandbox (`[sandbox] writable`), as `file://` URIs.
- **Sampling**: a server's `sampling/createMessage` is asked like a tool call named
  `mcp__SERVER__sampling` (so the gate, the rules, the modes and the audit log decide it: a rule
  `mcp__SERVER__sampling`, or one on every tool of the server, `mcp__SERVER`, allows it; the
  person sees which server asks, its messages, shortened, and the tokens it wants). Allowed, it
  goes to the session's model through the session's own client (the server never sees the key),
  `max_tokens` capped, and its cost is counted in the session's spending and budget. A request
  larger than MAX_SAMPLING_CHARS is refused before anyone is asked; one whose most it could cost
  (its input, and all the tokens it asks for) would cross the budget is refused, one at a time,
  so that requests made at once cannot all pass the same check. Images go to the model as
  images; audio, which the Messages API does not take, as a note.
- **Elicitation**: the surface's question (the TUI's dialog, the library's function); with none,
  the server is told that no one is there to answer.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Sequence
from os.path import expanduser
from pathlib import Path
from typing import Any

import anthropic

from cmdop_tui.agent.approval import Approver, ToolCall
from cmdop_tui.agent.budget import CHARS_PER_TOKEN, estimate_cost, format_usd
from cmdop_tui.agent.events import Event, Usage
from cmdop_tui.agent.runner import Runner
from cmdop_tui.machines.sandbox import Sandbox
from cmdop_tui.mcp.asks import (
    ClientAnswers,
    ElicitationRequest,
    Elicited,
    Elicitor,
    Refusal,
    Root,
    SampleContent,
    Sampled,
    SamplingRequest,
)
from cmdop_tui.support.text import truncate_middle

MAX_SAMPLING_TOKENS = 4096  # a server asks for at most this many tokens of the session's model
MAX_SAMPLING_CHARS = 200_000  # of a request's text (about 50,000 tokens): larger is refused
IMAGE_CHARS = 6_400  # an image counts as this much text (the API scales one to ~1,600 tokens)
SHOWN_PER_MESSAGE = 1500  # characters of each message the person sees when asked
SHOWN_MESSAGES = 12  # the last ones
IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
NO_ONE_TO_ANSWER = (
    "no one is there to answer: cmdop-tui runs without a person here (headless, or a program that "
    "gave no way to answer); the server's question was not asked"
)
STOP_REASONS: dict[str | None, Any] = {"max_tokens": "maxTokens", "stop_sequence": "stopSequence"}


def sampling_call_name(key: str) -> str:
    """What a server's sampling request is called for the gate, rules and audit: like its tools."""
    return f"mcp__{key}__sampling"


def workspace_roots(cwd: Path, writable: Sequence[Path] = ()) -> list[Root]:
    """The roots a server is told: the working directory, then the user's writable folders."""
    roots = [Root.of(cwd, "workspace")]
    for path in writable:
        root = Root.of(path, path.name or str(path))
        if path.exists() and root.uri not in {r.uri for r in roots}:
            roots.append(root)
    return roots


def session_roots(cwd: Path, sandbox: Sandbox | None) -> list[Root]:
    """The roots MCP servers are told: where the session's commands write (the working
    directory, or the scratch workspace when it holds the home), and the folders the user
    made writable to the sandbox. A working directory the sandbox would not make writable
    whole is never told, sandbox or not: a server may take the roots as all it may read."""
    if sandbox is None:
        return workspace_roots(cwd)
    if sandbox.confines:
        writable = [Path(expanduser(raw)) for raw in sandbox.policy.writable]
        return workspace_roots(sandbox.workspace_for(cwd), writable)
    return [] if sandbox.unsafe_workspace(cwd) else workspace_roots(cwd)


class ServerAsks:
    """The session's `ClientAnswers`: built when it opens, read by its `McpServers`."""

    def __init__(
        self,
        runner: Runner,
        client: anthropic.AsyncAnthropic,
        gate: Approver,
        roots: Callable[[], Sequence[Root]],
        elicit: Elicitor | None,
        emit: Callable[[Event], None],
    ) -> None:
        """`emit` hears the cost of each sampling (the running turn's sink, when there is one)."""
        self.runner = runner
        self.client = client
        self.gate = gate
        self.roots = roots
        self.elicitor = elicit
        self.emit = emit
        self._spending = asyncio.Lock()  # one sampling at a time past the budget's check

    def answers(self) -> ClientAnswers:
        return ClientAnswers(roots=self.roots, sample=self.sample, elicit=self.elicit)

    async def elicit(self, request: ElicitationRequest) -> Elicited:
        if self.elicitor is None:
            raise Refusal(NO_ONE_TO_ANSWER)
        return await self.elicitor(request)

    async def sample(self, request: SamplingRequest) -> Sampled:
        """Ask, then sample the session's model (see the module doc). Raises Refusal."""
        size = request_chars(request)
        if size > MAX_SAMPLING_CHARS:
            raise Refusal(f"the sampling request is too large ({size:,} characters; at most {MAX_SAMPLING_CHARS:,})")
        max_tokens = max(1, min(request.max_tokens, MAX_SAMPLING_TOKENS))
        call = ToolCall(
            id=f"sampling_{uuid.uuid4().hex[:16]}",
            name=sampling_call_name(request.key),
            input=shown(request, max_tokens),
            tool=None,
        )
        approval = await self.gate(call)
        if not approval.allowed:
            why = f": {approval.reason}" if approval.reason else ""
            raise Refusal(f"the MCP server '{request.server}' was not allowed to sample the model{why}")
        async with self._spending:
            self._check_budget(size // CHARS_PER_TOKEN, max_tokens)
            response = await self._create(request, max_tokens)
            self._account(response)
        text = "".join(block.text for block in response.content if block.type == "text")
        return Sampled(text=text, model=response.model, stop_reason=STOP_REASONS.get(response.stop_reason, "endTurn"))

    async def _create(self, request: SamplingRequest, max_tokens: int) -> anthropic.types.Message:
        options: dict[str, Any] = {}
        if request.system:
            options["system"] = request.system
        if request.temperature is not None:  # the SDK takes it in the body only (see NOTES)
            options["extra_body"] = {"temperature": min(max(request.temperature, 0.0), 1.0)}
        if request.stop_sequences:
            options["stop_sequences"] = list(request.stop_sequences)
        try:
            return await self.client.messages.create(
                model=self.runner.config.model,
                max_tokens=max_tokens,
                messages=model_messages(request),  # type: ignore[arg-type]  # shaped as MessageParam
                **options,
            )
        except anthropic.APIError as exc:
            raise Refusal(f"the model could not answer: {exc}") from exc

    def _check_budget(self, input_tokens: int, max_tokens: int) -> None:
        """Refuse a sampling whose most it could cost would take the session past its budget."""
        config = self.runner.config
        budget = config.max_budget_usd
        if budget is None:
            return
        spent = self.runner.ledger.spent_usd
        most = estimate_cost(config.model, Usage(input_tokens=input_tokens, output_tokens=max_tokens), config.prices)
        if spent + (most or 0.0) > budget or spent >= budget:
            could = f", this completion could cost {format_usd(most)}" if most else ""
            raise Refusal(
                f"the session's budget would be crossed ({format_usd(spent)} of {format_usd(budget)} spent{could})"
            )

    def _account(self, response: anthropic.types.Message) -> None:
        usage = response.usage
        self.runner.ledger.account_sampling(
            Usage(
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                cache_read_input_tokens=usage.cache_read_input_tokens or 0,
                cache_creation_input_tokens=usage.cache_creation_input_tokens or 0,
                model=response.model,
            ),
            self.emit,
        )


def request_chars(request: SamplingRequest) -> int:
    """How large a request is, as characters of text (an image as IMAGE_CHARS)."""
    parts = [part for message in request.messages for part in message.content]
    return len(request.system) + sum(IMAGE_CHARS if part.kind == "image" else len(part.text) for part in parts)


def shown(request: SamplingRequest, max_tokens: int) -> dict[str, Any]:
    """What the person is shown of a sampling request (and the audit log keeps): the server, the
    tokens, the system prompt and the last messages, each shortened."""
    messages = request.messages[-SHOWN_MESSAGES:]
    lines = [f"{message.role}: {_said(message.content)}" for message in messages]
    if len(request.messages) > len(messages):
        lines.insert(0, f"({len(request.messages) - len(messages)} earlier messages not shown)")
    found: dict[str, Any] = {"server": request.server, "max_tokens": max_tokens, "characters": request_chars(request)}
    if request.system:
        found["system"] = truncate_middle(request.system, SHOWN_PER_MESSAGE)
    found["messages"] = "\n".join(lines)
    return found


def _said(content: Sequence[SampleContent]) -> str:
    parts = [
        part.text if part.kind == "text" else f"[{part.kind} {part.mime_type}]".replace(" ]", "]") for part in content
    ]
    return truncate_middle(" ".join(parts), SHOWN_PER_MESSAGE)


def model_messages(request: SamplingRequest) -> list[dict[str, Any]]:
    """The request's messages for the Messages API: text and images as they are, audio and
    anything else as a note; a role that repeats joins the message before it."""
    messages: list[dict[str, Any]] = []
    for message in request.messages:
        blocks = [_block(part) for part in message.content] or [{"type": "text", "text": "(empty)"}]
        if messages and messages[-1]["role"] == message.role:
            messages[-1]["content"] += blocks
        else:
            messages.append({"role": message.role, "content": blocks})
    return messages


def _block(part: SampleContent) -> dict[str, Any]:
    if part.kind == "text":
        return {"type": "text", "text": part.text or "(empty)"}
    if part.kind == "image" and part.mime_type in IMAGE_TYPES:
        return {"type": "image", "source": {"type": "base64", "media_type": part.mime_type, "data": part.data}}
    what = f"{part.kind} ({part.mime_type})" if part.mime_type else part.kind
    return {"type": "text", "text": f"[the server sent {what}, which the model cannot take]"}
