"""A server's sampling request as the person sees it and as the model gets it; the roots told."""

from __future__ import annotations

from pathlib import Path

from cmdop_tui.mcp.asks import SampleContent, SampleMessage, SamplingRequest
from cmdop_tui.session.server_asks import (
    SHOWN_MESSAGES,
    SHOWN_PER_MESSAGE,
    model_messages,
    sampling_call_name,
    shown,
    workspace_roots,
)


def text(role: str, words: str) -> SampleMessage:
    return SampleMessage(role, (SampleContent("text", text=words),))  # type: ignore[arg-type]


def request(*messages: SampleMessage, system: str = "") -> SamplingRequest:
    return SamplingRequest(server="srv", key="srv", messages=messages, max_tokens=99, system=system)


def test_images_go_to_the_model_audio_as_a_note_and_a_repeated_role_joins_the_message_before():
    image = SampleContent("image", data="aGVsbG8=", mime_type="image/png")
    audio = SampleContent("audio", data="AAAA", mime_type="audio/wav")
    tiff = SampleContent("image", data="AAAA", mime_type="image/tiff")
    sent = model_messages(
        request(SampleMessage("user", (image,)), SampleMessage("user", (audio, tiff)), text("assistant", "ok"))
    )
    assert [m["role"] for m in sent] == ["user", "assistant"]
    first, note, unsupported = sent[0]["content"]
    assert first == {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "aGVsbG8="}}
    assert note == {"type": "text", "text": "[the server sent audio (audio/wav), which the model cannot take]"}
    assert "image (image/tiff)" in unsupported["text"]


def test_what_the_person_sees_is_bounded_and_names_the_server_and_tokens():
    many = [text("user", "x" * 10_000) for _ in range(SHOWN_MESSAGES + 3)]
    seen = shown(request(*many, system="be brief"), 99)
    assert seen["server"] == "srv" and seen["max_tokens"] == 99 and seen["system"] == "be brief"
    lines = seen["messages"].splitlines()
    assert lines[0] == "(3 earlier messages not shown)"
    assert sum(line.startswith("user: ") for line in lines) == SHOWN_MESSAGES
    assert len(seen["messages"]) < (SHOWN_MESSAGES + 1) * (SHOWN_PER_MESSAGE + 100)
    assert (
        "[image image/png]"
        in shown(request(SampleMessage("user", (SampleContent("image", mime_type="image/png"),))), 1)["messages"]
    )


def test_the_roots_are_the_working_directory_then_the_writable_folders_that_exist(tmp_path: Path):
    extra = tmp_path / "data"
    extra.mkdir()
    roots = workspace_roots(tmp_path, [extra, tmp_path / "missing", tmp_path])
    assert [(root.uri, root.name) for root in roots] == [(tmp_path.as_uri(), "workspace"), (extra.as_uri(), "data")]
    assert sampling_call_name("srv") == "mcp__srv__sampling"
