"""The settings' data: saved preferences (`Settings`), agent profiles and compaction settings,
and one run's options (`RunOptions`: the command line's, never saved), all frozen; `SettingsError`
for what cannot be used.

Agent profiles (`[agents.NAME]`) bundle how an agent behaves; `agent = "NAME"` (or `--agent`,
or CMDOP_AGENT) picks one. Two ship: `default`, and `autonomous`, which loops until the task is
done (its messages are in config/defaults.py).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, get_args

from cmdop_tui.config.defaults import (
    AUTONOMOUS_BREAKERS,
    AUTONOMOUS_INSTRUCTIONS,
    AUTONOMOUS_LOOP_MESSAGE,
    DEFAULT_ALIASES,
    DEFAULT_PRICES,
)
from cmdop_tui.hooks.shape import HookTable
from cmdop_tui.machines.sandbox_policy import MODES, SandboxMode, SandboxPolicy
from cmdop_tui.machines.spec import MachineSpec

# How freely the model may act (cmdop_tui/permissions/decisions.py decides by it). The names are
# stable: surfaces and the settings file say them. `auto` is what --yes sets.
PermissionMode = Literal["default", "accept_edits", "plan", "auto", "strict"]
PERMISSION_MODES: tuple[PermissionMode, ...] = get_args(PermissionMode)


class SettingsError(Exception):
    """The settings file cannot be used; the message names the file (and line)."""


@dataclass(frozen=True)
class AgentProfile:
    """How one agent behaves: model, limits, loop mode, tool filters, extra instructions."""

    name: str = "default"
    model: str = "@balanced"
    max_turns: int = 30
    max_tokens: int = 8192
    loop: bool = False
    loop_message: str | None = None
    loop_breakers: tuple[str, ...] | None = None
    max_loops: int = 20
    allow_tags: tuple[str, ...] = ()
    hidden_tools: tuple[str, ...] = ()
    instructions: str = ""
    parallel_tools: bool = True
    thinking_budget: int = 0
    sandbox: str | None = None  # this profile's sandbox mode (None: [sandbox] mode)
    sandbox_writable: tuple[str, ...] = ()  # more writable roots for this profile


def builtin_agents() -> dict[str, AgentProfile]:
    return {
        "default": AgentProfile(),
        "autonomous": AgentProfile(
            name="autonomous",
            loop=True,
            loop_message=AUTONOMOUS_LOOP_MESSAGE,
            loop_breakers=AUTONOMOUS_BREAKERS,
            max_loops=20,
            instructions=AUTONOMOUS_INSTRUCTIONS,
        ),
    }


@dataclass(frozen=True)
class ContextSettings:
    """`[context]`: when the conversation is compacted and how much is kept (see agent/compaction.py)."""

    compact_at: float = 0.75  # share of the context window a request may reach
    tail_tokens: int = 20_000  # kept verbatim (scaled down on small windows)
    summary_tokens: int = 4_000  # a summary's cap (scaled down on small windows)
    summary_model: str | None = None  # None: `@fast` when [aliases] sets it, else the session's model


@dataclass(frozen=True)
class CheckpointSettings:
    """`[checkpoints]`: what is kept before a turn changes something, so /rewind can go back."""

    enabled: bool = True
    max_file_mb: float = 10.0  # a larger file is left out of a checkpoint (and named)
    keep_days: int = 30  # a session's checkpoints older than this are removed
    skip: tuple[str, ...] = ()  # machines (names) where no checkpoint is taken


NotifyMethod = Literal["auto", "osc9", "osc777", "bell"]
NOTIFY_METHODS: tuple[NotifyMethod, ...] = get_args(NotifyMethod)


@dataclass(frozen=True)
class NotifySettings:
    """`[notify]`: a desktop notification when the app waits for the user and its terminal is
    not focused (a turn ended, an approval or a question waits, a long command finished)."""

    enabled: bool = True
    method: NotifyMethod = "auto"  # auto: the OSC the terminal reads (tui/notify.py), and the bell
    min_seconds: float = 30.0  # a command that ran this long is worth a notification


@dataclass(frozen=True)
class RunOptions:
    """What one run was asked on the command line (or by a surface) and no file may say."""

    auto_approve: bool = False  # --yes: every tool call allowed without asking
    sandbox_mode: SandboxMode | None = None  # --sandbox: beats the profile and [sandbox]
    local: bool = False  # --local: a local model (llama.cpp) instead of an API
    max_context_tokens: int | None = None  # --max-context-tokens: overrides every window
    target_machine: str | None = None  # --machine: scope the session to this machine
    resume: str | None = None  # --resume: a session id (or prefix) to continue
    continue_latest: bool = False  # --continue: the most recent session


@dataclass(frozen=True)
class Settings:
    agent: AgentProfile = field(default_factory=AgentProfile)  # the profile in use
    agents: Mapping[str, AgentProfile] = field(default_factory=builtin_agents)
    aliases: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_ALIASES))
    prices: Mapping[str, tuple[float, float]] = field(default_factory=lambda: dict(DEFAULT_PRICES))
    context_windows: Mapping[str, int] = field(default_factory=dict)  # [models."ID"] context_window
    idle_timeouts: Mapping[str, float] = field(default_factory=dict)  # [models."ID"] idle_timeout_s
    context: ContextSettings = field(default_factory=lambda: ContextSettings())  # [context]: compaction
    sandbox: SandboxPolicy = field(default_factory=SandboxPolicy)  # [sandbox]
    checkpoints: CheckpointSettings = field(default_factory=lambda: CheckpointSettings())  # [checkpoints]
    max_budget_usd: float | None = None  # per session; warn at 80 %, stop before crossing it
    local_model: Path | None = None  # a .gguf file; None: the bundled SmolLM2
    router_model: str = "@fast"
    stream: bool = True
    base_url: str | None = None
    permission_mode: str = "default"  # one of PERMISSION_MODES (see cmdop_tui/permissions/); --yes is auto
    notify: NotifySettings = field(default_factory=lambda: NotifySettings())  # [notify]
    approval_timeout_s: float = 60.0  # no answer in the approval modal this long means deny
    theme: str = "cmdop-dark"
    low_bandwidth: bool | None = None  # fewer frames, no animations; None: on over SSH (SSH_CONNECTION)
    machines: tuple[MachineSpec, ...] = ()
    groups: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # [groups] web = ["web1", "tag:db"]
    ansible_inventory: Path | None = None  # [inventory] ansible = "path": its hosts as machines
    ssh_config: Path | None = None  # None: the user's ~/.ssh/config (read for Host entries too)
    # [mcp.NAME] and its other spellings, as written: {"mcp": {NAME: table}}; read into servers by
    # cmdop_tui/mcp/ (server_tables.settings_servers), which also reads a project's .mcp.json
    mcp_tables: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    hooks: HookTable = field(default_factory=lambda: HookTable())  # [[hooks.EVENT]] (cmdop_tui/hooks/)
    source: Path | None = None  # the file these were read from
    run: RunOptions = field(default_factory=lambda: RunOptions())  # this run's, from the command line

    def with_run(self, **changes: Any) -> Settings:
        """These settings with this run's options changed (`with_run(local=True)`)."""
        return replace(self, run=replace(self.run, **changes))

    def with_agent(self, name: str) -> Settings:
        """These settings with the profile `name` in use."""
        try:
            return replace(self, agent=self.agents[name])
        except KeyError:
            known = ", ".join(sorted(self.agents))
            raise SettingsError(f"unknown agent profile {name!r} (known: {known})") from None

    def low_bandwidth_mode(self, environ: Mapping[str, str] = os.environ) -> bool:
        """Whether the TUI saves bytes: as set, else on when running over SSH."""
        return self.low_bandwidth if self.low_bandwidth is not None else bool(environ.get("SSH_CONNECTION"))

    def sandbox_policy(self) -> SandboxPolicy:
        """The sandbox in force: --sandbox, else the profile's mode, else [sandbox] mode; the
        writable roots of [sandbox] and of the profile together."""
        mode = self.run.sandbox_mode or self.agent.sandbox or self.sandbox.mode
        if mode not in MODES:
            raise SettingsError(f"unknown sandbox mode {mode!r} (known: {', '.join(MODES)})")
        writable = (*self.sandbox.writable, *self.agent.sandbox_writable)
        return replace(self.sandbox, mode=mode, writable=writable)

    def resolve_model(self, name: str) -> str:
        """A concrete model id for `name`, which may be an alias such as `@fast`."""
        if name.startswith("@"):
            try:
                return self.aliases[name]
            except KeyError:
                known = ", ".join(sorted(self.aliases))
                raise SettingsError(f"unknown model alias {name!r} (known: {known})") from None
        return name
