"""Settings turned into the parts of a session: the loop's config, the fleet, the runner.

One place, so the TUI, headless mode, `serve` and the remote end of `ask_machine` behave the
same for the same settings.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

import anthropic

from cmdop_tui.agent.approval import Approver, HostRules
from cmdop_tui.agent.cancel import UICancel
from cmdop_tui.agent.compaction import CompactionPolicy
from cmdop_tui.agent.context import Platform, SessionFacts
from cmdop_tui.agent.llm import ModelClient
from cmdop_tui.agent.loop_mode import LoopSettings
from cmdop_tui.agent.policies import RetryPolicy, StreamPolicy
from cmdop_tui.agent.routing import ToolPolicy, intent_router_enabled
from cmdop_tui.agent.runner import AgentConfig, Runner
from cmdop_tui.config.settings import Settings, config_dir, data_dir
from cmdop_tui.machines.fleet import Fleet
from cmdop_tui.machines.sandbox import Sandbox
from cmdop_tui.machines.spec import MachineSpec
from cmdop_tui.session.inventory import SessionMachines, inventory_of
from cmdop_tui.session.local_model import LOCAL_IDLE_TIMEOUT_S, LOCAL_MODEL_PREFIX, LocalModelServer
from cmdop_tui.session.memory import standing_instructions
from cmdop_tui.session.skills import find_skills
from cmdop_tui.tools.ask import ASK_TOOLS
from cmdop_tui.tools.fanout import RUN_ON_MACHINES
from cmdop_tui.tools.job_tools import JOB_TOOLS
from cmdop_tui.tools.recall import RECALL
from cmdop_tui.tools.registry import ToolRegistry, builtin_tools
from cmdop_tui.tools.skill import make_skill_tool, skills_section
from cmdop_tui.tools.todo import TODO


def agent_config(settings: Settings, environ: Mapping[str, str] = os.environ) -> AgentConfig:
    """How the loop behaves under the settings' agent profile."""
    profile = settings.agent
    loop = LoopSettings(enabled=profile.loop, max_loops=profile.max_loops)
    if profile.loop_message is not None:
        loop = replace(loop, message=profile.loop_message)
    if profile.loop_breakers is not None:
        loop = replace(loop, breakers=profile.loop_breakers)
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
        compaction=CompactionPolicy(
            compact_at=settings.context.compact_at,
            tail_tokens=settings.context.tail_tokens,
            summary_tokens=settings.context.summary_tokens,
        ),
        summary_model=settings.resolve_model(summary) if (summary := settings.context.summary_model) else None,
    )


def runner_config(settings: Settings, cwd: Path) -> AgentConfig:
    """`agent_config`, with the standing instructions of the user and of the project in `cwd`,
    and the names and descriptions of the skills there are (the bodies come by the `skill` tool)."""
    config = agent_config(settings)
    parts = [config.extra_instructions, standing_instructions(cwd), skills_section(find_skills(cwd).skills)]
    return replace(config, extra_instructions="\n\n".join(filter(None, parts)))


def build_fleet(settings: Settings, machines: SessionMachines | None = None) -> Fleet:
    """The session's machines (`machines`, else read now): local, settings, the Ansible
    inventory, ~/.ssh/config (or the configured ssh_config); the settings' groups.

    Raises MachineError when the target machine (`--machine`) is unknown or ambiguous.
    """
    machines = machines or inventory_of(settings)
    return Fleet(
        machines.inventory, machines.options, target=settings.run.target_machine, sandbox=build_sandbox(settings)
    )


def build_sandbox(settings: Settings) -> Sandbox:
    """The sandbox of the settings in force, on this machine; the app's own config and data
    directories are hidden from commands too (they hold the rules, the sessions, the logs, the
    jobs' output). The data directory is made first: the sandbox hides only what exists, and a
    first session would otherwise leave it (made later, for the transcript) in plain sight."""
    with contextlib.suppress(OSError):  # a read-only place: there is nothing of ours there to hide
        data_dir().mkdir(mode=0o700, parents=True, exist_ok=True)
    policy = settings.sandbox_policy()
    hidden = (*policy.hidden, str(config_dir()), str(data_dir()))
    return Sandbox.detect(replace(policy, hidden=hidden, data=str(data_dir())))


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
    host_rules: HostRules | None = None,
) -> Runner:
    """A runner for the session. `fleet` defaults to the machines the settings name."""
    fleet = fleet or build_fleet(settings)
    remote_names = tuple(spec.name for spec in fleet.inventory if not spec.is_local)
    facts = facts or SessionFacts.gather(platform_name=platform, cwd=str(cwd) if cwd else None)
    described = tuple(_described(spec) for spec in fleet.inventory if not spec.is_local)
    groups = tuple(f"group {name}" for name in fleet.inventory.groups)
    facts = replace(facts, target_machine=fleet.target_name, machines=(*described, *groups))
    if not facts.sandbox:
        facts = replace(facts, sandbox=fleet.sandbox.describe(cwd or Path.cwd()))
    tools = [*builtin_tools(), *JOB_TOOLS, TODO, RECALL, *((*ASK_TOOLS, RUN_ON_MACHINES) if remote_names else ())]
    skills = find_skills(cwd or Path.cwd()).skills
    if skills:
        tools.append(make_skill_tool(skills))
    config = runner_config(settings, cwd or Path.cwd())
    return Runner(
        model=ModelClient(client, retry, stream_policy(settings, stream)),
        tools=ToolRegistry(tools),
        config=config,
        facts=facts,
        approve=approve,
        ui_cancel=ui_cancel,
        cwd=cwd,
        machines=fleet,
        host_rules=host_rules,
    )


def stream_policy(settings: Settings, stream: StreamPolicy | None = None) -> StreamPolicy:
    """The streaming policy: `stream` (a surface's, a test's) or the settings', with each
    model's idle timeout of the settings (`[models."ID"] idle_timeout_s`) unless `stream` sets one."""
    stream = stream or StreamPolicy(enabled=settings.stream)
    return replace(stream, idle_timeouts={**settings.idle_timeouts, **stream.idle_timeouts})


def _described(spec: MachineSpec) -> str:
    """A machine as the model is told of it: its name, and its tags if it has any."""
    return f"{spec.name} (tags: {', '.join(spec.tags)})" if spec.tags else spec.name


def start_local_model(settings: Settings, server: LocalModelServer | None = None) -> tuple[Settings, LocalModelServer]:
    """Start llama.cpp's server with the configured (or bundled) model; blocks until it serves.

    Pass `server` to keep a handle the caller can stop even if this is interrupted. Returns the
    settings to use with it: the model is named after the file (no price: no cost).
    """
    server = (server or LocalModelServer(settings.local_model)).start()
    return local_settings(settings, server.gguf.stem, server.n_ctx), server


def local_settings(settings: Settings, gguf_stem: str, n_ctx: int) -> Settings:
    """`settings` with the local model of the file `gguf_stem` (served with a window of `n_ctx`) for every agent,
    and its stream given a CPU's patience unless `[models."local:NAME"] idle_timeout_s` says."""
    model = f"{LOCAL_MODEL_PREFIX}{gguf_stem}"
    agents = {name: replace(profile, model=model) for name, profile in settings.agents.items()}
    windows = {**settings.context_windows, model: n_ctx}  # what llama.cpp was started with
    timeouts = {model: LOCAL_IDLE_TIMEOUT_S, **settings.idle_timeouts}  # a CPU's pauses, unless set
    local = replace(settings, agent=replace(settings.agent, model=model), agents=agents, router_model=model)
    return replace(local, context_windows=windows, idle_timeouts=timeouts)
