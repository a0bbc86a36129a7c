"""Session transcripts: replay, durability (a real kill -9), locking, torn lines, repair, redaction,
listing, Markdown export, and a property test over random histories cut at any byte."""

from __future__ import annotations

import json
import os
import signal
import stat
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from cmdop_tui.agent.history import Conversation, sanitize, tool_result_ids, tool_use_ids
from cmdop_tui.agent.messages import Message, text_block, tool_result_block
from cmdop_tui.support.secrets import MARKER
from cmdop_tui.transcripts import (
    INTERRUPTED_RESULT,
    SessionError,
    SessionLockedError,
    SessionNotFoundError,
    Transcript,
    export_markdown,
    info,
    latest,
    list_sessions,
    load,
    repair,
    resolve,
    resume,
    sessions_dir,
)

REPO = Path(__file__).resolve().parents[2]
API_KEY = "sk-ant-api03-" + "Zz9" * 30 + "AA"
CONFIGURED_KEY = "my-gateway-key-5c1e8d"


def call(call_id: str, name: str = "execute_command", **tool_input: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": tool_input or {"command": "ls"}}


def user(*blocks: dict[str, Any]) -> Message:
    return {"role": "user", "content": list(blocks)}


def assistant(*blocks: dict[str, Any]) -> Message:
    return {"role": "assistant", "content": list(blocks)}


def assert_api_valid(messages: list[Message]) -> None:
    """What the Messages API demands, checked independently of `sanitize` (and by it)."""
    assert sanitize(messages) == messages
    if not messages:
        return
    assert messages[0]["role"] == "user"
    for index, message in enumerate(messages):
        assert message["content"], message
        if index:
            assert message["role"] != messages[index - 1]["role"]
        following = messages[index + 1] if index + 1 < len(messages) else {}
        asked = tool_use_ids(message)
        if asked:
            assert sorted(tool_result_ids(following)) == sorted(asked)
        answered = tool_result_ids(message)
        if answered:
            assert set(answered) <= set(tool_use_ids(messages[index - 1]))


def followed(directory: Path, **kwargs: Any) -> tuple[Conversation, Transcript]:
    transcript = Transcript.create(directory, **kwargs)
    conversation = Conversation()
    conversation.listeners.append(transcript.append)
    return conversation, transcript


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_bytes().splitlines()]


@pytest.fixture
def directory(tmp_path: Path) -> Path:
    return tmp_path / "sessions"


# --- replay ----------------------------------------------------------------------------------


def test_round_trip_reproduces_the_conversation_with_merges_replace_and_clear(directory: Path) -> None:
    conversation, transcript = followed(directory, model="claude-test", cwd="/srv")
    conversation.append_user("first question")
    conversation.append_user("and a second thought")  # merged into the same user message
    conversation.append_assistant([text_block("checking"), call("toolu_1"), call("toolu_2", "read_file", path="a")])
    conversation.append_tool_results([tool_result_block("toolu_2", "file a")])
    conversation.append_user("(typed while it ran)")
    conversation.append_tool_results([tool_result_block("toolu_1", "ls output")])  # results go first
    conversation.append_assistant([text_block("done")])
    snapshot_before_clear = [dict(m) for m in conversation.messages]
    conversation.replace(conversation.messages[:2] + [assistant(text_block("rewritten"))])
    conversation.append_user("more")
    transcript.event("final", text="rewritten")
    rewritten = [dict(m) for m in conversation.messages]
    conversation.clear()
    conversation.append_user("after clear")
    transcript.close()

    loaded = load(transcript.id, directory)
    assert loaded.replayed == conversation.messages == [user(text_block("after clear"))]
    assert loaded.messages == conversation.messages and not loaded.repaired
    assert loaded.notes == ["the last prompt has no answer (the session stopped before the reply was stored)"]
    assert loaded.header["model"] == "claude-test" and loaded.header["cwd"] == "/srv"
    assert loaded.header["version"] == 1 and loaded.id == transcript.id
    assert [e["kind"] for e in loaded.events] == ["final"]

    # Replaying a prefix of the file gives the history as it was at that moment, merges included.
    records = lines(transcript.path)
    ops = [r["op"] for r in records]

    def replay(upto: int) -> list[Message]:
        conversation = Conversation()
        for record in records[:upto]:
            if record["op"] in ("append", "replace", "clear"):
                conversation.apply(record)
        return conversation.messages

    before_clear = replay(ops.index("replace"))
    assert before_clear == snapshot_before_clear and len(before_clear) == 4
    assert before_clear[2] == user(
        tool_result_block("toolu_2", "file a"),
        tool_result_block("toolu_1", "ls output"),
        text_block("(typed while it ran)"),
    )
    assert replay(ops.index("clear")) == rewritten


