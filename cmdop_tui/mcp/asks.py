"""What an MCP server may ask of this client, as plain data (no SDK in it: the session and the
surfaces handle it before the SDK loads, or without it).

    roots        the folders the server may work in: the session's workspace (file:// URIs)
    sampling     a completion from the session's model: `SamplingRequest` -> `Sampled`
    elicitation  something only the person can say: `ElicitationRequest` -> `Elicited`
                 (a form of flat fields, mcp/forms.py; or a URL to visit, never opened by us)

`ClientAnswers` is what a session hands its `McpServers`: the roots, and who answers the other
two. Which of them there are decides what the client declares when it connects (a server offers
its tools that need them only then). A handler refuses with `Refusal(message)`: the server gets
an MCP error that says why.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from .forms import FormField, FormValue

# The JSON-RPC error a refused request gets (the spec's "user rejected" code for sampling).
USER_REJECTED = -1


class Refusal(Exception):
    """A server's request is refused; the message says why (it goes back to the server)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class Root:
    """A folder the server may work in."""

    uri: str  # file:///...
    name: str

    @classmethod
    def of(cls, path: Path, name: str) -> Root:
        return cls(path.resolve().as_uri(), name)


@dataclass(frozen=True)
class SampleContent:
    """One part of a message: text, or an image or audio clip (base64 `data`)."""

    kind: Literal["text", "image", "audio", "other"]
    text: str = ""
    data: str = ""
    mime_type: str = ""


@dataclass(frozen=True)
class SampleMessage:
    role: Literal["user", "assistant"]
    content: tuple[SampleContent, ...]


@dataclass(frozen=True)
class SamplingRequest:
    """A server's `sampling/createMessage`: it wants the model's answer to these messages."""

    server: str  # its name, as configured
    key: str  # its part of its tools' names: mcp__KEY__...
    messages: tuple[SampleMessage, ...]
    max_tokens: int
    system: str = ""
    temperature: float | None = None
    stop_sequences: tuple[str, ...] = ()


@dataclass(frozen=True)
class Sampled:
    """The model's answer to a sampling request."""

    text: str
    model: str
    stop_reason: Literal["endTurn", "maxTokens", "stopSequence"] = "endTurn"


@dataclass(frozen=True)
class ElicitationRequest:
    """A server's `elicitation/create`: a form to fill in (`fields`), or, with a `url`, a page
    the person is asked to visit themselves (never opened by the app)."""

    server: str
    message: str
    fields: tuple[FormField, ...] = ()
    url: str = ""

    @property
    def is_url(self) -> bool:
        return bool(self.url)


@dataclass(frozen=True)
class Elicited:
    """The person's answer: `accept` (with the form's values), `decline` or `cancel`."""

    action: Literal["accept", "decline", "cancel"]
    content: dict[str, FormValue] = field(default_factory=dict)


Sampler = Callable[[SamplingRequest], Awaitable[Sampled]]
Elicitor = Callable[[ElicitationRequest], Awaitable[Elicited]]


@dataclass(frozen=True)
class ClientAnswers:
    """How this client answers what servers ask. `roots()` is read at each request; `sample`
    and `elicit` None: not declared, so a server does not ask (nor offers what needs it)."""

    roots: Callable[[], Sequence[Root]] = tuple
    sample: Sampler | None = None
    elicit: Elicitor | None = None
