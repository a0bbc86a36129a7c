"""One operator session, opened once and shared by every surface.

A `Session` owns what a conversation needs: the local model (when asked for), the model client,
the permission gate, the fleet of machines, the runner, and the recorder that keeps the
transcript. Headless mode, the TUI, `serve` (one app, hence one session, per browser tab) and the
remote end of `ask_machine` (headless mode on the other host) all open one, and so does the
library's `Operator`; nothing is assembled anywhere else. Its MCP servers (`session.mcp`) start
in the background as it opens: their tools join the runner's registry as each one connects.

    async with Session(settings, platform="headless", ask=TerminalQuestions()) as session:
        result = await session.run(prompt, sink)
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from types import TracebackType

import anthropic

from cmdop_tui.agent.approval import Approver
from cmdop_tui.agent.cancel import Stopped, UICancel
from cmdop_tui.agent.context import Platform, SessionFacts
from cmdop_tui.agent.events import Event
from cmdop_tui.agent.outcome import stopped_before_the_turn
from cmdop_tui.agent.policies import RetryPolicy, StreamPolicy
from cmdop_tui.agent.runner import AgentConfig, EventSink, Runner, RunResult
from cmdop_tui.config.settings import Settings
from cmdop_tui.machines.fleet import Fleet
from cmdop_tui.machines.spec import MachineSpec
from cmdop_tui.mcp import McpServers
from cmdop_tui.mcp.asks import ClientAnswers, Elicitor
from cmdop_tui.mcp.configured import Configured, configured
from cmdop_tui.permissions import Permissions
from cmdop_tui.session.assembly import build_fleet, build_runner, runner_config, start_local_model
from cmdop_tui.session.checkpoint_records import prune as prune_checkpoints
from cmdop_tui.session.checkpoints import Checkpoints
from cmdop_tui.session.client import make_client
from cmdop_tui.session.custom_commands import only_tools
from cmdop_tui.session.gate import host_rules, load_permissions, permission_gate
from cmdop_tui.session.going_back import GoingBack
from cmdop_tui.session.hook_setup import SessionHookPoints, build_hooks, hook_blocked, name_the_session
from cmdop_tui.session.inventory import inventory_of
from cmdop_tui.session.kept_state import StateKeeper
from cmdop_tui.session.local_model import LocalModelServer
from cmdop_tui.session.modes import CYCLE, next_mode
from cmdop_tui.session.recorder import SessionRecorder
from cmdop_tui.session.references import attach_files
from cmdop_tui.session.sandbox_hold import hold_the_sandbox
from cmdop_tui.session.server_asks import ServerAsks, session_roots
from cmdop_tui.session.session_jobs import note_ended_jobs, session_jobs
from cmdop_tui.session.status import ContextReport, SessionStatus
from cmdop_tui.session.user_commands import CommandPlace, UserCommandOutcome, prompt_start, run_user_command
from cmdop_tui.session.windows import ModelFacts, model_facts
from cmdop_tui.support import containment
from cmdop_tui.tools.jobs import JobTable


class Session(GoingBack):
    """Everything one conversation needs, built once; an async context manager.

    `ask` is how this surface asks the user to approve a tool call (None: nobody can, so such
    calls are denied with a reason). `client`, `retry`, `stream`, `facts` and `fleet` replace what
    the session would build itself (tests and benchmarks pin them). With `record` off, nothing is
    written to the transcript store. `mcp_wait_s` bounds how long a run waits for MCP servers
    still connecting before its first request (None: not at all in the TUI, whose panel shows
    them arrive; elsewhere until each has connected or failed, within its own timeout).
    `elicit` is how this surface asks the person what an MCP server wants to know (a form, or a
    URL to visit; None: no one can, and the server is told so). An `offline` session opens
    without the model client and the MCP servers (no key needed): it looks back and rewinds
    (`cmdop-tui rewind`), and runs no prompt.
    """

    def __init__(
        self,
        settings: Settings,
        *,
        platform: Platform,
        ask: Approver | None = None,
        ui_cancel: UICancel | None = None,
        client: anthropic.AsyncAnthropic | None = None,
        retry: RetryPolicy = RetryPolicy(),
        stream: StreamPolicy | None = None,
        facts: SessionFacts | None = None,
        fleet: Fleet | None = None,
        cwd: Path | None = None,
        record: bool = True,
        mcp_wait_s: float | None = None,
        elicit: Elicitor | None = None,
        offline: bool = False,
    ) -> None:
        self.settings = settings
        self.offline = offline
        self.platform: Platform = platform
        self.ask = ask
        self.ui_cancel = ui_cancel or UICancel()
        self.retry = retry
        self.stream = stream
        self.facts = facts
        self.cwd = cwd
        self.record = record
        self.mcp_wait_s = mcp_wait_s
        self.elicit = elicit
        self._sink: EventSink | None = None  # the running turn's, for what MCP servers' sampling costs
        self.notes: list[str] = []  # what the user should be told once the session is open
        self.mcp_notes: list[str] = []  # those of them about MCP servers (a .mcp.json to trust...)
        self.machine_notes: list[str] = []  # of those, what of the machines could not be read
        self._given_client = client
        self._given_fleet = fleet
        self.client: anthropic.AsyncAnthropic | None = None
        self.local_model: LocalModelServer | None = None
        self.permissions: Permissions | None = None
        self.fleet: Fleet | None = None
        self.mcp: McpServers | None = None
        self._runner: Runner | None = None
        self._recorder: SessionRecorder | None = None
        self.checkpoints: Checkpoints | None = None  # what /rewind goes back to
        self.hook_points: SessionHookPoints | None = None  # the session's hooks (session/hook_setup.py)
        self.jobs: JobTable | None = None  # background jobs (session/session_jobs.py), killed by close()
        self._context_at: int | None = None  # the message a `!command`'s output opened, for the next prompt
        self._cleanup = contextlib.AsyncExitStack()  # what close() undoes, newest first
        self._models: dict[str, ModelFacts] = {}  # what the endpoint says of each model used
        # told whenever what `status()` says may have changed (model, budget, loop, target, mode)
        self.status_listeners: list[Callable[[], None]] = []
        self._beyond_cycle: str | None = None  # auto or strict, once the session was in it

    # --- opening and closing ------------------------------------------------------------------

    async def __aenter__(self) -> Session:
        try:
            await self.open()
            if self.record:
                self.notes += self.start_transcript()
        except BaseException:
            await self.close()
            raise
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        await self.close()

    async def open(self) -> None:
        """Start the local model (if the settings ask for one), then build the session's parts.

        Raises MissingKeyError, LocalModelError, MachineError, PermissionsError or SettingsError,
        each with a message for the user; `close()` still cleans up after any of them.
        """
        if self.settings.run.local and self._given_client is None and not self.offline:
            self.local_model = local_model = LocalModelServer(self.settings.local_model)
            self._cleanup.push_async_callback(asyncio.to_thread, local_model.stop)  # even mid-start
            self.settings, _ = await asyncio.to_thread(start_local_model, self.settings, local_model)
        client = self._given_client
        if client is None:  # made off the event loop: loading the CA bundle for TLS takes tens of ms
            client = await asyncio.to_thread(self._make_client)
            self._cleanup.push_async_callback(client.close)
        self.client = client
        self.permissions = load_permissions(self.settings)
        self.fleet = self._given_fleet or await self._build_fleet()
        if not self.fleet.sandbox.active and self._given_fleet is None:
            self.notes.append(
                "no sandbox: commands run with your full access (install bubblewrap for one); "
                "the safety floor and approvals still apply"
            )
        self._cleanup.push_async_callback(self.fleet.close)
        mcp = configured(self.settings, self.cwd or Path.cwd())
        fleet = self.fleet
        self.notes += hold_the_sandbox(fleet, mcp.servers, self.cwd or Path.cwd(), self.settings.ansible_inventory)
        self._cleanup.callback(fleet.sandbox.state.close)
        # Background jobs the session's commands left (`server &`) end with the session.
        self._cleanup.push_async_callback(asyncio.to_thread, containment.end_background_jobs)
        self.jobs = session_jobs(lambda: self._recorder.transcript_path if self._recorder else None, self._emit)
        self._cleanup.push_async_callback(self.jobs.close)  # before the machines' connections close
        hooks, hook_notes = build_hooks(self.settings, self.cwd or Path.cwd(), fleet, self.permissions, self._emit)
        self.notes += hook_notes
        self.hook_points = points = SessionHookPoints(hooks, "resume" if self.settings.run.resume else "startup")
        self._cleanup.callback(points.close)
        gate = permission_gate(self.permissions, points.asking(self.ask), self.fleet, hooks)
        self._runner = build_runner(
            self.settings,
            client=self.client,
            platform=self.platform,
            approve=gate,
            ui_cancel=self.ui_cancel,
            cwd=self.cwd,
            retry=self.retry,
            stream=self.stream,
            facts=self.facts,
            fleet=self.fleet,
            host_rules=host_rules(self.permissions, self.fleet),
        )
        self._runner.hooks, self._runner.jobs = hooks, self.jobs
        self.permissions.working_tree = str(self._runner.cwd)  # where accept_edits lets edits through
        self.set_mode(self.permissions.mode)
        if not self.offline:
            runner = self._runner  # the roots as the sandbox is when a server asks
            roots = lambda: session_roots(runner, fleet.sandbox)  # noqa: E731
            asks = ServerAsks(runner, self.client, gate, roots, self.elicit, self._emit)
            self._start_mcp(self._runner, mcp, asks.answers())
        await self._record_and_keep(self._runner, fleet)

    async def _record_and_keep(self, runner: Runner, fleet: Fleet) -> None:
        """The transcript's recorder, and the checkpoints of what turns change (/rewind)."""
        self._recorder = recorder = SessionRecorder(runner)
        self._cleanup.callback(recorder.close)
        if runner.hooks is not None:
            name_the_session(runner.hooks, recorder)
        self.checkpoints = Checkpoints(
            fleet,
            self.cwd or Path.cwd(),
            self.settings.checkpoints,
            say=recorder.say,
            session=lambda: recorder.session_id,
        )
        runner.changes = self.checkpoints
        StateKeeper(self)  # its model, agent, mode and spend kept in the transcript, and taken back on resume
        await asyncio.to_thread(prune_checkpoints, self.settings.checkpoints.keep_days)

    def _make_client(self) -> anthropic.AsyncAnthropic:
        """The settings' client; offline, one without a key that is never asked (`run` refuses)."""
        if self.offline:
            return anthropic.AsyncAnthropic(api_key="", max_retries=0)
        return make_client(self.settings, local=self.local_model)

    async def _build_fleet(self) -> Fleet:
        """The settings' machines, read off the event loop (ansible-inventory takes a second or
        more); what could not be read is kept in `machine_notes` (and `notes`)."""
        machines = await asyncio.to_thread(inventory_of, self.settings)
        self.machine_notes = list(machines.notices)
        self.notes += machines.notices
        return build_fleet(self.settings, machines)

    def _start_mcp(self, runner: Runner, found: Configured, answers: ClientAnswers) -> None:
        """Start the MCP servers of the settings and of the project's `.mcp.json`, in the
        background (this returns at once); each one's tools join the runner's registry when it
        has connected, and leave it when the session closes. A project's servers waiting for
        trust are shown, not started. `answers`: what the servers are told when they ask (roots,
        sampling, elicitation: session/server_asks.py)."""
        self.notes += found.notes
        self.mcp_notes = list(found.notes)
        self.mcp = McpServers(found.servers, runner.tools, cwd=runner.cwd, untrusted=found.untrusted, answers=answers)
        self._cleanup.push_async_callback(self.mcp.close)
        self.mcp.start()

    def _emit(self, event: Event) -> None:
        """To the running turn's sink (what a server's sampling cost); between turns, nowhere."""
        if self._sink is not None:
            self._sink(event)

    def start_transcript(self) -> list[str]:
        """Record a new transcript, or continue the one `--continue` / `--resume` names.

        Returns notes for the user; raises SessionError when the named session cannot be had.
        """
        return self.recorder.start(self.settings)

    async def close(self) -> None:
        """Close the transcript, the machines' connections and the client; stop the local model.

        Each step runs even when one before it fails (the first failure is raised after).
        """
        await self._cleanup.aclose()

    # --- using it -----------------------------------------------------------------------------

    @property
    def runner(self) -> Runner:
        if self._runner is None:
            raise RuntimeError("the session is not open")
        return self._runner

    @property
    def recorder(self) -> SessionRecorder:
        if self._recorder is None:
            raise RuntimeError("the session is not open")
        return self._recorder

    async def run(self, prompt: str, emit: EventSink, *, tools: frozenset[str] | None = None) -> RunResult:
        """One prompt through the loop, to a final answer, a limit, an error or a cancel;
        `tools`: the only tools it may use (a custom command's allowed-tools; None: all)."""
        if self.offline:
            raise RuntimeError("an offline session runs no prompt")
        if (stopped := await self._begin(emit)) is not None:
            return stopped
        self._sink = emit
        checkpoints, opened, self._context_at = self.checkpoints, self._context_at, None
        if checkpoints is not None:
            checkpoints.begin_turn(prompt, prompt_start(self.runner.conversation, opened))
        try:  # the files its @references name go with it (session/references.py); a Stop stops both
            hook = self.hook_points.prompt(prompt) if self.hook_points else None
            prompt, blocked = await self.ui_cancel.stoppable(hook) if hook else (prompt, None)
            if blocked is not None:
                return hook_blocked(blocked, emit)
            if self.jobs is not None:  # jobs that ended unseen: a note with the prompt
                note_ended_jobs(self.jobs, self.runner.conversation)
            with only_tools(self.runner, tools):
                files = attach_files(prompt, self.fleet, self.permissions, self.runner.cwd)
                return await self.runner.run(await self.ui_cancel.stoppable(files), emit)
        except Stopped:
            return stopped_before_the_turn(emit)
        finally:
            self._sink = None
            self._learn_window()
            if checkpoints is not None:
                await checkpoints.end_turn()

    async def run_user_command(self, command: str, emit: EventSink) -> UserCommandOutcome:
        """`!command`: run by the user on the session's machine, no approval, in the sandbox; the
        model reads it with the next prompt, no turn starts (session/user_commands.py)."""
        assert self.fleet is not None, "the session is not open"
        place = CommandPlace(self.fleet, self.runner.conversation, self.checkpoints, self.ui_cancel, self.runner.cwd)
        outcome = await run_user_command(place, command, emit)
        self._context_at = outcome.opened if outcome.opened is not None else self._context_at
        return outcome

    async def _begin(self, emit: EventSink, *, with_mcp: bool = True) -> RunResult | None:
        """A run starts: a Stop from now on is for it, while MCP servers still connect (their tools
        are there from the first turn: `mcp_wait_s`) too. Its result if a Stop came; None: go on."""
        self.ui_cancel.reset()
        try:
            if with_mcp and (servers := self.mcp) is not None and servers.connecting:
                wait = self.mcp_wait_s
                if wait is None:
                    wait = 0.0 if self.platform == "tui" else servers.longest_connect_s()
                if wait > 0:
                    await servers.wait(wait, stop=lambda: self.ui_cancel.fired)
                if self.ui_cancel.fired:
                    raise Stopped
            await self.ui_cancel.stoppable(self._set_window())
        except Stopped:
            return stopped_before_the_turn(emit)
        return None

    async def compact(self, emit: EventSink, instructions: str = "") -> RunResult:
        """Compact the conversation now (/compact); Stop cancels it like a turn."""
        if (stopped := await self._begin(emit, with_mcp=False)) is not None:
            return stopped
        return await self.runner.compact(emit, instructions)

    async def _set_window(self) -> None:
        facts = await self.model_facts()
        config = self.runner.config
        known = (config.context_window, config.server_compaction, config.image_input)
        if known != (facts.window, facts.server_compaction, facts.image_input):
            self.runner.reconfigure(
                context_window=facts.window, server_compaction=facts.server_compaction, image_input=facts.image_input
            )

    def _learn_window(self) -> None:
        """What a refusal said (a smaller window, no server-side compaction) holds from now on."""
        config, known = self.runner.config, self._models.get(self.runner.config.model)
        if known is None or config.context_window is None:
            return
        window = min(known.window, config.context_window)
        self._models[config.model] = replace(
            known, window=window, server_compaction=known.server_compaction and config.server_compaction
        )

    def stop(self) -> None:
        """The UI's cancel: the running turn ends at once, and the conversation stays valid."""
        self.ui_cancel.fire()

    def steer(self, text: str) -> bool:
        """Send `text` to the running turn without stopping it: the model gets it at the turn's
        next step (after the current tool results, or instead of ending after a final reply).
        Safe from any thread. What no step took (a Stop, no turn running) goes with the next
        prompt; `runner.steering` shows it and gives it back. False when `text` is blank."""
        return self.runner.steering.steer(text)

    def use_agent(self, name: str) -> AgentConfig:
        """Switch to another agent profile from the next prompt; the session's budget stays.

        Raises SettingsError for an unknown profile.
        """
        settings = self.settings.with_agent(name)
        config = runner_config(settings, self.runner.cwd)
        self.settings = settings
        self.runner.reconfigure(config, max_budget_usd=self.runner.config.max_budget_usd)
        self._status_changed()
        return config

    async def context_window(self) -> int:
        """The current model's context window in tokens (asked of the Models API once a model)."""
        return (await self.model_facts()).window

    async def model_facts(self) -> ModelFacts:
        """What the endpoint says of the current model (asked of the Models API once a model)."""
        model = self.runner.config.model
        if model not in self._models:
            assert self.client is not None
            self._models[model] = await model_facts(self.client, model, self.settings)
        return self._models[model]

    def reload_memory(self) -> None:
        """Read the standing instructions again (after /memory), for the next request."""
        fresh = runner_config(self.settings, self.runner.cwd)
        self.runner.reconfigure(extra_instructions=fresh.extra_instructions)

    def new_conversation(self) -> None:
        """Forget the conversation; a recorded one continues in a new transcript (the old stays whole)."""
        if self.record:
            for note in self.recorder.new():  # why there is no transcript now, said at once
                self.recorder.say(note)
        self.runner.conversation.clear()
        self.runner.forget_measurements()

    def use_model(self, name: str) -> str:
        """Switch model (an id or an alias) from the next request; returns the model id.

        Raises SettingsError for an unknown alias.
        """
        model = self.settings.resolve_model(name)
        self.runner.reconfigure(model=model)
        self._status_changed()
        return model

    def set_loop(self, enabled: bool) -> None:
        """Loop mode on or off, from the next prompt."""
        self.runner.reconfigure(loop=replace(self.runner.config.loop, enabled=enabled))
        self._status_changed()

    def set_budget(self, usd: float | None) -> None:
        """The session's spending limit (None: none); what was spent so far stays counted."""
        self.runner.reconfigure(max_budget_usd=usd)
        self._status_changed()

    def set_target(self, machine: str) -> MachineSpec | None:
        """Work on `machine` from the next turn (the local one: no scope). Raises MachineError."""
        if self.fleet is None:
            raise RuntimeError("the session is not open")
        target = self.fleet.set_target(machine)
        self.runner.facts = replace(self.runner.facts, target_machine=self.fleet.target_name)
        self._status_changed()
        return target

    def set_mode(self, name: str) -> str:
        """How freely the model may act, from its next tool call: one of PERMISSION_MODES
        (ValueError for another name); plan mode is told to the model in each request."""
        if self.permissions is None:
            raise RuntimeError("the session is not open")
        self.permissions.mode = name
        if name not in CYCLE:
            self._beyond_cycle = name
        self.runner.facts = replace(self.runner.facts, plan_mode=self.permissions.mode == "plan")
        self._status_changed()
        return self.permissions.mode

    def next_mode(self) -> str:
        """The mode one key press moves to (see session/modes.py); not set until `set_mode`."""
        return next_mode(self.permissions.mode if self.permissions else "default", self._beyond_cycle)

    # --- what a surface shows -----------------------------------------------------------------

    def _status_changed(self) -> None:
        for listener in self.status_listeners:
            listener()

    @property
    def model_name(self) -> str:
        """The model the next request goes to."""
        return self.runner.config.model

    @property
    def working_dir(self) -> Path:
        """The directory the conversation works in (where skills and .mcp.json are found)."""
        return self.runner.cwd

    @property
    def spent_usd(self) -> float:
        """About what this session has cost so far."""
        return self.runner.spent_usd

    @property
    def budget_usd(self) -> float | None:
        """The session's spending limit (None: none)."""
        return self.runner.config.max_budget_usd

    def status(self) -> SessionStatus:
        """What the status line says of this session."""
        config = self.runner.config
        return SessionStatus(
            model=config.model,
            budget_usd=config.max_budget_usd,
            machine=(self.fleet.target_name if self.fleet else None) or "local",
            sandbox=self.fleet.sandbox.label if self.fleet else "",
            mode=self.permissions.mode if self.permissions else "default",
            loop_enabled=config.loop.enabled,
            max_loops=config.loop.max_loops,
            cost_usd=self.spent_usd or None,
        )

    async def context_report(self) -> ContextReport:
        """What fills the context: the window, the last request's size, the next one's estimate."""
        window = await self.context_window()
        return ContextReport(window, self.runner.context_usage(), self.runner.last_context_tokens)
