"""Headless mode: `cmdop-tui -p PROMPT`. One prompt, events out, an exit code.

Output formats:
* `text` — the final answer on stdout;
* `stream-json` — one JSON object per event per line, flushed as it happens (this is also what
  the remote end of ask_machine speaks);
* `json` — one JSON object with the outcome at the end.

Input formats: `text` (the default: standard input is not read, except for the terminal's
approval questions) and `stream-json`: each line on standard input while the prompt runs is a
user message in Claude Code's shape (`{"type": "user", "message": {"role": "user", "content":
"..."}}`, content a string or text blocks), which steers the run (`Session.steer`: the model gets
it at the next step, after the current tool results). A line that is not one is said on stderr
and skipped; steering the run ended before taking is said on stderr; no question is asked on the
terminal then (standard input carries the messages).

Exit 0 on a final answer; otherwise non-zero with a one-line reason on stderr. SIGINT and SIGTERM
fire the UI cancel signal, so a stop is as clean as the TUI's Stop button.

Tool outcomes: each call that did not end ok (`ToolEnd.outcome`) is one line on stderr in text and
json output (stream-json has it on stdout). A call denied because it needed a person and no one
could be asked (`OutcomeKind.NO_ONE_TO_ASK`) is said on stderr in every format, and makes the exit
code `EXIT_NO_ONE_TO_ASK` (4) after a final answer: the answer was made without that call.

The transcript: a write that fails (a full disk) is said on stderr at once, and again when the
records held meanwhile are written; when some could still not be written as the session closed,
the exit code is `EXIT_TRANSCRIPT_INCOMPLETE` (3), even after a final answer (which stdout has).
A data directory that cannot hold transcripts is said once on stderr; the run goes on without one.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Literal, TextIO

from cmdop_tui.agent.approval import Approval, ToolCall
from cmdop_tui.agent.budget import format_usd
from cmdop_tui.agent.events import BudgetWarning, Compacted, Event, HookRan, Retrying, ToolEnd, Waiting
from cmdop_tui.agent.runner import RunResult
from cmdop_tui.config.settings import Settings
from cmdop_tui.session.session import Session
from cmdop_tui.support.secrets import mask
from cmdop_tui.support.text import strip_terminal_sequences
from cmdop_tui.tools.describe import approval_question
from cmdop_tui.tools.outcome import OutcomeKind

OutputFormat = Literal["text", "stream-json", "json"]
InputFormat = Literal["text", "stream-json"]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_TRANSCRIPT_INCOMPLETE = 3  # the answer may be there, but the session's transcript is not whole
EXIT_NO_ONE_TO_ASK = 4  # the answer may be there, but a tool call was denied: it needed a person, none could be asked
SIGNAL_EXIT = {signal.SIGINT: 130, signal.SIGTERM: 143}


@dataclass(frozen=True)
class HeadlessOptions:
    prompt: str
    output_format: OutputFormat = "text"
    input_format: InputFormat = "text"


class JsonLinesSink:
    """Writes each event as one JSON line and flushes it at once."""

    def __init__(self, out: TextIO) -> None:
        self.out = out

    def __call__(self, event: Event) -> None:
        write_json_line(self.out, event.to_json())


class OutputError(Exception):
    """Standard output cannot take the answer (a full disk, a closed or broken stream)."""


def write_json_line(out: TextIO, obj: object) -> None:
    write_out(out, json.dumps(obj, ensure_ascii=False) + "\n")


def write_out(out: TextIO, text: str) -> None:
    """`text` to `out`, flushed; a stream that cannot take it raises OutputError (a reader that
    went away, BrokenPipeError, is left to the caller: nothing more is said to anyone)."""
    try:
        out.write(text)
        out.flush()
    except BrokenPipeError:
        raise
    except (OSError, ValueError) as exc:  # ValueError: the stream was closed
        raise OutputError(f"cannot write the answer to standard output: {exc}") from exc


class TerminalQuestions:
    """The questions of one run on its terminal, one after the other: two readers of one
    terminal cannot be (the second replaces the first, whose question would never end), and
    MCP servers' sampling requests, or calls run at once, may ask together."""

    def __init__(self) -> None:
        self._turn = asyncio.Lock()

    async def __call__(self, call: ToolCall) -> Approval:
        async with self._turn:
            return await ask_on_terminal(call)


