"""Wire settings into a ready Runner: the API client, the tool registry, the loop config.

Shared by the TUI and headless mode so both behave the same for the same settings.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

import anthropic

from cmdop_tui.agent.cancel import UICancel
from cmdop_tui.agent.context import Platform, SessionFacts
from cmdop_tui.agent.approval import Approval, Approver, ToolCall
from cmdop_tui.agent.llm import ModelClient
from cmdop_tui.agent.policies import RetryPolicy, StreamPolicy
from cmdop_tui.agent.loop_mode import LoopSettings
from cmdop_tui.agent.routing import ToolPolicy, intent_router_enabled
from cmdop_tui.agent.runner import AgentConfig, Runner
from cmdop_tui.settings import Settings
from cmdop_tui.machines.fleet import Fleet
from cmdop_tui.machines.inventory import Inventory
from cmdop_tui.machines.ssh import SshOptions
from cmdop_tui.tools.ask import ASK_TOOLS
from cmdop_tui.tools.registry import ToolRegistry, builtin_tools

KEY_ENV = "ANTHROPIC_API_KEY"
TOKEN_ENV = "ANTHROPIC_AUTH_TOKEN"
BASE_URL_ENV = "ANTHROPIC_BASE_URL"


class MissingKeyError(Exception):
    """No credentials in the environment."""

    def __init__(self) -> None:
        super().__init__(
            f"no API key: set {KEY_ENV} (or {TOKEN_ENV}); for another Anthropic-compatible "
            f"endpoint also set {BASE_URL_ENV}"
        )


def make_client(settings: Settings, environ: Mapping[str, str] = os.environ) -> anthropic.AsyncAnthropic:
    """The SDK client, its own retries off (tenacity owns retries)."""
    key, token = environ.get(KEY_ENV), environ.get(TOKEN_ENV)
    if not key and not token:
        raise MissingKeyError()
    return anthropic.AsyncAnthropic(
        api_key=key or None,
        auth_token=None if key else token,
        base_url=settings.base_url or environ.get(BASE_URL_ENV) or None,
        max_retries=0,
    )


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
    )


def approval_gate(settings: Settings, ask: Approver | None, *, auto_approve: bool = False) -> Approver:
    """The approver the loop consults for every tool call.

    Tools named in `settings.approve_tools` go to `ask` (the UI's question) unless approval was
    waived (`--yes`); with no way to ask, they are denied with a reason the model can relay.
    """

    async def gate(call: ToolCall) -> Approval:
        if auto_approve or call.name not in settings.approve_tools:
            return Approval(True)
        if ask is None:
            return Approval(False, "no one can approve it here; rerun with --yes to allow such tools")
        return await ask(call)

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
) -> Runner[None, str]:
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


def build_fleet(settings: Settings) -> Fleet:
    """The session's machines: local, settings, ~/.ssh/config (or the configured ssh_config).

    Raises MachineError when the target machine (`--machine`) is unknown or ambiguous.
    """
    user_config = Path.home() / ".ssh" / "config"
    ssh_config = settings.ssh_config or (user_config if user_config.exists() else None)
    inventory = Inventory.load(settings.machines, ssh_config)
    return Fleet(inventory, SshOptions(config_file=settings.ssh_config), target=settings.target_machine)
