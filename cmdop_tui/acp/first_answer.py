"""The answer to `initialize`, written before the ACP SDK loads.

The SDK's schema (hundreds of pydantic models) takes the most of a cold start, and an editor
waits on `initialize` before anything else. What that answer says depends on nothing but the
version asked for, so `cmdop-tui acp` reads the editor's first line itself (byte by byte from
fd 0, so nothing after it is taken from the SDK's reader), answers it when it is `initialize`,
and hands everything else to the SDK once it has loaded. The agent's own `initialize` answers
from the same dict (agent.py), and a test holds it to the SDK's `InitializeResponse`.

Imports nothing of the SDK nor of pydantic: this module is what answering needs.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

from cmdop_tui.session.errors import KEY_ENV, TOKEN_ENV
from cmdop_tui.support.version import VERSION

PROTOCOL_VERSION = 1  # the SDK's (acp.PROTOCOL_VERSION; a test holds them equal)
AUTH_METHOD = "api-key"
FIRST_LINE_LIMIT = 1 << 20  # bytes read by hand at most; the rest, if any, goes to the SDK


def initialize_answer(protocol_version: int) -> dict[str, Any]:
    """`initialize`'s result, as the protocol's JSON has it."""
    return {
        "protocolVersion": min(protocol_version, PROTOCOL_VERSION),
        "agentCapabilities": {
            "loadSession": True,
            "promptCapabilities": {"image": False, "audio": False, "embeddedContext": True},
            "mcpCapabilities": {"http": True, "sse": True},
            "sessionCapabilities": {"list": {}},
        },
        "authMethods": [
            {
                "id": AUTH_METHOD,
                "name": "API key",
                "description": f"The API key in {KEY_ENV} (or {TOKEN_ENV}) in the environment the editor "
                "starts the agent with; base_url in the settings file for another endpoint",
            }
        ],
        "agentInfo": {"name": "cmdop-tui", "title": "CMDOP Operator", "version": VERSION},
    }


@dataclass(frozen=True)
class FirstMessage:
    """The editor's first line: `answered` when it was `initialize` and we answered it (its
    client capabilities kept as JSON); else `leftover`, the bytes the SDK is to read first."""

    answered: bool
    client_capabilities: dict[str, Any] | None = None
    leftover: bytes = b""


def answer_first_message(fd_in: int = 0, fd_out: int = 1) -> FirstMessage:
    """Read the editor's first line and answer it when it is `initialize`."""
    line = _read_line(fd_in)
    request = _initialize_request(line)
    if request is None:
        return FirstMessage(answered=False, leftover=line)
    params = request["params"]
    answer = {"jsonrpc": "2.0", "id": request["id"], "result": initialize_answer(params["protocolVersion"])}
    data = (json.dumps(answer, separators=(",", ":")) + "\n").encode()
    while data:
        data = data[os.write(fd_out, data) :]
    capabilities = params.get("clientCapabilities")
    return FirstMessage(answered=True, client_capabilities=capabilities if isinstance(capabilities, dict) else None)


def _read_line(fd: int) -> bytes:
    """Up to and with the first newline (or end of input, or FIRST_LINE_LIMIT bytes)."""
    got = bytearray()
    while len(got) < FIRST_LINE_LIMIT:
        byte = os.read(fd, 1)
        if not byte:
            break
        got += byte
        if byte == b"\n":
            break
    return bytes(got)


def _initialize_request(line: bytes) -> dict[str, Any] | None:
    """The request when `line` is a whole, well-formed `initialize` request; else None (the SDK
    answers it, errors included)."""
    if not line.endswith(b"\n"):
        return None
    try:
        message = json.loads(line)
    except ValueError:
        return None
    if not isinstance(message, dict) or message.get("method") != "initialize" or "id" not in message:
        return None
    params = message.get("params")
    if not isinstance(params, dict):
        return None
    version = params.get("protocolVersion")
    if not isinstance(version, int) or isinstance(version, bool) or version < 0:
        return None
    return message
