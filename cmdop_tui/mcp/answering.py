"""The SDK's side of what a server asks of this client (roots, sampling, elicitation): its
requests read into mcp/asks.py's data, handed to the session's `ClientAnswers`, and the answers
written back. Imported by client.py only (it loads the SDK).

The callbacks given to `ClientSession` are also what it declares: roots always (the workspace),
sampling and elicitation only when the session has someone to answer them. A server may sample
or elicit only while it works on a call of ours, and at most MAX_ASKS_PER_CALL times for each:
a server that asks between turns, after a Stop, or in a flood is refused without asking anyone
(an approval "for this session" would otherwise let it spend without bound). Every answer being
worked on (an approval, a dialog) runs in a cancel scope that `Asking.stop()` ends: a Stop of the
call that led the server to ask ends the question too, and the server is told it was cancelled.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import Any

import anyio
import mcp_types as types
from mcp.client.session import ClientRequestContext

from .asks import (
    USER_REJECTED,
    ClientAnswers,
    ElicitationRequest,
    Refusal,
    SampleContent,
    SampleMessage,
    SamplingRequest,
)
from .forms import FormError, checked, form_fields

log = logging.getLogger(__name__)

STOPPED = "stopped by the user"
MAX_ASKS_PER_CALL = 16  # sampling and elicitation requests a server may make for one call of ours
OUTSIDE_A_CALL = "this client answers sampling and elicitation only while it works on a call it made to the server"


class Asking:
    """The answers a connection is working on, each in a cancel scope `stop()` ends; and the
    calls it is making, which alone let the server ask."""

    def __init__(self) -> None:
        self._scopes: set[anyio.CancelScope] = set()
        self._calls = 0
        self._allowance = 0  # questions the server may still ask during the calls in progress

    @contextlib.contextmanager
    def calling(self) -> Iterator[None]:
        """A call to the server is in progress: the server may ask, MAX_ASKS_PER_CALL times more."""
        self._calls += 1
        self._allowance += MAX_ASKS_PER_CALL
        try:
            yield
        finally:
            self._calls -= 1
            if self._calls == 0:
                self._allowance = 0

    def refusal(self) -> str | None:
        """Why the server may not ask now (None: it may, and that takes one of its questions)."""
        if self._calls == 0:
            return OUTSIDE_A_CALL
        if self._allowance <= 0:
            return f"the server asked more than {MAX_ASKS_PER_CALL} times during one call"
        self._allowance -= 1
        return None

    @contextlib.contextmanager
    def scope(self) -> Iterator[anyio.CancelScope]:
        with anyio.CancelScope() as scope:
            self._scopes.add(scope)
            try:
                yield scope
            finally:
                self._scopes.discard(scope)

    def stop(self) -> None:
        for scope in list(self._scopes):
            scope.cancel()


def callbacks(answers: ClientAnswers, server: str, key: str, asking: Asking) -> dict[str, Any]:
    """`ClientSession`'s callbacks for `answers` (the ones given are the capabilities declared)."""
    answerer = Answerer(answers, server, key, asking)
    found: dict[str, Any] = {"list_roots_callback": answerer.list_roots}
    if answers.sample is not None:
        found["sampling_callback"] = answerer.sample
    if answers.elicit is not None:
        found["elicitation_callback"] = answerer.elicit
    return found


class Answerer:
    """One server's questions, answered by the session's `ClientAnswers`."""

    def __init__(self, answers: ClientAnswers, server: str, key: str, asking: Asking) -> None:
        self.answers = answers
        self.server = server
        self.key = key
        self.asking = asking

    async def list_roots(self, context: ClientRequestContext) -> types.ListRootsResult | types.ErrorData:
        try:
            roots = [types.Root.model_validate({"uri": root.uri, "name": root.name}) for root in self.answers.roots()]
        except Exception as exc:  # never expected; the server hears why
            log.exception("listing the roots failed")
            return types.ErrorData(code=types.INTERNAL_ERROR, message=f"cannot list the roots: {exc}")
        return types.ListRootsResult(roots=roots)

    async def sample(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.ErrorData:
        if params.tools:
            return types.ErrorData(code=types.INVALID_PARAMS, message="this client does not sample with tools")
        if why := self.asking.refusal():
            return types.ErrorData(code=USER_REJECTED, message=why)
        request = SamplingRequest(
            server=self.server,
            key=self.key,
            messages=tuple(_message(message) for message in params.messages),
            max_tokens=params.max_tokens,
            system=params.system_prompt or "",
            temperature=params.temperature,
            stop_sequences=tuple(params.stop_sequences or ()),
        )
        answer: types.CreateMessageResult | types.ErrorData = types.ErrorData(code=USER_REJECTED, message=STOPPED)
        with self.asking.scope():
            answer = await self._sampled(request)
        return answer

    async def _sampled(self, request: SamplingRequest) -> types.CreateMessageResult | types.ErrorData:
        assert self.answers.sample is not None
        try:
            sampled = await self.answers.sample(request)
        except Refusal as refusal:
            return types.ErrorData(code=USER_REJECTED, message=refusal.message)
        except Exception as exc:
            log.exception("answering a sampling request failed")
            return types.ErrorData(code=types.INTERNAL_ERROR, message=f"sampling failed: {exc}")
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(text=sampled.text),
            model=sampled.model,
            stop_reason=sampled.stop_reason,
        )

    async def elicit(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        if why := self.asking.refusal():
            return types.ErrorData(code=USER_REJECTED, message=why)
        if isinstance(params, types.ElicitRequestURLParams):
            request = ElicitationRequest(server=self.server, message=params.message, url=params.url)
        else:
            try:
                request = ElicitationRequest(self.server, params.message, form_fields(params.requested_schema))
            except FormError as exc:
                return types.ErrorData(code=types.INVALID_PARAMS, message=f"this client cannot show the form: {exc}")
        answer: types.ElicitResult | types.ErrorData = types.ElicitResult(action="cancel")
        with self.asking.scope():
            answer = await self._elicited(request)
        return answer

    async def _elicited(self, request: ElicitationRequest) -> types.ElicitResult | types.ErrorData:
        assert self.answers.elicit is not None
        try:
            answer = await self.answers.elicit(request)
            content = checked(request.fields, answer.content) if answer.action == "accept" else None
        except Refusal as refusal:
            return types.ErrorData(code=USER_REJECTED, message=refusal.message)
        except FormError as exc:
            return types.ErrorData(code=types.INVALID_PARAMS, message=f"the answer does not fit the form: {exc}")
        except Exception as exc:
            log.exception("answering an elicitation failed")
            return types.ErrorData(code=types.INTERNAL_ERROR, message=f"the question failed: {exc}")
        if request.is_url:
            content = None  # a URL's answer carries no values
        return types.ElicitResult(action=answer.action, content=dict(content) if content is not None else None)


def _message(message: types.SamplingMessage) -> SampleMessage:
    parts = message.content if isinstance(message.content, list) else [message.content]
    return SampleMessage(role=message.role, content=tuple(_content(part) for part in parts))


def _content(part: Any) -> SampleContent:
    if isinstance(part, types.TextContent):
        return SampleContent("text", text=part.text)
    if isinstance(part, types.ImageContent):
        return SampleContent("image", data=part.data, mime_type=part.mime_type)
    if isinstance(part, types.AudioContent):
        return SampleContent("audio", data=part.data, mime_type=part.mime_type)
    return SampleContent("other", text=type(part).__name__)
