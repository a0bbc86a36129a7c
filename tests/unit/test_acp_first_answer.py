"""`initialize` answered before the ACP SDK loads (cmdop_tui/acp/first_answer.py): the answer is
the SDK's `InitializeResponse` to the letter, and reading the first line takes nothing after it."""

from __future__ import annotations

import json
import os

import acp
from acp.schema import InitializeResponse

from cmdop_tui.acp.agent import offered
from cmdop_tui.acp.first_answer import PROTOCOL_VERSION, answer_first_message, initialize_answer


def test_the_answer_is_the_sdks_initialize_response() -> None:
    assert PROTOCOL_VERSION == acp.PROTOCOL_VERSION
    answer = initialize_answer(PROTOCOL_VERSION + 5)
    parsed = InitializeResponse.model_validate(answer)
    wire = parsed.model_dump(mode="json", by_alias=True, exclude_none=True, exclude_unset=True)  # as the SDK sends
    assert wire == answer  # no key unknown to the schema, none lost
    assert parsed.protocol_version == PROTOCOL_VERSION  # never more than ours
    assert parsed.agent_capabilities is not None and parsed.agent_capabilities.load_session
    assert [m.id for m in parsed.auth_methods] == ["api-key"]


def feed(*lines: bytes) -> tuple[int, int, int, int]:
    """Pipes in and out, the input written (and closed)."""
    in_read, in_write = os.pipe()
    out_read, out_write = os.pipe()
    os.write(in_write, b"".join(lines))
    os.close(in_write)
    return in_read, in_write, out_read, out_write


def test_initialize_is_answered_and_what_follows_is_left_unread() -> None:
    request = {"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": {"protocolVersion": 1,
               "clientCapabilities": {"terminal": True}}}  # fmt: skip
    following = b'{"jsonrpc":"2.0","id":8,"method":"session/new","params":{}}\n'
    in_read, _, out_read, out_write = feed(json.dumps(request).encode() + b"\n", following)
    first = answer_first_message(in_read, out_write)
    os.close(out_write)
    assert first.answered and first.leftover == b""
    assert first.client_capabilities == {"terminal": True}
    answer = json.loads(os.read(out_read, 65536))
    assert answer == {"jsonrpc": "2.0", "id": 7, "result": initialize_answer(1)}
    assert os.read(in_read, 65536) == following  # the SDK's to read
    os.close(in_read)
    os.close(out_read)


def test_anything_else_first_is_left_to_the_sdk_unanswered() -> None:
    for line in (
        b'{"jsonrpc":"2.0","id":1,"method":"session/list","params":{}}\n',
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"one"}}\n',
        b"not json\n",
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}',  # no newline: cut
    ):
        in_read, _, out_read, out_write = feed(line)
        first = answer_first_message(in_read, out_write)
        os.close(out_write)
        assert not first.answered and first.leftover == line
        assert os.read(out_read, 10) == b""  # nothing said
        os.close(in_read)
        os.close(out_read)


def test_capabilities_that_do_not_parse_are_none_offered() -> None:
    assert offered({"terminal": True, "fs": {"readTextFile": True}}).terminal is True
    bad = offered({"fs": "everything", "terminal": "yes please"})
    assert not bad.terminal and (bad.fs is None or not bad.fs.read_text_file)
