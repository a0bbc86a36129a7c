"""The model's checklist: the todo tool, and the reminder that shows it again every turn."""

from __future__ import annotations

import json

from fake_anthropic import text_reply, tool_reply

from cmdop_tui import Operator
from cmdop_tui.agent.messages import text_block
from cmdop_tui.agent.reminders import latest_checklist, with_reminders

PLAN = [
    {"text": "check the disk", "status": "done"},
    {"text": "rotate the logs", "status": "in_progress"},
    {"text": "restart nginx", "status": "pending"},
]


def test_the_latest_list_is_reminded_on_the_last_user_message_only_in_the_request():
    call = {"type": "tool_use", "id": "t1", "name": "todo", "input": {"items": PLAN}}
    messages = [
        {"role": "user", "content": [text_block("go")]},
        {"role": "assistant", "content": [call]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]},
    ]
    assert latest_checklist(messages) == "[x] check the disk\n[>] rotate the logs\n[ ] restart nginx"
    sent = with_reminders(messages)
    assert sent[-1]["content"][-1]["text"].startswith("<system-reminder>\nYour checklist for this task:")
    assert len(messages[-1]["content"]) == 1  # the history is not changed
    assert with_reminders(messages[:1]) == messages[:1]  # no list yet: no reminder


def test_the_checklist_stays_in_view_every_turn_but_never_in_the_history(fake_api, anthropic_env, tmp_path):
    fake_api.enqueue(
        tool_reply("todo", {"items": PLAN}),
        tool_reply("list_dir", {"path": "."}),
        text_reply("on it"),
    )
    with Operator(cwd=tmp_path, record=False) as operator:
        assert operator.chat("tidy the server") == "on it"
        stored = json.dumps(operator.messages)
    for request in fake_api.requests[1:]:
        last = request.body["messages"][-1]["content"][-1]
        assert last["type"] == "text" and "[>] rotate the logs" in last["text"]
    result = fake_api.requests[1].body["messages"][-1]["content"][0]
    assert result["content"].startswith("Checklist (1 of 3 done):") and not result.get("is_error")
    assert "system-reminder" not in stored


def test_a_malformed_list_is_refused_with_a_reason(fake_api, anthropic_env, tmp_path):
    fake_api.enqueue(tool_reply("todo", {"items": [{"text": "x", "status": "maybe"}]}), text_reply("fixed"))
    with Operator(cwd=tmp_path, record=False) as operator:
        operator.chat("plan")
    result = fake_api.requests[1].body["messages"][-1]["content"][0]
    assert result["is_error"] and "status" in result["content"]
    assert "system-reminder" not in json.dumps(fake_api.requests[1].body["messages"])  # no list to remind of
