"""The model call: streaming with a liveness check, a non-streaming fallback, retries.

Retries belong to tenacity (the SDK's own are off): exponential backoff with jitter, only for
errors worth retrying. Never for `BaseException`: a retried cancellation would swallow Stop.

Streaming liveness: the first event may take long (a big prompt is read first); after it, a gap of
`idle_timeout_s` with no event (and none in the `stall_grace_s` after it, which a process that
was stopped reads its buffered stream in) means the stream is dead. A dead stream is retried, unless the
operation's deadline is close, in which case one non-streaming call is made with the time left.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

import anthropic
import httpx2
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt, stop_any
from tenacity.stop import stop_base

from cmdop_tui.agent.cancel import Operation
from cmdop_tui.agent.events import Event, Retrying, Thinking, Token, Usage, Waiting
from cmdop_tui.agent.llm_errors import (
    DeadStreamError,
    InvalidReplyError,
    describe_error,
    is_retryable,
    page_text,
    retry_after,
)
from cmdop_tui.agent.messages import (
    ApiRequest,
    Block,
    JsonObject,
    ToolUseBlock,
    is_blank_text,
    is_compaction,
    is_text,
    is_thinking,
    is_tool_use,
    text_of,
    tool_uses,
)
from cmdop_tui.agent.policies import RetryPolicy, StreamPolicy

EventSink = Callable[[Event], None]


@dataclass
class ModelReply:
    content: list[Block]
    stop_reason: str | None
    usage: Usage
    input_errors: dict[str, str] = field(default_factory=dict)

    @property
    def tool_calls(self) -> list[ToolUseBlock]:
        return tool_uses(self.content)

    @property
    def text(self) -> str:
        return "".join(text_of(b) for b in self.content)


# --- reply assembly ------------------------------------------------------------------------


@dataclass
class _BlockBuilder:
    block: Block
    partial_json: str = ""


class ReplyAssembler:
    """Builds the assistant message from raw stream events, emitting tokens as they come."""

    def __init__(self, emit: EventSink) -> None:
        self._emit = emit
        self._blocks: dict[int, _BlockBuilder] = {}
        self.input_errors: dict[str, str] = {}
        self.stop_reason: str | None = None
        self.model = ""
        self.usage: dict[str, int] = {}
        self.finished = False

    def feed(self, event: Any) -> None:
        kind = getattr(event, "type", None)
        handler = getattr(self, f"_on_{kind}", None)
        if handler is not None:  # unknown event types are tolerated
            handler(event)

    def _on_message_start(self, event: Any) -> None:
        self.model = event.message.model or ""
        self._merge_usage(event.message.usage)

    def _on_content_block_start(self, event: Any) -> None:
        block = _block_to_param(event.content_block)
        if is_tool_use(block):
            block["input"] = {}
        self._blocks[event.index] = _BlockBuilder(block)

    def _on_content_block_delta(self, event: Any) -> None:
        builder = self._blocks.get(event.index)
        if builder is None:
            return
        delta, block = event.delta, builder.block
        # A delta extends the block its index opened, which is of the delta's kind.
        if delta.type == "text_delta":
            if is_text(block):
                block["text"] = block.get("text", "") + delta.text
            self._emit(Token(delta.text))
        elif delta.type == "thinking_delta":
            if is_thinking(block):
                block["thinking"] = block.get("thinking", "") + delta.thinking
            self._emit(Thinking(delta.thinking))
        elif delta.type == "signature_delta" and is_thinking(block):
            block["signature"] = delta.signature
        elif delta.type == "input_json_delta":
            builder.partial_json += delta.partial_json
        elif delta.type == "compaction_delta" and is_compaction(block):  # server-side compaction: the summary
            block["content"] = (block.get("content") or "") + (delta.content or "")

    def _on_content_block_stop(self, event: Any) -> None:
        builder = self._blocks.get(event.index)
        if builder is None or not is_tool_use(block := builder.block):
            return
        parsed, error = parse_tool_input(builder.partial_json)
        block["input"] = parsed
        if error:
            self.input_errors[block["id"]] = error

    def _on_message_delta(self, event: Any) -> None:
        self.stop_reason = event.delta.stop_reason or self.stop_reason
        self._merge_usage(event.usage)

    def _on_message_stop(self, event: Any) -> None:
        self.finished = True

    def _merge_usage(self, usage: Any) -> None:
        if usage is None:
            return
        for name in ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"):
            value = getattr(usage, name, None)
            if value is not None:
                self.usage[name] = value

    def reply(self) -> ModelReply:
        content = [self._blocks[i].block for i in sorted(self._blocks)]
        return ModelReply(
            content=[b for b in content if not is_blank_text(b)],
            stop_reason=self.stop_reason,
            usage=Usage(
                input_tokens=self.usage.get("input_tokens", 0),
                output_tokens=self.usage.get("output_tokens", 0),
                cache_read_input_tokens=self.usage.get("cache_read_input_tokens", 0),
                cache_creation_input_tokens=self.usage.get("cache_creation_input_tokens", 0),
                model=self.model,
            ),
            input_errors=self.input_errors,
        )


async def _check_event_stream(response: httpx2.Response) -> None:
    """An answer to a streaming request that is not an event stream (a web page, a JSON body from
    a server that does not stream) is said as what it is, at once, not waited on as a stall."""
    kind = response.headers.get("content-type", "")
    if "text/event-stream" in kind:
        return
    body = (await response.aread()).decode("utf-8", errors="replace")
    raise InvalidReplyError(
        f"the endpoint answered a streaming request with {kind or 'no content type'}, not an event "
        f"stream: {page_text(body) or '(empty)'}; check ANTHROPIC_BASE_URL"
    )


def parse_tool_input(raw: str) -> tuple[JsonObject, str | None]:
    """The tool input object, or ({}, why not) for malformed JSON from the model."""
    if not raw.strip():
        return {}, None
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        return {}, f"the tool input was not valid JSON ({exc.msg} at character {exc.pos})"
    if not isinstance(value, dict):
        return {}, f"the tool input must be a JSON object, not {type(value).__name__}"
    return value, None


def _block_to_param(block: Any) -> Block:
    """An SDK content block as the dict the API takes back in the next request."""
    kind = block.type
    if kind == "text":
        return {"type": "text", "text": block.text or ""}
    if kind == "thinking":
        return {"type": "thinking", "thinking": block.thinking or "", "signature": block.signature or ""}
    if kind == "redacted_thinking":
        return {"type": "redacted_thinking", "data": block.data}
    if kind == "tool_use":
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": dict(block.input or {})}
    # Another kind (a server tool's call or result, a compaction) goes back as the API sent it:
    # the guards know it by its tag, and no other code reads its fields.
    return cast("Block", block.model_dump(exclude_none=True))


def reply_from_message(message: Any) -> ModelReply:
    """A non-streamed `Message` as a ModelReply."""
    if getattr(message, "content", None) is None:
        raise InvalidReplyError("the endpoint's answer has no content")
    content = [_block_to_param(b) for b in message.content]
    usage = message.usage
    return ModelReply(
        content=[b for b in content if not is_blank_text(b)],
        stop_reason=message.stop_reason,
        usage=Usage(
            input_tokens=usage.input_tokens or 0,
            output_tokens=usage.output_tokens or 0,
            cache_read_input_tokens=usage.cache_read_input_tokens or 0,
            cache_creation_input_tokens=usage.cache_creation_input_tokens or 0,
            model=message.model or "",
        ),
    )


# --- the client ----------------------------------------------------------------------------


T = TypeVar("T")


async def _within(seconds: float, call: Awaitable[T]) -> T:
    """`call`, or DeadStreamError after `seconds` in all. The SDK's timeout bounds each read, so
    an endpoint that dribbles its status line or headers a byte at a time would never end it."""
    try:
        return await asyncio.wait_for(call, seconds)
    except TimeoutError:
        raise DeadStreamError(f"no answer for {seconds:.1f} s") from None


class _Patience(stop_base):
    """How long one model call may go on with nothing from the endpoint, retries included; the
    clock starts again with every event that came from it. As a tenacity stop: no attempt after."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.until = time.monotonic() + seconds

    def left(self) -> float:
        return max(0.0, self.until - time.monotonic())

    def __call__(self, retry_state: RetryCallState) -> bool:
        return self.left() <= 0

    def heard(self, emit: EventSink) -> EventSink:
        def sink(event: Event) -> None:
            if not isinstance(event, Waiting | Retrying):  # our own words are not the endpoint's
                self.until = time.monotonic() + self.seconds
            emit(event)

        return sink