def test_file_format_is_one_compact_json_object_per_line(directory: Path) -> None:
    conversation, transcript = followed(directory, model="m")
    conversation.append_user("héllo ☃")
    transcript.close()
    raw = transcript.path.read_bytes()
    assert raw.endswith(b"\n") and raw.count(b"\n") == 2
    header, append = raw.splitlines()
    assert header.startswith(b'{"op":"session","version":1,"id":"')
    assert append == '{"op":"append","role":"user","blocks":[{"type":"text","text":"héllo ☃"}]}'.encode()


def test_lone_surrogates_are_stored_as_escapes(directory: Path) -> None:
    conversation, transcript = followed(directory)
    conversation.append_user("bad \udcff byte")
    transcript.close()
    assert load(transcript.path).messages == [user(text_block("bad \udcff byte"))]


def test_events_are_kept_out_of_the_history(directory: Path) -> None:
    conversation, transcript = followed(directory)
    conversation.append_user("go")
    transcript.event("tool_start", name="execute_command", input={"command": f"echo {API_KEY}"})
    transcript.event("error", message="boom")
    transcript.close()
    loaded = load(transcript.path)
    assert loaded.messages == [user(text_block("go"))]
    assert [(e["kind"], type(e["ts"])) for e in loaded.events] == [("tool_start", float), ("error", float)]
    assert loaded.events[0]["input"] == {"command": "echo sk-ant-[REDACTED]"}


# --- files, modes, locks ---------------------------------------------------------------------


