"""A failed model call is said in one line, with the status and the endpoint's own word on it."""

from __future__ import annotations

import json

import pytest
from agent_helpers import FAST_RETRY, Recorder, make_runner
from fake_anthropic import body_reply, error_reply, html_error

pytestmark = pytest.mark.fault

BAD_GATEWAY_PAGE = """<html>
<head><title>502 Bad Gateway</title></head>
<body>
<center><h1>502 Bad Gateway</h1></center>
<hr><center>nginx/1.25.3</center>
</body>
</html>
"""


async def test_an_html_error_page_is_one_line_with_its_status_and_title(fake_api, tmp_path):
    fake_api.enqueue(*[html_error(502, BAD_GATEWAY_PAGE) for _ in range(FAST_RETRY.attempts)])
    result = await make_runner(fake_api, cwd=tmp_path).run("hi", Recorder())
    assert result.status == "error"
    assert "\n" not in result.message and "<" not in result.message
    assert "502" in result.message and "Bad Gateway" in result.message and "nginx" not in result.message


async def test_a_long_error_message_is_cut_to_one_line(fake_api, tmp_path):
    fake_api.enqueue(error_reply(400, "invalid_request_error", "bad\n" + "detail " * 200))
    result = await make_runner(fake_api, cwd=tmp_path).run("hi", Recorder())
    assert result.status == "error" and "\n" not in result.message
    assert "400" in result.message and "bad detail" in result.message and len(result.message) < 300


async def test_a_web_page_in_answer_to_a_stream_is_said_at_once(fake_api, tmp_path):
    page = "<html><head><title>Sign in to the guest network</title></head><body>...</body></html>"
    fake_api.enqueue(html_error(200, page))
    result = await make_runner(fake_api, cwd=tmp_path).run("hi", Recorder())
    assert result.status == "error" and result.code == "invalid_reply"
    assert "text/html" in result.message and "Sign in to the guest network" in result.message
    assert "stall" not in result.message and len(fake_api.requests) == 1  # not waited on, not retried


def test_undecodable_replies_are_named_for_what_they_are():
    import json

    from cmdop_tui.agent.llm_errors import describe_error

    try:
        json.loads("<html>")
    except json.JSONDecodeError as exc:
        code, message = describe_error(exc)
    assert code == "invalid_reply" and "not valid JSON" in message and "JSONDecodeError" not in message
    try:
        b"\xff\xfe".decode("utf-8")
    except UnicodeDecodeError as exc:
        code, message = describe_error(exc)
    assert code == "invalid_reply" and "not UTF-8" in message and "codec" not in message


async def test_a_413_on_the_first_turn_is_not_called_a_failed_compaction(fake_api, tmp_path):
    fake_api.enqueue(error_reply(413), error_reply(413))
    result = await make_runner(fake_api, cwd=tmp_path).run("a huge paste", Recorder())
    assert result.status == "error" and result.code == "request_too_large"
    assert "larger than the endpoint accepts" in result.message and "413" in result.message
    assert "compaction" not in result.message


async def test_a_json_body_in_answer_to_a_stream_is_said_at_once(fake_api, tmp_path):
    """A server that does not stream answers a streaming request with a whole message as JSON."""
    message = {"id": "msg_1", "type": "message", "role": "assistant", "content": [{"type": "text", "text": "hi"}]}
    fake_api.enqueue(body_reply(json.dumps(message), "application/json"))
    result = await make_runner(fake_api, cwd=tmp_path).run("hi", Recorder())
    assert result.status == "error" and result.code == "invalid_reply" and "\n" not in result.message
    assert "application/json" in result.message and "not an event stream" in result.message
    assert "stall" not in result.message and len(fake_api.requests) == 1  # not waited on, not retried