class ModelClient:
    """Calls the model with the project's retry and streaming policies."""

    def __init__(
        self,
        client: anthropic.AsyncAnthropic,
        retry: RetryPolicy = RetryPolicy(),
        stream: StreamPolicy = StreamPolicy(),
    ) -> None:
        self.client = client
        self.retry = retry
        self.stream = stream

    async def complete(self, request: ApiRequest, emit: EventSink, operation: Operation) -> ModelReply:
        """One model reply, retried as the policy says; raises the last error when out of attempts."""

        def announce(state: RetryCallState) -> None:
            exc = state.outcome.exception() if state.outcome else None
            delay = state.next_action.sleep if state.next_action else 0.0
            reason = describe_error(exc)[1] if exc is not None else "unknown error"
            emit(Retrying(attempt=state.attempt_number, delay_s=round(delay, 3), reason=reason))

        patience = _Patience(self.stream.silence_deadline_s)
        retrying = AsyncRetrying(
            stop=stop_any(stop_after_attempt(self.retry.attempts), patience),
            wait=lambda state: self.retry.delay(
                state.attempt_number, retry_after(state.outcome.exception() if state.outcome else None)
            ),
            retry=retry_if_exception(is_retryable),
            before_sleep=announce,
            reraise=True,
        )
        return await retrying(self._attempt, request, patience.heard(emit), operation, patience)

    async def _attempt(
        self, request: ApiRequest, emit: EventSink, operation: Operation, patience: _Patience
    ) -> ModelReply:
        if not self.stream.enabled:
            return await self._call_once(request, operation)
        try:
            return await self._stream_once(request, emit, operation, patience.left())
        except DeadStreamError:
            left = operation.remaining()
            if left is not None and left < self.stream.near_deadline_s:
                return await self._call_once(request, operation)
            raise

    def _create(self, request: ApiRequest) -> Any:
        """The SDK's create: the beta one for a request that names betas (server-side compaction)."""
        return self.client.beta.messages.create if "betas" in request else self.client.messages.create

    async def _call_once(self, request: ApiRequest, operation: Operation) -> ModelReply:
        timeout = operation.bound(self.stream.request_timeout_s)
        message = await _within(timeout, self._create(request)(**request, timeout=timeout))
        return reply_from_message(message)

    async def _stream_once(
        self, request: ApiRequest, emit: EventSink, operation: Operation, patience_s: float | None = None
    ) -> ModelReply:
        assembler = ReplyAssembler(emit)
        first_wait = operation.bound(min(self.stream.first_event_timeout_s, patience_s or float("inf")))
        said = asyncio.get_running_loop().call_later(
            self.stream.waiting_notice_s, emit, Waiting(self.stream.waiting_notice_s, first_wait)
        )  # a silent endpoint is said long before its deadline
        try:
            stream = await _within(first_wait, self._create(request)(**request, stream=True, timeout=first_wait))
        except BaseException:
            said.cancel()
            raise
        async with stream:
            await _check_event_stream(stream.response)
            events = stream.__aiter__()
            wait = first_wait
            while not assembler.finished:
                try:
                    event = await self._next_event(events, wait)
                except StopAsyncIteration:
                    break
                said.cancel()
                assembler.feed(event)
                wait = self.stream.idle_timeout_for(str(request.get("model", "")))
        if not assembler.finished:
            raise DeadStreamError("the stream ended before message_stop")
        return assembler.reply()

    async def _next_event(self, events: AsyncIterator[Any], wait: float) -> Any:
        """The stream's next event, or DeadStreamError after `wait` seconds with none.

        Quiet is judged by what arrived, not by the clock alone: when the timer runs out, what
        came meanwhile (the process was stopped, Ctrl-Z, or the loop was busy) is read within a
        short grace counted from then, so an intact stream is never thrown away and paid twice."""
        pending = asyncio.ensure_future(anext(events))
        try:
            done, _ = await asyncio.wait({pending}, timeout=wait)
            if not done:
                done, _ = await asyncio.wait({pending}, timeout=self.stream.stall_grace_s)
            if not done:
                raise DeadStreamError(f"no event for {wait:.1f} s")
            return pending.result()
        finally:
            if not pending.done():
                pending.cancel()
                await asyncio.gather(pending, return_exceptions=True)

    async def classify(self, request: ApiRequest, operation: Operation) -> str:
        """A short non-streamed call for the intent router; returns the reply text."""
        reply = await self._call_once(request, operation)
        return reply.text