def test_default_location_and_modes_even_with_a_permissive_umask() -> None:
    old = os.umask(0)
    try:
        with Transcript.create(model="m") as transcript:
            pass
    finally:
        os.umask(old)
    assert transcript.path.parent == sessions_dir()
    assert transcript.path.name == f"{transcript.id}.jsonl"
    assert stat.S_IMODE(transcript.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(transcript.path.parent.stat().st_mode) == 0o700


def test_existing_directory_is_tightened_to_0700(directory: Path) -> None:
    directory.mkdir(mode=0o755)
    directory.chmod(0o755)
    Transcript.create(directory).close()
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700


def test_a_second_writer_is_refused_with_the_session_named(directory: Path) -> None:
    first = Transcript.create(directory)
    with pytest.raises(SessionLockedError, match=first.id):
        Transcript.open(first.id, directory)
    with pytest.raises(SessionLockedError):
        resume(first.id, directory)
    load(first.id, directory)  # reading is always allowed
    first.close()
    Transcript.open(first.id, directory).close()  # free again once closed


def test_the_lock_dies_with_the_object(directory: Path) -> None:
    transcript = Transcript.create(directory)
    session_id = transcript.id
    del transcript  # finalizer closes the descriptor
    Transcript.open(session_id, directory).close()


def test_create_refuses_an_existing_id_and_append_checks_its_input(directory: Path) -> None:
    transcript = Transcript.create(directory, session_id="fixed-id")
    with pytest.raises(SessionError, match="already exists"):
        Transcript.create(directory, session_id="fixed-id")
    with pytest.raises(ValueError, match="op"):
        transcript.append({"role": "user"})
    with pytest.raises(ValueError, match="malformed append"):
        transcript.append({"op": "append", "role": "system", "blocks": []})
    transcript.close()
    transcript.close()  # idempotent
    assert transcript.closed
    with pytest.raises(ValueError, match="closed"):
        transcript.append({"op": "clear"})


def test_fsync_mode_writes_the_same_file(directory: Path) -> None:
    conversation, transcript = followed(directory, fsync=True)
    conversation.append_user("durable")
    transcript.close()
    assert load(transcript.path).messages == [user(text_block("durable"))]


def test_resolve_by_id_prefix_and_path(directory: Path) -> None:
    one = Transcript.create(directory, session_id="20250101-aaa")
    two = Transcript.create(directory, session_id="20250101-abb")
    one.close(), two.close()
    assert resolve("20250101-aa", directory) == one.path
    assert resolve(str(two.path)) == two.path == resolve(two.path)
    with pytest.raises(SessionError, match="matches 2 sessions"):
        resolve("20250101-a", directory)
    with pytest.raises(SessionNotFoundError):
        resolve("nope", directory)
    with pytest.raises(SessionNotFoundError):
        resolve("../etc/passwd", directory)


# --- torn and corrupt lines ------------------------------------------------------------------


def test_a_torn_last_line_is_skipped_then_cut_off_when_continuing(directory: Path) -> None:
    conversation, transcript = followed(directory)
    conversation.append_user("kept")
    conversation.append_assistant([text_block("this reply is torn")])
    transcript.close()
    path = transcript.path
    os.truncate(path, path.stat().st_size - 10)

    loaded = load(path)
    assert loaded.messages == [user(text_block("kept"))]
    assert any("cut off" in note for note in loaded.notes)

    continued, resumed = resume(path)
    assert any("byte(s) removed" in note for note in resumed.notes)
    continued.append({"op": "append", "role": "assistant", "blocks": [text_block("fresh")]})
    continued.close()
    again = load(path)
    assert again.messages == [user(text_block("kept")), assistant(text_block("fresh"))]
    assert again.notes == []


def test_a_complete_last_line_without_newline_is_kept(directory: Path) -> None:
    conversation, transcript = followed(directory)
    conversation.append_user("whole")
    transcript.close()
    path = transcript.path
    os.truncate(path, path.stat().st_size - 1)
    assert load(path).messages == [user(text_block("whole"))]
    assert not any("cut off" in note for note in load(path).notes)
    with Transcript.open(path) as continued:
        continued.append({"op": "append", "role": "assistant", "blocks": [text_block("next")]})
    assert load(path).messages == [user(text_block("whole")), assistant(text_block("next"))]


def test_corrupt_and_unknown_lines_elsewhere_are_skipped_with_notes(directory: Path) -> None:
    conversation, transcript = followed(directory)
    conversation.append_user("one")
    transcript.close()
    with open(transcript.path, "ab") as raw:
        raw.write(b'{"op":"append","role":"assistant","blo\n')
        raw.write(b"\xff\xfe not json\n")
        raw.write(b'{"op":"append","role":"robot","blocks":[{"type":"text","text":"x"}]}\n')
        raw.write(b'{"op":"teleport"}\n')
        raw.write(b"[1, 2]\n")
        raw.write(b'{"op":"append","role":"assistant","blocks":[{"type":"text","text":"two"}]}\n')
    loaded = load(transcript.path)
    assert loaded.messages == [user(text_block("one")), assistant(text_block("two"))]
    assert len(loaded.notes) == 5, loaded.notes
    assert all(note.startswith("line ") for note in loaded.notes)


def test_a_file_with_only_a_torn_header(directory: Path) -> None:
    path = directory / "broken.jsonl"
    directory.mkdir()
    path.write_bytes(b'{"op":"session","vers')
    loaded = load(path)
    assert loaded.messages == [] and loaded.id == "broken"
    with Transcript.open(path) as continued:
        assert continued.id == "broken"
    assert lines(path)[0]["op"] == "session"


# --- repair ----------------------------------------------------------------------------------


def test_an_open_tool_call_gets_an_interrupted_result_that_sanitize_accepts(directory: Path) -> None:
    conversation, transcript = followed(directory)
    conversation.append_user("run it")
    conversation.append_assistant([text_block("running"), call("toolu_a"), call("toolu_b")])
    transcript.close()  # the process "died" while both commands ran

    loaded = load(transcript.path)
    interrupted = [tool_result_block(i, INTERRUPTED_RESULT, is_error=True) for i in ("toolu_a", "toolu_b")]
    assert loaded.messages == conversation.messages + [user(*interrupted)]
    assert sanitize(loaded.messages) == loaded.messages
    assert_api_valid(loaded.messages)
    assert loaded.repaired
    assert loaded.notes == ["the session stopped while 2 tool call(s) ran; they are marked as interrupted"]


def test_partial_results_are_completed(directory: Path) -> None:
    conversation, transcript = followed(directory)
    conversation.append_user("run both")
    conversation.append_assistant([call("toolu_a"), call("toolu_b")])
    conversation.append_tool_results([tool_result_block("toolu_b", "b finished")])
    transcript.close()
    loaded = load(transcript.path)
    assert loaded.messages[-1] == user(
        tool_result_block("toolu_b", "b finished"), tool_result_block("toolu_a", INTERRUPTED_RESULT, is_error=True)
    )
    assert_api_valid(loaded.messages)


def test_a_finished_tool_round_without_a_reply_is_left_as_it_is(directory: Path) -> None:
    conversation, transcript = followed(directory)
    conversation.append_user("run it")
    conversation.append_assistant([call("toolu_a")])
    conversation.append_tool_results([tool_result_block("toolu_a", "done")])
    transcript.close()
    loaded = load(transcript.path)
    assert loaded.messages == conversation.messages and not loaded.repaired
    assert loaded.notes == ["the session stopped before the model answered the last tool results"]


def test_resume_records_the_repair_so_the_file_replays_to_the_repaired_history(directory: Path) -> None:
    conversation, transcript = followed(directory)
    conversation.append_user("run it")
    conversation.append_assistant([call("toolu_a")])
    transcript.close()
    continued, loaded = resume(transcript.id, directory)
    follow = loaded.conversation()
    follow.listeners.append(continued.append)
    follow.append_user("what happened?")
    continued.close()
    again = load(transcript.id, directory)
    assert not again.repaired
    assert again.messages == follow.messages
    assert again.messages[-1]["content"][0]["is_error"] is True
    assert again.messages[-1]["content"][1] == text_block("what happened?")
    assert_api_valid(again.messages)


def test_repair_drops_what_cannot_be_answered() -> None:
    broken = [
        assistant(text_block("orphan reply")),
        user(text_block("hi")),
        assistant(call("toolu_x")),
        user(text_block("no result here")),
        assistant(text_block("ok")),
    ]
    repaired = repair(broken)
    assert_api_valid(repaired)
    assert repaired[0] == user(text_block("hi"), text_block("no result here"))


# --- redaction -------------------------------------------------------------------------------


def test_secrets_never_reach_the_file(directory: Path) -> None:
    conversation, transcript = followed(directory, extra_secrets=[CONFIGURED_KEY])
    conversation.append_user(f"my key is {CONFIGURED_KEY}, use it")
    conversation.append_assistant([call("toolu_1", command="env | grep KEY")])
    output = f"ANTHROPIC_API_KEY={API_KEY}\nOTHER={CONFIGURED_KEY}"
    conversation.append_tool_results([tool_result_block("toolu_1", output)])
    conversation.append_assistant([text_block(f"Found {API_KEY}.")])
    conversation.replace(list(conversation.messages))
    transcript.close()
    raw = transcript.path.read_bytes()
    assert CONFIGURED_KEY.encode() not in raw and API_KEY.encode() not in raw
    assert API_KEY[-20:].encode() not in raw
    loaded = load(transcript.path)
    assert loaded.messages[0] == user(text_block(f"my key is {MARKER}, use it"))
    assert loaded.messages[2]["content"][0]["content"] == f"ANTHROPIC_API_KEY={MARKER}\nOTHER={MARKER}"
    assert loaded.messages[3] == assistant(text_block(f"Found sk-ant-{MARKER}."))
    # The live conversation keeps the real values; only the stored copy is redacted.
    assert API_KEY in conversation.messages[3]["content"][0]["text"]


class SdkBlock:
    """Stands in for an SDK (pydantic) content block that reached the transcript undumped."""

    def __init__(self, **fields: Any) -> None:
        self.fields = fields

    def model_dump(self, exclude_none: bool = False) -> dict[str, Any]:
        return dict(self.fields)


def test_sdk_objects_are_dumped_and_then_redacted(directory: Path) -> None:
    with Transcript.create(directory) as transcript:
        transcript.append({"op": "append", "role": "user", "blocks": [SdkBlock(type="text", text=f"k={API_KEY}")]})
        transcript.event("usage", usage=SdkBlock(input_tokens=3, note=API_KEY), when={1, 2})
    raw = transcript.path.read_bytes()
    assert API_KEY.encode() not in raw
    loaded = load(transcript.path)
    assert loaded.messages == [user(text_block(f"k=sk-ant-{MARKER}"))]
    assert loaded.events[0]["usage"] == {"input_tokens": 3, "note": f"sk-ant-{MARKER}"}
    assert loaded.events[0]["when"] == [1, 2]


def test_thinking_is_kept_with_its_signature_unless_redaction_would_change_it(directory: Path) -> None:
    plain = {"type": "thinking", "thinking": "list the files first", "signature": "c2lnbmF0dXJl"}
    leaky = {"type": "thinking", "thinking": f"the key is {API_KEY}", "signature": "c2lnMg=="}
    conversation, transcript = followed(directory)
    conversation.append_user("go")
    conversation.append_assistant([plain, text_block("a")])
    conversation.append_user("again")
    conversation.append_assistant([leaky, text_block("b")])
    transcript.close()
    loaded = load(transcript.path)
    assert loaded.messages[1] == assistant(plain, text_block("a"))
    assert loaded.messages[3] == assistant(text_block("b"))


# --- kill -9 ---------------------------------------------------------------------------------

CHILD = textwrap.dedent(
    """
    import os, sys
    from pathlib import Path
    from cmdop_tui.transcripts import Transcript

    directory, report = Path(sys.argv[1]), int(sys.argv[2])
    transcript = Transcript.create(directory, model="kill-test")
    i = 0
    while True:
        role = "user" if i % 2 == 0 else "assistant"
        text = f"record {i} " + "x" * (i * 37 % 3000)
        transcript.append({"op": "append", "role": role, "blocks": [{"type": "text", "text": text}]})
        i += 1
        os.write(report, f"{i}\\n".encode())  # i records are written
    """
)


@pytest.mark.parametrize("ready_after", [1, 300, 2000])
def test_kill_9_loses_no_record_the_writer_reported(tmp_path: Path, ready_after: int) -> None:
    read_end, write_end = os.pipe()
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(tmp_path), str(write_end)],
        pass_fds=(write_end,),
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    os.close(write_end)
    received = b""
    try:
        with os.fdopen(read_end, "rb", buffering=0) as reports:
            while received.count(b"\n") < ready_after:
                chunk = reports.read(65536)
                assert chunk, f"child exited early with {child.wait()}"
                received += chunk
            child.send_signal(signal.SIGKILL)
            assert child.wait(timeout=10) == -signal.SIGKILL
            while chunk := reports.read(65536):  # reports sent before it died
                received += chunk
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    reported = int(received.splitlines()[-1])
    assert reported >= ready_after
    (path,) = tmp_path.glob("*.jsonl")
    loaded = load(path)
    texts = [m["content"][0]["text"] for m in loaded.replayed]
    assert len(texts) >= reported  # one more may have been written but not yet reported
    for i in range(reported):
        assert texts[i] == f"record {i} " + "x" * (i * 37 % 3000)
    assert_api_valid(loaded.messages)
    Transcript.open(path).close()  # the kernel released the dead writer's lock


