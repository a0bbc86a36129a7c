"""ask_machine and ask_machines: hand a task to this project's headless agent on other machines.

The remote side is `cmdop-tui -p PROMPT --output-format stream-json --yes` run over ssh; each JSON
line it prints comes back as a nested event of the call (`ask_machine_stream`), so the UI can show
the remote agent's tokens and tool calls under it. Approving ask_machine approves what the remote
agent does for it, hence `--yes` there; the remote permission floor and sandbox still apply. The
remote agent works in the machine's workspace (machines/agent.py), never in its home, which its
sandbox would make writable whole.
Stop kills the remote agent's process group (TERM first, so it can end its turn cleanly).
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from typing import Any

from cmdop_tui.machines.fleet import Fleet
from cmdop_tui.machines.process import DEFAULT_OUTPUT_LIMIT
from cmdop_tui.machines.remote import RemoteMachine
from cmdop_tui.machines.spec import MachineError
from cmdop_tui.support.text import truncate_middle
from cmdop_tui.tools.base import NestedSink, Subject, Tool, ToolContext, ToolResult, capped, host_event
from cmdop_tui.tools.schema import object_schema, prop

ASK_TIMEOUT_MS = 120_000
ASK_MAX_TIMEOUT_MS = 300_000
TOTAL_TIMEOUT_MS = 240_000
TOTAL_MAX_TIMEOUT_MS = 600_000
MAX_PARALLEL = 16  # hosts asked at once; more wait for a free slot
ANSWER_LIMIT = DEFAULT_OUTPUT_LIMIT  # characters of the answers kept, their start and end
HOST_SHARE_MIN = 2_000  # characters of each host's answer kept however many hosts answer
_TAGS = frozenset({"remote"})


@dataclass
class _Answer:
    """What the remote agent said, assembled from its JSON lines."""

    final: str | None = None
    error: str | None = None

    def result(self, machine: str, output: str = "") -> ToolResult:
        """The answer, whole (the caller caps it); else why there is none, with the end of what the
        agent there printed (`output`: its exit line and stderr, say a traceback of a broken install)."""
        if self.final is not None:
            return ToolResult(self.final or "(the remote agent gave an empty answer)")
        if self.error is not None:
            return ToolResult.error(f"the agent on {machine} stopped: {self.error}")
        said = _tail(output)
        return ToolResult.error(f"the agent on {machine} ended without an answer" + (f":\n{said}" if said else ""))


class _JsonLines:
    """Splits streamed stdout into JSON events, forwarding each one as it completes."""

    def __init__(self, machine: str, forward: NestedSink, answer: _Answer) -> None:
        self.machine = machine
        self.forward = forward
        self.answer = answer
        self._pending = ""

    def __call__(self, text: str, stream: str) -> None:
        if stream != "stdout":
            return
        self._pending += text
        *lines, self._pending = self._pending.split("\n")
        for line in lines:
            self._take(line)

    def _take(self, line: str) -> None:
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            return  # not ours (a login banner, say): ignore
        if not isinstance(event, dict):
            return
        kind = event.get("type")
        if kind == "final":
            self.answer.final = str(event.get("text", ""))
        elif kind in ("error", "cancelled"):
            self.answer.error = str(event.get("message") or kind)
        self.forward({**event, "hostname": self.machine})


def _remote(fleet: Fleet | None, hostname: str) -> RemoteMachine:
    if fleet is None:
        raise MachineError("this session has no remote machines")
    machine = fleet.remote(hostname)
    if machine is None:
        raise MachineError("ask_machine is for other machines; work on this one with the other tools")
    return machine


async def ask(fleet: Fleet | None, hostname: str, prompt: str, timeout_ms: int, ctx: ToolContext) -> ToolResult:
    """Run the headless agent on `hostname` and return its final answer."""
    try:
        machine = _remote(fleet, hostname)
    except MachineError as exc:
        return ToolResult.error(str(exc))
    answer = _Answer()
    outcome = await machine.run_agent(
        prompt, timeout_ms=timeout_ms, progress=_JsonLines(machine.name, ctx.nested, answer)
    )
    if outcome.is_error and answer.final is None:
        return ToolResult.error(outcome.text) if answer.error is None else answer.result(machine.name)
    return answer.result(machine.name, outcome.text)


def _tail(output: str, lines: int = 8, limit: int = 1_000) -> str:
    """The last lines of a remote agent's output that are not its JSON events, bounded."""
    kept = [line for line in output.splitlines() if line.strip() and not line.lstrip().startswith("{")]
    return truncate_middle("\n".join(kept[-lines:]), limit)


async def _ask_machine(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    result = await ask(ctx.machines, args["hostname"], args["prompt"], args.get("timeout_ms", ASK_TIMEOUT_MS), ctx)
    # capped as command output is: a 20 MB answer would fill every later request
    return ToolResult(capped(result.content, ANSWER_LIMIT, ctx, "answer"), result.is_error)


class _HostState:
    """One host of ask_machines in the fleet view (`host` events: queued, running, done, failed)."""

    def __init__(self, name: str, ctx: ToolContext) -> None:
        self.name, self.ctx, self.started = name, ctx, time.monotonic()
        self.tell("queued")

    def tell(self, state: str, line: str = "") -> None:
        elapsed = None if state == "queued" else round(time.monotonic() - self.started, 3)
        self.ctx.nested(host_event(self.name, state, line, elapsed))
        if state == "running":
            self.started = time.monotonic()


def _name_of(fleet: Fleet | None, hostname: str) -> str:
    """The machine's own name, as its agent's events carry it."""
    return fleet.canonical(hostname) if fleet is not None else hostname


def _last_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1][:200] if lines else ""


