"""Wire settings into a ready Runner: the API client, the tool registry, the loop config.

Shared by the TUI and headless mode so both behave the same for the same settings.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import anthropic

from cmdop_tui import transcripts as sessions
from cmdop_tui.agent.approval import Approval, Approver, ToolCall
from cmdop_tui.agent.cancel import UICancel
from cmdop_tui.agent.context import Platform, SessionFacts
from cmdop_tui.agent.events import Event
from cmdop_tui.agent.llm import ModelClient
from cmdop_tui.agent.loop_mode import LoopSettings
from cmdop_tui.agent.policies import RetryPolicy, StreamPolicy
from cmdop_tui.agent.routing import ToolPolicy, intent_router_enabled
from cmdop_tui.agent.runner import AgentConfig, Runner
from cmdop_tui.config.settings import Settings
from cmdop_tui.machines.fleet import Fleet
from cmdop_tui.machines.inventory import Inventory
from cmdop_tui.machines.ssh import SshOptions
from cmdop_tui.permissions import Permissions, PermissionsError  # noqa: F401 (the app reaches it through engine)
from cmdop_tui.session.local_model import LocalModelServer
from cmdop_tui.support.secrets import CREDENTIAL_ENV, configured_secrets, redact_json
from cmdop_tui.tools.ask import ASK_TOOLS
from cmdop_tui.tools.registry import ToolRegistry, builtin_tools

_log = logging.getLogger(__name__)
Transcript = sessions.Transcript

KEY_ENV, TOKEN_ENV = CREDENTIAL_ENV  # the API key, or a bearer token
BASE_URL_ENV = "ANTHROPIC_BASE_URL"


class MissingKeyError(Exception):
    """No credentials in the environment."""

    def __init__(self) -> None:
        super().__init__(
            f"no API key: set {KEY_ENV} (or {TOKEN_ENV}); for another Anthropic-compatible "
            f"endpoint also set {BASE_URL_ENV}"
        )


def make_client(
    settings: Settings, environ: Mapping[str, str] = os.environ, *, local: LocalModelServer | None = None
) -> anthropic.AsyncAnthropic:
    """The SDK client, its own retries off (tenacity owns retries). With a local model server it
    talks to that, and needs no key."""
    if local is not None:
        return anthropic.AsyncAnthropic(api_key="local-model", base_url=local.url, max_retries=0)
    key, token = environ.get(KEY_ENV), environ.get(TOKEN_ENV)
    if not key and not token:
        raise MissingKeyError()
    return anthropic.AsyncAnthropic(
        api_key=key or None,
        auth_token=None if key else token,
        base_url=settings.base_url or environ.get(BASE_URL_ENV) or None,
        max_retries=0,
    )


def start_local_model(settings: Settings, server: LocalModelServer | None = None) -> tuple[Settings, LocalModelServer]:
    """Start llama.cpp's server with the configured (or bundled) model; blocks until it serves.

    Pass `server` to keep a handle the caller can stop even if this is interrupted. Returns the
    settings to use with it: the model is named after the file (no price: no cost).
    """
    server = (server or LocalModelServer(settings.local_model)).start()
    model = f"local:{server.gguf.stem}"
    agents = {name: replace(profile, model=model) for name, profile in settings.agents.items()}
    return replace(settings, agent=replace(settings.agent, model=model), agents=agents, router_model=model), server


def agent_config(settings: Settings, environ: Mapping[str, str] = os.environ) -> AgentConfig:
    profile = settings.agent
    loop = LoopSettings(enabled=profile.loop, max_loops=profile.max_loops)
    if profile.loop_message is not None:
        loop = LoopSettings(loop.enabled, profile.loop_message, loop.breakers, loop.max_loops)
    if profile.loop_breakers is not None:
        loop = LoopSettings(loop.enabled, loop.message, profile.loop_breakers, loop.max_loops)
    return AgentConfig(
        model=settings.resolve_model(profile.model),
        max_turns=profile.max_turns,
        max_tokens=profile.max_tokens,
        thinking_budget=profile.thinking_budget,
        parallel_tools=profile.parallel_tools,
        tool_policy=ToolPolicy(frozenset(profile.allow_tags), frozenset(profile.hidden_tools)),
        loop=loop,
        extra_instructions=profile.instructions,
        intent_router=intent_router_enabled(environ),
        router_model=settings.resolve_model(settings.router_model),
        max_budget_usd=settings.max_budget_usd,
        prices=dict(settings.prices),
    )


def load_permissions(settings: Settings) -> Permissions:
    """The rules file, in the mode the settings ask for (`--yes` is auto mode)."""
    return Permissions.load(mode="auto" if settings.auto_approve else settings.permission_mode)


def permission_gate(permissions: Permissions, ask: Approver | None) -> Approver:
    """The approver the loop consults for every tool call: floor, rules, mode, then the user.

    `ask` is the surface's question (TUI modal, terminal prompt); with no way to ask, a call that
    needs asking is denied with a reason the model can relay. Every decision is audited.
    """

    async def gate(call: ToolCall) -> Approval:
        mutating = call.tool.mutating if call.tool is not None else None
        decision = permissions.decide(call.name, call.input, machine=call.machine, mutating=mutating)
        if decision.verdict == "allow":
            approval = Approval(True)
        elif decision.verdict == "deny":
            approval = Approval(False, decision.reason)
        elif ask is None:
            approval = Approval(
                False, "it needs approval and no one can approve it here (rerun with --yes, or add a rule)"
            )
        else:
            approval = await ask(call)
        audited = redact_json(call.input, configured_secrets())  # the audit log is a file: no secrets
        permissions.record(
            decision, call.name, audited, call.machine, outcome="allowed" if approval.allowed else "denied"
        )
        return approval

    return gate


def build_runner(
    settings: Settings,
    *,
    client: anthropic.AsyncAnthropic,
    platform: Platform,
    approve: Approver | None = None,
    ui_cancel: UICancel | None = None,
    cwd: Path | None = None,
    retry: RetryPolicy = RetryPolicy(),
    stream: StreamPolicy | None = None,
    facts: SessionFacts | None = None,
    fleet: Fleet | None = None,
) -> Runner:
    """A runner for the session. `fleet` defaults to the machines the settings name."""
    fleet = fleet or build_fleet(settings)
    remote_names = tuple(spec.name for spec in fleet.inventory if not spec.is_local)
    facts = facts or SessionFacts.gather(platform_name=platform)
    facts = replace(facts, target_machine=fleet.target_name, machines=remote_names)
    tools = builtin_tools() + (list(ASK_TOOLS) if remote_names else [])
    return Runner(
        model=ModelClient(client, retry, stream or StreamPolicy(enabled=settings.stream)),
        tools=ToolRegistry(tools),
        config=agent_config(settings),
        facts=facts,
        approve=approve,
        ui_cancel=ui_cancel,
        cwd=cwd,
        machines=fleet,
    )


SESSION_EVENTS = frozenset({"tool_start", "tool_end", "final", "error", "cancelled", "usage"})


class SessionRecorder:
    """Keeps a runner's conversation and events flowing into the current session transcript.

    One recorder per runner; it can switch sessions (a new one after /clear, a resumed one).
    A transcript that cannot be written (a full disk) is reported once and dropped: it never
    stops a turn.
    """

    def __init__(self, runner: Runner, secrets: list[str] | None = None) -> None:
        self.runner = runner
        self.secrets = configured_secrets() if secrets is None else secrets
        self.transcript: Transcript | None = None
        runner.conversation.listeners.append(self._on_record)
        runner.event_listeners.append(self._on_event)

    @property
    def session_id(self) -> str | None:
        return self.transcript.id if self.transcript else None

    def start(self, settings: Settings) -> list[str]:
        """A new session, or the one `--resume ID` / `--continue` names. Returns notes for the user."""
        session = settings.resume or (sessions.latest() if settings.continue_latest else None)
        if session is not None:
            return self.resume(session)
        self.new()
        return ["there is no earlier session to continue: this is a new one"] if settings.continue_latest else []

    def new(self) -> None:
        self.close()
        self.transcript = sessions.Transcript.create(
            model=self.runner.config.model, cwd=str(self.runner.cwd), extra_secrets=self.secrets
        )

    def resume(self, session: str) -> list[str]:
        """Continue a stored session: its (repaired) history replaces the runner's."""
        transcript, loaded = sessions.resume(session, extra_secrets=self.secrets)
        self.close()
        self.runner.conversation.replace(loaded.messages)  # not recorded: the file already has it
        self.transcript = transcript
        return [f"resumed session {loaded.id} ({len(loaded.messages)} messages)", *loaded.notes]

    def close(self) -> None:
        transcript, self.transcript = self.transcript, None
        if transcript is not None:
            transcript.close()

    def _on_record(self, record: dict[str, Any]) -> None:
        self._write(lambda transcript: transcript.append(record))

    def _on_event(self, event: Event) -> None:
        if event.kind in SESSION_EVENTS:
            fields = event.to_json()
            kind = fields.pop("type")
            self._write(lambda transcript: transcript.event(kind, **fields))

    def _write(self, action: Callable[[Transcript], None]) -> None:
        if self.transcript is None:
            return
        try:
            action(self.transcript)
        except (OSError, ValueError) as exc:
            _log.error("session %s cannot be written any more: %s", self.transcript.id, exc)
            self.close()


def build_fleet(settings: Settings) -> Fleet:
    """The session's machines: local, settings, ~/.ssh/config (or the configured ssh_config).

    Raises MachineError when the target machine (`--machine`) is unknown or ambiguous.
    """
    user_config = Path.home() / ".ssh" / "config"
    ssh_config = settings.ssh_config or (user_config if user_config.exists() else None)
    inventory = Inventory.load(settings.machines, ssh_config)
    return Fleet(inventory, SshOptions(config_file=settings.ssh_config), target=settings.target_machine)