# --- listing ---------------------------------------------------------------------------------


def test_list_sessions_newest_first_with_titles_and_counts(directory: Path) -> None:
    ids = []
    for n, prompt in enumerate(["  first\n prompt  ", "second " + "long " * 30, None]):
        conversation, transcript = followed(directory, model=f"m{n}", cwd=f"/w{n}")
        if prompt:
            conversation.append_tool_results([tool_result_block("x", "stray")])  # not a prompt: not the title
            conversation.append_user(prompt)
            conversation.append_assistant([text_block("answer")])
            conversation.append_user("follow-up")
        transcript.close()
        os.utime(transcript.path, (1_700_000_000 + n * 10, 1_700_000_000 + n * 10))
        ids.append(transcript.id)
    listed = list_sessions(str(directory))
    assert [s.id for s in listed] == ids[::-1]
    empty, long, short = listed
    assert short.title == "first prompt" and short.messages == 3 and short.model == "m0" and short.cwd == "/w0"
    assert len(long.title) == 60 and long.title.endswith("…") and long.title.startswith("second long long")
    assert empty.title == "" and empty.messages == 0
    assert short.created is not None and short.created.tzinfo is not None
    assert short.updated.timestamp() == 1_700_000_000
    assert short.path == directory / f"{short.id}.jsonl"
    assert latest(directory) == ids[1]  # the newest one has no history yet: not worth continuing