async def ask_on_terminal(call: ToolCall) -> Approval:
    """Ask on the controlling terminal without blocking the loop (so a signal still stops us).
    One question at a time (`TerminalQuestions`)."""
    loop = asyncio.get_running_loop()
    answer: asyncio.Future[str] = loop.create_future()
    # Made inert, the command whole (a long one must not hide its tail; the terminal wraps it),
    # with what the sandbox refused or why only a person may decide; a write or an edit shows
    # its diff (ToolCall.preview, read before asking).
    question = approval_question(
        call.name,
        call.machine,
        call.input,
        escalation=call.escalation,
        person_only=call.person_only,
        preview=call.preview,
    )
    sys.stderr.write(question)
    sys.stderr.flush()

    def read_answer() -> None:
        if not answer.done():
            answer.set_result(sys.stdin.readline())

    loop.add_reader(sys.stdin.fileno(), read_answer)
    try:
        reply = await answer
    finally:
        loop.remove_reader(sys.stdin.fileno())
    allowed = reply.strip().lower() in {"y", "yes"}
    return Approval(allowed, "" if allowed else "the user said no", by_person=True, denied_as=OutcomeKind.DENIED)


def _terminal_can_ask() -> bool:
    return sys.stdin.isatty() and sys.stderr.isatty()


def summary_json(result: RunResult) -> dict[str, object]:
    return {
        "type": "result",
        "status": result.status,
        "result": result.text,
        "code": None if result.status == "final" else result.code,
        "message": result.message,
        "turns": result.turns,
        "loops": result.loops,
        "usage": asdict(result.usage),
    }


async def run_headless(settings: Settings, options: HeadlessOptions) -> int:
    """Run the prompt; return the process exit code."""
    if sys.stdout is None:  # fd 1 was closed when we started: no answer could be given, so none is asked for
        raise OutputError("cannot write the answer to standard output: it is closed")
    if settings.run.local:
        sys.stderr.write("cmdop-tui: starting the local model…\n")
    ask = TerminalQuestions() if _terminal_can_ask() and options.input_format == "text" else None
    async with Session(settings, platform="headless", ask=ask) as session:
        for note in session.notes:
            sys.stderr.write(f"cmdop-tui: {note}\n")
        session.recorder.listeners.append(lambda notice: _say(f"{notice.level}: {notice.text}"))
        result, signum, unasked = await _run_until_signal(session, options)
        for state in session.mcp.states() if session.mcp is not None else []:
            if state.status in ("failed", "crashed"):  # said once, after the run that lacked its tools
                sys.stderr.write(f"cmdop-tui: MCP server {state.name} {state.summary()}\n")
    code = report(result, options.output_format, signum)
    if code == EXIT_OK and unasked:
        return EXIT_NO_ONE_TO_ASK
    return EXIT_TRANSCRIPT_INCOMPLETE if code == EXIT_OK and session.recorder.records_lost else code


def _say(text: str) -> None:
    sys.stderr.write(f"cmdop-tui: {_for(sys.stderr, text)}\n")
    sys.stderr.flush()


