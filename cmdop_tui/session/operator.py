"""`Operator`: cmdop-tui as a library, for scripts and programs.

Its loop settings read like Open Interpreter's, and it runs the same loop as the app:

    from cmdop_tui import Operator

    operator = Operator(loop=True, approval="auto")
    operator.loop_message = "Carry on with the task. Say 'The task is done.' when it is."
    operator.loop_breakers = ["The task is done."]
    answer = operator.chat("create a folder, write a script that lists the files, run it, tell me the output")

`chat(prompt)` blocks and returns the final answer; `async for event in operator.run(prompt)`
yields the events `--output-format stream-json` prints, as dicts. `steer(text)` sends more to the
running prompt without stopping it (from another thread while `chat` blocks, or from async code
while `run` yields); the model gets it at the run's next step. The conversation carries over
from one prompt to the next (`messages`; `reset()` starts afresh). `turns()` lists the prompts
with what each changed on each machine; `rewind(turn)` goes back to before one: the files (the
present kept first) and the conversation. Settings come from the user's
config file unless `settings` is given; the keyword arguments override them. Use either `chat()`
or `run()` on one operator, and `close()` it (or use it as a context manager) when done.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Sequence
from dataclasses import replace
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, TypeVar

from cmdop_tui.agent.approval import Approval, ToolCall
from cmdop_tui.agent.events import Event
from cmdop_tui.agent.messages import Message
from cmdop_tui.agent.runner import RunResult
from cmdop_tui.agent.steering import SteeringInbox
from cmdop_tui.config.settings import Settings, load_settings
from cmdop_tui.machines.spec import MachineSpec
from cmdop_tui.mcp.asks import ElicitationRequest, Elicited, Elicitor
from cmdop_tui.mcp.forms import FormValue
from cmdop_tui.session.assembly import runner_config
from cmdop_tui.session.rewind import RewindError, Rewound, TurnSummary
from cmdop_tui.session.session import Session
from cmdop_tui.tools.jobs import JobInfo
from cmdop_tui.tools.outcome import OutcomeKind

T = TypeVar("T")
Mode = Literal["default", "strict", "auto"]
#: Decides a tool call the rules leave to the user: True / False, or an Approval with a reason
#: (a call that `needs_person` is allowed only by `Approval(True, by_person=True)`).
Decide = Callable[[ToolCall], "bool | Approval | Awaitable[bool | Approval]"]

#: Answers what an MCP server asks the person (`ElicitationRequest`: a form's `fields`, or a
#: `url` to visit): an `Elicited`, or the form's values as a dict (accepted), or None (declined).
Answer = Callable[
    [ElicitationRequest], "Elicited | dict[str, FormValue] | None | Awaitable[Elicited | dict[str, FormValue] | None]"
]

NOT_BY_PERSON = (
    "only a person may allow this call ({what}), and the operator's approval function allowed it "
    "without saying a person decided (it must return Approval(True, by_person=True) for such a call)"
)


class OperatorError(Exception):
    """A prompt ended without a final answer: an error, a limit or a stop. `result` says which."""

    def __init__(self, result: RunResult) -> None:
        super().__init__(f"{result.status}: {result.message or 'no final answer'}")
        self.result = result


class Operator:
    """An LLM operator that does real work on this machine and on remote ones.

    Settings left None come from the config file (or `settings`). `approval` says what happens
    to tool calls that change things (commands, writes): "default" refuses them unless a
    permission rule allows them, "strict" refuses them, "auto" runs them; or pass a function that
    decides each one (it gets the `ToolCall`, and returns True, False or an `Approval`
    with a reason; it may be async). The safety floor refuses catastrophic commands whatever this says.

    Some calls only a person may allow (`call.needs_person`): running outside the sandbox after
    the sandbox refused it (`call.escalation` says what it refused), and a command the floor
    leaves to a person (`call.person_only` says why). No mode allows those ("auto" included: with
    no function they are refused, and the model is told why), and neither does a function that
    returns True or `Approval(True)`: it must say that a person decided, with
    `Approval(True, by_person=True)`::

        def approve(call: ToolCall) -> Approval:
            if call.needs_person:
                return Approval(input(f"{call.name} {call.input}? [y/N] ") == "y", by_person=True)
            return Approval(True)

    `auto_run=True` is Open Interpreter's name for `approval="auto"`. `machine` scopes the work
    to one machine of the inventory; `machines` adds machines to it (a `MachineSpec`, or an
    address: an ssh alias, `user@host` or `user@host:port`).

    `elicit` answers what an MCP server asks the person (an `ElicitationRequest`: a form, or a
    URL the person should visit; the operator never opens it): return the form's values as a
    dict, None to decline, or an `Elicited`. Without it the server is told no one can answer.
    A server's request to sample the model is asked like a tool call, as
    `mcp__SERVER__sampling` (the approval function, the mode, or a rule decide it).
    """

    def __init__(
        self,
        *,
        model: str | None = None,
        max_turns: int | None = None,
        loop: bool | None = None,
        loop_message: str | None = None,
        loop_breakers: Sequence[str] | None = None,
        max_loops: int | None = None,
        agent: str | None = None,
        machine: str | None = None,
        machines: Sequence[MachineSpec | str] = (),
        approval: Mode | Decide | None = None,
        auto_run: bool | None = None,
        settings: Settings | None = None,
        cwd: Path | str | None = None,
        record: bool = True,
        elicit: Answer | None = None,
    ) -> None:
        self.model = model
        self.elicit = elicit
        self.max_turns = max_turns
        self.loop = loop
        self.loop_message = loop_message
        self.loop_breakers = list(loop_breakers) if loop_breakers is not None else None
        self.max_loops = max_loops
        self.agent = agent
        self.machine = machine
        self.machines = tuple(m if isinstance(m, MachineSpec) else MachineSpec.from_address(m) for m in machines)
        self.approval: Mode | Decide | None = "auto" if auto_run and approval is None else approval
        self.cwd = Path(cwd) if cwd is not None else None
        self.record = record
        self.last_result: RunResult | None = None
        self._base_settings = settings
        self._session: Session | None = None
        self._event_loop: asyncio.Runner | None = None
        self._running: asyncio.Task[RunResult] | None = None
        self._steering = SteeringInbox()  # the session's, from when it opens: steer() works before

    # --- the two ways to run a prompt ---------------------------------------------------------

    def chat(self, prompt: str, on_event: Callable[[dict[str, Any]], None] | None = None) -> str:
        """Run `prompt` to its final answer and return it. Raises OperatorError without one.

        `on_event` sees every event as it happens (the same dicts `run()` yields).
        """
        return self._blocking(self._chat(prompt, on_event), "chat()", "operator.run(prompt)")

    def _blocking(self, work: Coroutine[Any, Any, T], name: str, twin: str) -> T:
        """Run `work` on the operator's own event loop (kept from one call to the next)."""
        if _in_event_loop():
            work.close()
            raise RuntimeError(f"{name} runs its own event loop: in async code use `{twin}`")
        if self._event_loop is None:
            self._event_loop = asyncio.Runner()
        return self._event_loop.run(work)

    async def run(self, prompt: str) -> AsyncIterator[dict[str, Any]]:
        """Run `prompt`, yielding each event as a dict; `last_result` holds the outcome after.

        Leaving early stops the run, as the app's Stop button does: at once inside
        `contextlib.aclosing(operator.run(...))`, else when the next prompt starts.
        """
        session = await self._open()
        events: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        task = self._running = asyncio.create_task(
            session.run(prompt, lambda event: events.put_nowait(event.to_json()))
        )
        task.add_done_callback(lambda _: events.put_nowait(None))
        try:
            while (event := await events.get()) is not None:
                yield event
            self.last_result = task.result()
        finally:
            await self._stop_abandoned()

    async def _stop_abandoned(self) -> None:
        """Stop a run whose events nobody reads any more, and wait until its history is repaired."""
        task, self._running = self._running, None
        if task is not None:
            if not task.done() and self._session is not None:
                self._session.stop()
            self.last_result = await task

    async def _chat(self, prompt: str, on_event: Callable[[dict[str, Any]], None] | None) -> str:
        session = await self._open()
        await self._stop_abandoned()

        def emit(event: Event) -> None:
            if on_event is not None:
                on_event(event.to_json())

        result = self.last_result = await session.run(prompt, emit)
        if result.status != "final":
            raise OperatorError(result)
        return result.text

    # --- steering -------------------------------------------------------------------------------

    def steer(self, text: str) -> bool:
        """Send `text` to the running prompt without stopping it. The model gets it at the run's
        next step: after the current tool calls' results (in the same message), or, when its reply
        was final, as the next message, and the run goes on. Each delivery is an event
        (`{"type": "steering", "text": ...}`). False when `text` is blank.

        Safe from any thread, and it never blocks: call it from another thread while `chat()`
        runs, or from async code (another task, or the loop body) while `run()` yields. Text no
        step took (the run was stopped, or had ended) waits in `pending_steering` and goes with
        the next prompt, after it; `take_steering()` takes it back instead.
        """
        return self._steering.steer(text)

    @property
    def pending_steering(self) -> list[str]:
        """Steering not delivered yet, oldest first."""
        return self._steering.pending()

    def take_steering(self) -> list[str]:
        """Take back the steering not delivered yet (oldest first): it will not be sent."""
        return self._steering.take_all()

    # --- the conversation ---------------------------------------------------------------------

    @property
    def messages(self) -> list[Message]:
        """The conversation so far, as Messages API messages."""
        return list(self._session.runner.conversation.messages) if self._session else []

    def reset(self) -> None:
        """Forget the conversation; the next prompt starts a new one (and a new transcript)."""
        if self._session is not None:
            self._session.new_conversation()

    # --- background jobs ------------------------------------------------------------------------

    def jobs(self) -> list[JobInfo]:
        """The session's background jobs (`background: true` calls), oldest first, as they are
        now. With `chat()`, a job advances while a call of the operator runs; in async code,
        while the event loop does."""
        session = self._session
        return session.jobs.jobs() if session is not None and session.jobs is not None else []

    def kill_job(self, job_id: str) -> JobInfo:
        """Kill a background job and wait until it is gone; its info. KeyError: no such job.
        In async code: `akill_job()`."""
        return self._blocking(self.akill_job(job_id), "kill_job()", "await operator.akill_job(job_id)")

    async def akill_job(self, job_id: str) -> JobInfo:
        session = await self._open()
        if session.jobs is None:
            raise KeyError(job_id)
        return await session.jobs.kill(job_id)

    # --- going back ----------------------------------------------------------------------------

    def turns(self) -> list[TurnSummary]:
        """The prompts of this session, oldest first, each with what it changed on each machine
        (files, lines added and removed) and what no checkpoint can undo. In async code: `aturns()`."""
        return self._blocking(self.aturns(), "turns()", "await operator.aturns()")

    async def aturns(self) -> list[TurnSummary]:
        return await (await self._open()).turns()

    def rewind(
        self, turn: int | None = None, *, files: bool = True, conversation: bool = True, force: bool = False
    ) -> Rewound:
        """Go back to before `turn` (a number from `turns()`; None: the last one): the files on
        every machine it changed, the present kept first (`Rewound.files.undo_turn` undoes it),
        and the conversation. A file changed by someone else since is not overwritten: raises
        RewindConflict (its `paths`) unless `force`; RewindError when there is no such turn.
        In async code: `arewind()`."""
        work = self.arewind(turn, files=files, conversation=conversation, force=force)
        return self._blocking(work, "rewind()", "await operator.arewind()")

    async def arewind(
        self, turn: int | None = None, *, files: bool = True, conversation: bool = True, force: bool = False
    ) -> Rewound:
        session = await self._open()
        if turn is None:
            turns = await session.turns()
            if not turns:
                raise RewindError("no turn to go back to yet")
            turn = turns[-1].turn
        plan = await session.rewind_plan(turn)
        return await session.rewind(plan, files=files, conversation=conversation, force=force)

    # --- the session behind it ----------------------------------------------------------------

    def _with_loop_settings(self, settings: Settings) -> Settings:
        """`settings` with this operator's profile overrides; what it leaves None stays as is."""
        if self.agent:
            settings = settings.with_agent(self.agent)
        overrides: dict[str, Any] = {
            "model": self.model,
            "max_turns": self.max_turns,
            "loop": self.loop,
            "loop_message": self.loop_message,
            "loop_breakers": tuple(self.loop_breakers) if self.loop_breakers is not None else None,
            "max_loops": self.max_loops,
        }
        given = {name: value for name, value in overrides.items() if value is not None}
        return replace(settings, agent=replace(settings.agent, **given))

    def _settings_to_open(self) -> Settings:
        """The config file's settings (or those given), with everything this operator says."""
        settings = self._with_loop_settings(self._base_settings or load_settings())
        if isinstance(self.approval, str):
            settings = replace(settings, permission_mode=self.approval).with_run(auto_approve=self.approval == "auto")
        settings = settings.with_run(target_machine=self.machine or settings.run.target_machine)
        return replace(settings, machines=settings.machines + self.machines)

    async def _open(self) -> Session:
        """The session, opened on first use. Later prompts pick up changed loop settings (model,
        max_turns, loop...); `approval`, `machine` and `machines` are read when it opens."""
        await self._stop_abandoned()
        if self._session is None:
            ask = _approver(self.approval) if callable(self.approval) else None
            elicit = _elicitor(self.elicit) if self.elicit is not None else None
            session = Session(
                self._settings_to_open(), platform="headless", ask=ask, cwd=self.cwd, record=self.record, elicit=elicit
            )
            await session.__aenter__()
            session.runner.steering = self._steering
            self._session = session
        else:
            # On top of the open session's settings, which a local model has made its own.
            settings = self._session.settings = self._with_loop_settings(self._session.settings)
            budget = self._session.runner.config.max_budget_usd
            runner = self._session.runner
            runner.reconfigure(runner_config(settings, runner.cwd), max_budget_usd=budget)
        return self._session

    async def aclose(self) -> None:
        """Close the session: the transcript, the client, the machines' connections."""
        await self._stop_abandoned()
        session, self._session = self._session, None
        if session is not None:
            await session.close()

    def close(self) -> None:
        """Close the session, and the event loop `chat()` runs on. In async code, `await aclose()`."""
        if self._event_loop is not None:
            self._event_loop.run(self.aclose())
            self._event_loop.close()
            self._event_loop = None
        elif self._session is not None:
            if _in_event_loop():
                raise RuntimeError("in async code close the operator with `await operator.aclose()`")
            self._running = None  # its event loop is gone, and the run with it
            asyncio.run(self.aclose())

    def __enter__(self) -> Operator:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    async def __aenter__(self) -> Operator:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


def _in_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _approver(decide: Decide) -> Callable[[ToolCall], Awaitable[Approval]]:
    """A user's decide function (sync or async, bool or Approval) as the loop's approver. A call
    only a person may allow is allowed only when the function says a person decided."""

    async def approve(call: ToolCall) -> Approval:
        answer = decide(call)
        if inspect.isawaitable(answer):
            answer = await answer
        if not isinstance(answer, Approval):
            answer = Approval(bool(answer), "" if answer else "the operator's approval function said no")
        if call.needs_person and answer.allowed and not answer.by_person:
            what = f"outside the sandbox: {call.escalation.needs}" if call.escalation else call.person_only
            return Approval(False, NOT_BY_PERSON.format(what=what), denied_as=OutcomeKind.NO_ONE_TO_ASK)
        return answer

    return approve


def _elicitor(answer: Answer) -> Elicitor:
    """A user's answer function (sync or async: an Elicited, a dict of values, or None) as the
    session's elicitor."""

    async def elicit(request: ElicitationRequest) -> Elicited:
        given = answer(request)
        if inspect.isawaitable(given):
            given = await given
        if given is None:
            return Elicited("decline")
        return given if isinstance(given, Elicited) else Elicited("accept", dict(given))

    return elicit