def test_latest_and_list_on_a_missing_directory(tmp_path: Path) -> None:
    assert latest(tmp_path / "none") is None
    assert list_sessions(tmp_path / "none") == []


def test_info_counts_like_load_after_replace_and_clear(directory: Path) -> None:
    conversation, transcript = followed(directory)
    conversation.append_user("a")
    conversation.append_assistant([text_block("b")])
    conversation.replace([user(text_block("x")), assistant(text_block("y")), user(text_block("z"))])
    conversation.append_user("merged")
    transcript.close()
    assert info(transcript.path).messages == len(load(transcript.path).replayed) == 3
    assert info(transcript.path).title == "a"


# --- export ----------------------------------------------------------------------------------


def test_export_markdown_shape() -> None:
    messages = [
        user(text_block("What is in /etc?")),
        assistant(
            {"type": "thinking", "thinking": "secret musings", "signature": "sig"},
            text_block("Let me look."),
            call("toolu_1", "list_dir", path="/etc"),
        ),
        user(tool_result_block("toolu_1", "passwd\nhosts\n```\nfence inside")),
        assistant(call("toolu_2", "read_file", path="/etc/app.env")),
        user(tool_result_block("toolu_2", f"API_KEY={API_KEY}", is_error=True)),
        assistant(text_block("Two files, and a key I will not repeat.")),
    ]
    markdown = export_markdown(messages, title="Look at /etc", meta={"id": "s1", "model": "m", "cwd": ""})
    assert markdown == textwrap.dedent(
        """\
        # Look at /etc

        - id: s1
        - model: m

        ## User

        What is in /etc?

        ## Assistant

        Let me look.

        **Tool call** `list_dir`

        ```json
        {
          "path": "/etc"
        }
        ```

        **Result** of `list_dir`:

        ````
        passwd
        hosts
        ```
        fence inside
        ````

        **Tool call** `read_file`

        ```json
        {
          "path": "/etc/app.env"
        }
        ```

        **Error** of `read_file`:

        ```
        API_KEY=[REDACTED]
        ```

        Two files, and a key I will not repeat.
        """
    )
    assert "musings" not in markdown