async def _run_until_signal(
    session: Session, options: HeadlessOptions
) -> tuple[RunResult, signal.Signals | None, bool]:
    """Run the prompt; SIGINT and SIGTERM stop it as the TUI's Stop does. Returns the signal seen,
    and whether a tool call was denied because no one could be asked."""
    received: list[signal.Signals] = []
    unasked: list[ToolEnd] = []
    loop = asyncio.get_running_loop()

    def stop(signum: signal.Signals) -> None:
        received.append(signum)
        session.stop()

    for signum in SIGNAL_EXIT:
        loop.add_signal_handler(signum, stop, signum)
    printer = JsonLinesSink(sys.stdout) if options.output_format == "stream-json" else None

    def sink(event: Event) -> None:
        if printer is not None:
            printer(event)
        if isinstance(event, BudgetWarning):  # said on stderr whatever the output format
            spent, budget = format_usd(event.spent_usd), format_usd(event.budget_usd)
            sys.stderr.write(f"cmdop-tui: budget: {spent} of {budget} spent\n")
        elif isinstance(event, Waiting | Retrying) and printer is None:  # stream-json has them on stdout
            sys.stderr.write(f"cmdop-tui: {_said(event)}\n")
        elif isinstance(event, HookRan) and "failed" in event.decision:  # said whatever the format
            _say(mask(f"{event.event} {event.reason}"))
        elif isinstance(event, Compacted):
            sys.stderr.write(
                f"cmdop-tui: compacted the conversation ({event.tokens_before:,} -> {event.tokens_after:,} tokens)\n"
            )
        elif isinstance(event, ToolEnd) and not event.outcome.ok:
            if event.outcome.kind is OutcomeKind.NO_ONE_TO_ASK:
                unasked.append(event)
            if printer is None or event.outcome.kind is OutcomeKind.NO_ONE_TO_ASK:  # stream-json has it on stdout
                _say(tool_line(event))

    if options.input_format == "stream-json":
        read_steering(sys.stdin, session.steer)
    try:
        result = await session.run(options.prompt, sink)
    finally:
        for signum in SIGNAL_EXIT:
            loop.remove_signal_handler(signum)
    for text in session.runner.steering.take_all():
        _say(f"the run ended before it took this steering: {text}")
    return result, received[0] if received else None, bool(unasked)


def tool_line(event: ToolEnd) -> str:
    """One line for a tool call that did not end ok: `tool execute_command: failed (exit code 1):
    the command exited with code 1`; a denial for want of a person says how to allow it."""
    line = f"tool {event.name}: {event.outcome.described()}"
    return " ".join(line.split())  # one line, whatever the reason held


def read_steering(stream: TextIO | None, steer: Callable[[str], bool]) -> None:
    """Read `stream` line by line in a thread of its own (a blocking read must not hold the
    loop, nor the exit: the thread is a daemon), steering the run with each user message."""

    def read() -> None:
        try:
            for number, line in enumerate(stream or (), 1):
                text = steering_text(line) if line.strip() else ""
                if text is None:
                    _say(f"standard input line {number} is not a user message in stream-json; skipped")
                elif text.strip():
                    steer(text)
        except (OSError, ValueError, UnicodeDecodeError) as exc:  # closed, not text
            _say(f"standard input can no longer be read: {exc}")

    threading.Thread(target=read, name="steering-input", daemon=True).start()


def steering_text(line: str) -> str | None:
    """The text of one stream-json input line (`{"type": "user", "message": {"role": "user",
    "content": str | [text blocks]}}`); None when the line is not such a message."""
    try:
        data = json.loads(line)
    except ValueError:
        return None
    message = data.get("message") if isinstance(data, dict) and data.get("type") == "user" else None
    if not isinstance(message, dict) or message.get("role") != "user":
        return None
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(b, dict) and b.get("type") == "text" for b in content):
        return "\n".join(str(b.get("text", "")) for b in content)
    return None


def _said(event: Waiting | Retrying) -> str:
    if isinstance(event, Waiting):
        return event.describe()
    return f"retrying in {event.delay_s:.1f} s (attempt {event.attempt + 1}): {event.reason}"


def _for(stream: TextIO, text: str) -> str:
    """Text as it may go to `stream`: inert on a terminal, unchanged into a pipe or a file."""
    return strip_terminal_sequences(text) if stream.isatty() else text


def report(result: RunResult, output_format: OutputFormat, signum: signal.Signals | None) -> int:
    if output_format == "json":
        write_json_line(sys.stdout, summary_json(result))
    elif output_format == "text" and (result.status == "final" or result.text):  # a cut answer is still shown
        write_out(sys.stdout, _for(sys.stdout, result.text.rstrip("\n")) + "\n")
    if result.status == "final":
        return EXIT_OK
    reason = _for(sys.stderr, result.message or result.status)
    sys.stderr.write(f"cmdop-tui: {result.status}: {reason}\n")
    sys.stderr.flush()
    if result.status == "cancelled" and signum is not None:
        return SIGNAL_EXIT[signum]
    return EXIT_FAILED
