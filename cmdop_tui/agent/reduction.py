"""Cheap reductions of what a request sends: deterministic, no model call, before any summary.

Only the request changes; the conversation (and so the transcript) keeps every output whole.

* **Old tool outputs.** Once a request would pass `reduce_at` of the context window, every tool
  output older than the last `keep_turns` turns is sent as a one-line stub that names the call,
  its size and its id; the read-only `recall` tool takes that id and brings the output back, a
  page at a time. Outputs are cleared in batches of at least `clear_at_least` of the window and
  stay cleared, so between batches every request starts with the same prefix and the prompt
  cache keeps serving it.
* **Identical outputs.** An output the request already carries word for word is sent as a
  pointer to the first one.
* **Old images.** A request carries the images of the newest tool results only (20 images, 6 MB):
  an older result's are named in its text, not sent again; to a model that takes no images
  (a local one, or one the Models API says so of) none is sent.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from cmdop_tui.agent.context_usage import block_tokens, estimate_tokens
from cmdop_tui.agent.messages import (
    Block,
    Message,
    ToolResultBlock,
    ToolUseBlock,
    blocks_of,
    is_tool_result,
    result_content_text,
    result_images,
    tool_results,
    tool_uses,
)

STUB_ARGUMENTS_CHARS = 80  # of the call's arguments, in a stub
MAX_REQUEST_IMAGES = 20  # images of tool results in one request (past 20 the API also shrinks them)
MAX_REQUEST_IMAGES_BASE64 = 8_000_000  # characters of their base64 in one request (its body takes 32 MB)


@dataclass(frozen=True)
class ReductionPolicy:
    reduce_at: float = 0.5  # share of the window past which old outputs are cleared
    keep_turns: int = 3  # the outputs of this many latest turns are always sent whole
    clear_at_least: float = 0.05  # share of the window a batch of clearing must free
    min_output_chars: int = 400  # smaller outputs are never worth a stub or a pointer


@dataclass
class OutputReducer:
    """Decides, request by request, which tool outputs go as stubs; remembers its batches."""

    policy: ReductionPolicy = field(default_factory=ReductionPolicy)
    cleared: set[str] = field(default_factory=set)  # tool_use ids sent as stubs from now on
    freed: int = 0  # tokens the last call's new batch took out of the request (estimated)

    def reduce(
        self, messages: list[Message], *, window: int | None, estimate: int, images: bool = True
    ) -> list[Message]:
        """`messages` as the request should carry them; `estimate` is the request's size;
        `images`: whether the model takes images (else none is sent: its line says it)."""
        self.freed = 0
        batch = self._clear_a_batch(messages, window) if window and estimate > self.policy.reduce_at * window else set()
        calls = {block["id"]: block for block in tool_uses(_blocks(messages))}
        first_with: dict[str, str] = {}  # output -> the first call that gave it
        unsent = _images_past_budget(messages) if images else None  # None: every result's
        reduced: list[Message] = []
        for message in messages:
            blocks = []
            for block in blocks_of(message):
                sent = self._reduced(block, calls, first_with)
                if is_tool_result(sent) and result_images(sent) and (unsent is None or sent["tool_use_id"] in unsent):
                    sent = _without_images(sent, AGAIN if images else NO_IMAGES)
                if sent is not block and block.get("tool_use_id") in batch:
                    self.freed += _tokens(block) - _tokens(sent)
                blocks.append(sent)
            reduced.append({**message, "content": blocks})
        return reduced

    def _clear_a_batch(self, messages: list[Message], window: int) -> set[str]:
        """Clear the old outputs not cleared yet, if together they are worth it; their ids."""
        old = [block for block in _old_results(messages, self.policy.keep_turns) if self._worth_a_stub(block)]
        batch = {block["tool_use_id"]: estimate_tokens(result_text(block)) for block in old}
        batch = {call: size for call, size in batch.items() if call not in self.cleared}
        if not batch or sum(batch.values()) < self.policy.clear_at_least * window:
            return set()
        self.cleared |= set(batch)
        return set(batch)

    def _worth_a_stub(self, block: ToolResultBlock) -> bool:
        return len(result_text(block)) >= self.policy.min_output_chars

    def _reduced(self, block: Block, calls: dict[str, ToolUseBlock], first_with: dict[str, str]) -> Block:
        if not is_tool_result(block):
            return block
        call_id, text = block["tool_use_id"], result_text(block)
        if call_id in self.cleared:
            return _with_content(block, stub(calls.get(call_id), call_id, text))
        if len(text) < self.policy.min_output_chars or result_images(block):
            return block
        first = first_with.setdefault(text, call_id)
        if first == call_id:
            return block
        return _with_content(block, f"[the same output as call {first} above, word for word]")


def _with_content(block: ToolResultBlock, content: str) -> ToolResultBlock:
    """A copy of the result `block` that says `content` instead."""
    sent = block.copy()
    sent["content"] = content
    return sent


def _images_past_budget(messages: list[Message]) -> set[str]:
    """The tool results whose images a request no longer carries: counting from the newest,
    those past MAX_REQUEST_IMAGES images or MAX_REQUEST_IMAGES_BASE64 characters of them (each
    request sends the whole history again)."""
    count = spent = 0
    past: set[str] = set()
    for block in reversed([block for block in _blocks(messages) if is_tool_result(block)]):
        images = result_images(block)
        if not images:
            continue
        count += len(images)
        spent += sum(len(str(image["source"].get("data", ""))) for image in images)
        if past or count > MAX_REQUEST_IMAGES or spent > MAX_REQUEST_IMAGES_BASE64:
            past.add(block["tool_use_id"])
    return past


AGAIN = "not sent again, to keep the request small"
NO_IMAGES = "not sent: this model takes no images"


def _without_images(block: ToolResultBlock, why: str) -> ToolResultBlock:
    count = len(result_images(block))
    note = f"[{count} image{'s' if count != 1 else ''} of this result {why}]"
    return _with_content(block, f"{result_text(block)}\n{note}")


def stub(call: ToolUseBlock | None, call_id: str, text: str) -> str:
    """The one line a cleared output is sent as."""
    name = call.get("name", "a tool") if call else "a tool"
    given = call.get("input") if call else None
    arguments = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in (given or {}).items())
    if len(arguments) > STUB_ARGUMENTS_CHARS:
        arguments = arguments[: STUB_ARGUMENTS_CHARS - 1] + "…"
    shown = f"{name}({arguments})"
    return (
        f"[output of {shown} cleared to save context: {len(text):,} characters, about "
        f'{estimate_tokens(text):,} tokens; recall(id="{call_id}") brings it back]'
    )


def _tokens(block: Block) -> int:
    return block_tokens(block)


def _old_results(messages: list[Message], keep_turns: int) -> list[ToolResultBlock]:
    """Tool results older than the last `keep_turns` assistant turns."""
    assistant_turns = [i for i, message in enumerate(messages) if message["role"] == "assistant"]
    if len(assistant_turns) <= keep_turns:
        return []
    boundary = assistant_turns[-keep_turns] if keep_turns else len(messages)
    return tool_results(_blocks(messages[:boundary]))


def _blocks(messages: list[Message]) -> Iterator[Block]:
    for message in messages:
        yield from blocks_of(message)


def result_text(block: Mapping[str, object]) -> str:
    """What a tool_result block says, as text."""
    return result_content_text(block.get("content"))