def test_export_markdown_redacts_extra_secrets_and_renders_odd_blocks() -> None:
    messages = [
        user(text_block(f"key {CONFIGURED_KEY}"), {"type": "image", "source": {"type": "base64", "data": "AAAA"}}),
        assistant(text_block("ok")),
        {"role": "user", "content": "plain string content"},
    ]
    markdown = export_markdown(messages, title="t", extra_secrets=[CONFIGURED_KEY])
    assert CONFIGURED_KEY not in markdown and f"key {MARKER}" in markdown
    assert "*[image]*" in markdown and "plain string content" in markdown
    assert markdown.count("## User") == 2


# --- speed -----------------------------------------------------------------------------------


def turn_records(n: int) -> list[dict[str, Any]]:
    """One turn as Conversation tells it: prompt, tool call, ~500-char result, ~300-char answer."""
    call_id = f"toolu_{n:020d}"
    output = ("drwxr-xr-x  2 user user 4096 Jan  1 12:00 directory-name\n" * 9)[:500]
    return [
        {"op": "append", "role": "user", "blocks": [text_block(f"Please list the files in project {n}, briefly.")]},
        {
            "op": "append",
            "role": "assistant",
            "blocks": [
                text_block("I'll list the directory."),
                call(call_id, "execute_command", command=f"ls -la /home/user/project-{n}"),
            ],
        },
        {"op": "append", "role": "user", "blocks": [tool_result_block(call_id, output)]},
        {"op": "append", "role": "assistant", "blocks": [text_block(("It holds nine directories. " * 12)[:300])]},
    ]