async def _ask_machines(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    hostnames = list(dict.fromkeys(args["hostnames"]))  # duplicates removed, order kept
    per_host = args.get("timeout_ms", ASK_TIMEOUT_MS)
    total = args.get("total_timeout_ms", TOTAL_TIMEOUT_MS) / 1000
    slots = asyncio.Semaphore(MAX_PARALLEL)
    why_cancelled = ["stopped"]  # until the total deadline passes: then that is why

    async def one(hostname: str) -> ToolResult:
        host = _HostState(_name_of(ctx.machines, hostname), ctx)
        try:
            async with slots:
                host.tell("running")
                result = await ask(ctx.machines, hostname, args["prompt"], per_host, ctx)
        except asyncio.CancelledError:
            # Its last word, or the fleet view would show it running for ever.
            host.tell("failed", why_cancelled[0])
            raise
        host.tell("failed" if result.is_error else "done", _last_line(result.content))
        return result

    tasks = {hostname: asyncio.create_task(one(hostname)) for hostname in hostnames}
    try:
        _, late = await asyncio.wait(tasks.values(), timeout=total)
        why_cancelled[0] = "no answer within the total deadline"
    finally:
        for task in tasks.values():
            task.cancel()  # no-op for finished ones; stops the rest (and their remote agents)
        await asyncio.gather(*tasks.values(), return_exceptions=True)
    late_result = ToolResult.error(f"no answer within the total deadline of {total:.0f} s")
    answers = {hostname: late_result if task in late else task.result() for hostname, task in tasks.items()}
    return _keyed(answers, ctx)


def _keyed(answers: dict[str, ToolResult], ctx: ToolContext) -> ToolResult:
    """The hosts' answers keyed by host, sharing one host's budget so that a hundred hosts do not
    make a hundred times the request; when any is cut, all of them are kept whole for `recall`."""
    share = max(HOST_SHARE_MIN, ANSWER_LIMIT // max(1, len(answers)))

    def keyed(limit: int | None) -> str:
        results = {
            hostname: {
                "ok": not result.is_error,
                ("error" if result.is_error else "answer"): result.content
                if limit is None
                else truncate_middle(result.content, limit),
            }
            for hostname, result in answers.items()
        }
        return json.dumps(results, indent=2, ensure_ascii=False)

    whole, shown = keyed(None), keyed(share)
    if shown != whole:
        kept = ctx.keep(whole)
        shown += (
            "\n["
            + (
                f"answers are cut to {share:,} characters each; all of them are kept whole: recall id "
                f"{ctx.call_id!r} pages through them"
                if kept
                else "answers are cut; the cut parts are not kept: this session has no transcript"
            )
            + "]"
        )
    return ToolResult(shown, is_error=all(result.is_error for result in answers.values()))


ASK_MACHINE = Tool(
    name="ask_machine",
    description=(
        "Give a task to the CMDOP operator on another machine and get its answer. It works there "
        "with its own tools (commands, files) in that machine's workspace "
        "(~/.local/share/cmdop-tui-workspace there), not in its home, and reports back. Use it for "
        "multi-step work on one remote machine."
    ),
    input_schema=object_schema(
        {
            "hostname": prop("string", "The machine: a name from the machines list."),
            "prompt": prop("string", "The task, complete and self-contained."),
            "timeout_ms": prop(
                "integer", "Give up after this long (default 120000).", minimum=1000, maximum=ASK_MAX_TIMEOUT_MS
            ),
        },
        required=["hostname", "prompt"],
    ),
    run=_ask_machine,
    tags=_TAGS,
    mutating=True,
    subject=Subject("host", "hostname"),
)

ASK_MACHINES = Tool(
    name="ask_machines",
    description=(
        "Give the same task to the CMDOP operators on several machines at once; answers come "
        "back keyed by machine, in the order given."
    ),
    input_schema=object_schema(
        {
            "hostnames": {"type": "array", "items": {"type": "string"}, "description": "Machine names."},
            "prompt": prop("string", "The task, complete and self-contained."),
            "timeout_ms": prop(
                "integer", "Per-machine limit (default 120000).", minimum=1000, maximum=ASK_MAX_TIMEOUT_MS
            ),
            "total_timeout_ms": prop(
                "integer", "Limit for all of them (default 240000).", minimum=1000, maximum=TOTAL_MAX_TIMEOUT_MS
            ),
        },
        required=["hostnames", "prompt"],
    ),
    run=_ask_machines,
    tags=_TAGS,
    mutating=True,
    subject=Subject("host", "hostnames", many=True),
)

ASK_TOOLS: tuple[Tool, ...] = (ASK_MACHINE, ASK_MACHINES)