def test_append_is_fast(directory: Path) -> None:
    timings = []
    with Transcript.create(directory, extra_secrets=[CONFIGURED_KEY]) as transcript:
        for n in range(250):
            for record in turn_records(n):
                started = time.perf_counter()
                transcript.append(record)
                timings.append(time.perf_counter() - started)
    assert statistics.median(timings) < 1e-3, f"median append {statistics.median(timings) * 1e6:.0f} µs"
    assert len(load(transcript.path).messages) == 1000


# --- property: any history, cut anywhere, loads valid ------------------------------------------

OPS = st.sampled_from(["prompt", "reply", "tool_use", "tool_use", "results", "results", "replace", "clear", "event"])
WORDS = st.text(alphabet="abc xyz\n", min_size=1, max_size=12)


def pending_calls(messages: list[Message]) -> list[str]:
    if not messages:
        return []
    if messages[-1]["role"] == "assistant":
        return tool_use_ids(messages[-1])
    if len(messages) < 2:
        return []
    answered = set(tool_result_ids(messages[-1]))
    return [i for i in tool_use_ids(messages[-2]) if i not in answered]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_history_cut_at_any_byte_loads_valid(tmp_path_factory: pytest.TempPathFactory, data: st.DataObject) -> None:
    directory = tmp_path_factory.mktemp("prop")
    conversation, transcript = followed(directory)
    next_id = 0
    for op in data.draw(st.lists(OPS, max_size=24), label="ops"):
        if op == "prompt":
            conversation.append_user(data.draw(WORDS))
        elif op == "reply":
            conversation.append_assistant([text_block(data.draw(WORDS))])
        elif op == "tool_use":
            blocks = []
            if data.draw(st.booleans()):
                blocks.append({"type": "thinking", "thinking": data.draw(WORDS), "signature": "c2ln"})
            for _ in range(data.draw(st.integers(1, 3))):
                next_id += 1
                blocks.append(call(f"toolu_{next_id}"))
            conversation.append_assistant(blocks)
        elif op == "results":
            waiting = pending_calls(conversation.messages)
            if waiting:
                chosen = [i for i in waiting if data.draw(st.booleans())] or waiting[:1]
                conversation.append_tool_results([tool_result_block(i, data.draw(WORDS)) for i in chosen])
        elif op == "replace":
            if data.draw(st.booleans()):
                conversation.replace(sanitize(conversation.messages))
            else:
                conversation.replace(conversation.messages[: data.draw(st.integers(0, len(conversation.messages)))])
        elif op == "clear":
            conversation.clear()
        else:
            transcript.event("tool_end", ok=True)
    transcript.close()
    path = transcript.path

    whole = load(path)
    assert whole.replayed == conversation.messages
    assert info(path).messages == len(conversation.messages)
    assert_api_valid(whole.messages)

    # Cut inside a chosen line (sizes vary a little with timestamps, so positions are fractions).
    starts = [0] + [i + 1 for i, byte in enumerate(path.read_bytes()) if byte == ord("\n")]
    line = data.draw(st.integers(0, len(starts) - 1), label="cut in line")
    length = (starts[line + 1] if line + 1 < len(starts) else starts[line]) - starts[line]
    os.truncate(path, starts[line] + (length * data.draw(st.integers(0, 1 << 10), label="at (/1024)") >> 10))
    cut = load(path)
    event(f"torn last line: {any('cut off' in n for n in cut.notes)}")
    event(f"repaired: {cut.repaired}")
    assert_api_valid(cut.messages)
    assert info(path).messages == len(cut.replayed)

    continued, resumed = resume(path)
    continued.close()
    assert resumed.messages == cut.messages
    again = load(path)
    assert again.messages == resumed.messages and not again.repaired
