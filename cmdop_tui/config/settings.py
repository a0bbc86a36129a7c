"""Settings: TOML in the platformdirs config dir, read with tomllib, created on first run as a
commented template (written atomically; the app never rewrites it).

Precedence, the same for the TUI and headless mode: command-line flag > environment > file > default.
The API key is never part of the settings: it comes from the environment only, so it never lands
in a file the app writes.

Agent profiles (`[agents.NAME]`) bundle how an agent behaves; `agent = "NAME"` (or `--agent`,
or CMDOP_AGENT) picks one. Two ship: `default`, and `autonomous`, which loops until the task is
done (its loop message and breakers follow Open Interpreter's voice-assistant profile).
"""

from __future__ import annotations

import os
import shlex
import shutil
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import platformdirs

from cmdop_tui.config.defaults import (
    AUTONOMOUS_BREAKERS,
    AUTONOMOUS_INSTRUCTIONS,
    AUTONOMOUS_LOOP_MESSAGE,
    DEFAULT_ALIASES,
    DEFAULT_PRICES,
)
from cmdop_tui.machines.sandbox import MODES, SandboxMode, SandboxPolicy
from cmdop_tui.machines.spec import MachineError, MachineSpec

APP_NAME = "cmdop-tui"
CONFIG_ENV = "CMDOP_TUI_CONFIG"


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


MCP_TRANSPORTS = ("stdio", "http", "sse")
MCP_CONNECT_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class McpServerSpec:
    """One MCP server: `[mcp.NAME]` in the settings, or an entry of a project's `.mcp.json`.

    `transport` is "stdio" (`command`, `args`, `env`, `cwd`: a child process), "http" (streamable
    HTTP: `url`, `headers`) or "sse" (the older HTTP transport). `timeout_s` bounds connecting
    and listing the tools. `problem` says why an entry of `.mcp.json` cannot be used (it is then
    shown as failed, never fatal). `${VAR}` in any value is expanded when the server starts.
    """

    name: str
    transport: str = "stdio"
    command: str = ""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)
    enabled: bool = True
    timeout_s: float = MCP_CONNECT_TIMEOUT_S
    source: str = "settings"  # "settings" or ".mcp.json"
    problem: str | None = None


@dataclass(frozen=True)
class Settings:
    agent: AgentProfile = field(default_factory=AgentProfile)  # the profile in use
    agents: Mapping[str, AgentProfile] = field(default_factory=builtin_agents)
    aliases: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_ALIASES))
    prices: Mapping[str, tuple[float, float]] = field(default_factory=lambda: dict(DEFAULT_PRICES))
    context_windows: Mapping[str, int] = field(default_factory=dict)  # [models."ID"] context_window
    max_context_tokens: int | None = None  # --max-context-tokens: overrides every window
    context: ContextSettings = field(default_factory=lambda: ContextSettings())  # [context]: compaction
    sandbox: SandboxPolicy = field(default_factory=SandboxPolicy)  # [sandbox]
    sandbox_flag: SandboxMode | None = None  # --sandbox: beats the profile and [sandbox]
    max_budget_usd: float | None = None  # per session; warn at 80 %, stop before crossing it
    local: bool = False  # use a local model (llama.cpp) instead of an API
    local_model: Path | None = None  # a .gguf file; None: the bundled SmolLM2
    router_model: str = "@fast"
    stream: bool = True
    base_url: str | None = None
    permission_mode: str = "default"  # default | strict | auto (see cmdop_tui/permissions/); --yes is auto
    auto_approve: bool = False
    approval_timeout_s: float = 60.0  # no answer in the approval modal this long means deny
    theme: str = "cmdop-dark"
    low_bandwidth: bool | None = None  # fewer frames, no animations; None: on over SSH (SSH_CONNECTION)
    machines: tuple[MachineSpec, ...] = ()
    groups: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # [groups] web = ["web1", "tag:db"]
    ansible_inventory: Path | None = None  # [inventory] ansible = "path": its hosts as machines
    ssh_config: Path | None = None  # None: the user's ~/.ssh/config (read for Host entries too)
    target_machine: str | None = None  # scope the session to this machine
    mcp_servers: tuple[McpServerSpec, ...] = ()  # [mcp.NAME] (a project's .mcp.json is read by the session)
    resume: str | None = None  # a session id (or prefix) to continue
    continue_latest: bool = False  # continue the most recent session
    source: Path | None = None

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
        mode = self.sandbox_flag or self.agent.sandbox or self.sandbox.mode
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


def config_dir() -> Path:
    return Path(platformdirs.user_config_dir(APP_NAME))


def data_dir() -> Path:
    return Path(platformdirs.user_data_dir(APP_NAME))


def config_path() -> Path:
    override = os.environ.get(CONFIG_ENV)
    return Path(override) if override else config_dir() / "config.toml"


def read_toml(path: Path) -> dict[str, Any]:
    """The parsed file, or {} when it does not exist. A broken file is a SettingsError."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise SettingsError(f"{path}: cannot read: {exc.strerror}") from None
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise SettingsError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"{path}: invalid TOML: {exc}") from None


_PROFILE_TYPES: dict[str, type | tuple[type, ...]] = {
    "model": str,
    "max_turns": int,
    "max_tokens": int,
    "loop": bool,
    "loop_message": str,
    "loop_breakers": list,
    "max_loops": int,
    "allow_tags": list,
    "hidden_tools": list,
    "instructions": str,
    "parallel_tools": bool,
    "thinking_budget": int,
    "sandbox": str,
    "sandbox_writable": list,
}


def _profile_from(table: Mapping[str, Any], base: AgentProfile, where: str) -> AgentProfile:
    values: dict[str, Any] = {}
    for key, value in table.items():
        expected = _PROFILE_TYPES.get(key)
        if expected is None:
            raise SettingsError(f"{where}: unknown key {key!r}")
        if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
            raise SettingsError(f"{where}: {key!r} must be {getattr(expected, '__name__', expected)}")
        values[key] = tuple(str(v) for v in value) if isinstance(value, list) else value
    return replace(base, **values)


MCP_TABLES = ("mcp", "mcp_servers", "mcpServers")  # [mcp.NAME]; the other spellings other tools use

TOP_LEVEL_KEYS = frozenset(
    {
        "agent", "agents", "aliases", "prices", "models", "max_budget_usd", "router_model", "base_url", "theme",
        "low_bandwidth",
        "stream", "machines", "ssh_config", "permission_mode", "approval_timeout_s", "local_model", "context",
        "sandbox", "groups", "inventory", *MCP_TABLES,
    }
)  # fmt: skip


def _table(data: Mapping[str, Any], key: str, where: str) -> Mapping[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise SettingsError(f"{where}: [{key}] must be a table")
    return value


def settings_from(data: Mapping[str, Any], source: Path | None = None) -> Settings:
    where = str(source or "settings")
    unknown = sorted(set(data) - TOP_LEVEL_KEYS)
    if unknown:
        raise SettingsError(f"{where}: unknown setting {unknown[0]!r} (known: {', '.join(sorted(TOP_LEVEL_KEYS))})")
    agents = builtin_agents()
    for name, table in _table(data, "agents", where).items():
        if not isinstance(table, dict):
            raise SettingsError(f"{where}: [agents.{name}] must be a table")
        agents[name] = _profile_from(
            table, replace(agents.get(name, AgentProfile()), name=name), f"{where}: [agents.{name}]"
        )
    selected = data.get("agent", "default")
    settings = Settings(agents=agents, source=source)
    if isinstance(selected, dict):  # an [agent] table: overrides for the default profile
        agents["default"] = _profile_from(selected, agents["default"], f"{where}: [agent]")
        selected = "default"
    settings = replace(
        settings,
        aliases=_aliases(_table(data, "aliases", where)),
        prices=_prices(data, where),
        context_windows=_context_windows(data, where),
        context=_context(data, where),
        sandbox=_sandbox(data, where),
    )
    settings = settings.with_agent(str(selected))
    overrides: dict[str, Any] = {key: str(data[key]) for key in ("router_model", "base_url", "theme") if key in data}
    if "stream" in data:
        overrides["stream"] = bool(data["stream"])
    if "low_bandwidth" in data:
        if not isinstance(data["low_bandwidth"], bool):
            raise SettingsError(f"{where}: 'low_bandwidth' must be true or false")
        overrides["low_bandwidth"] = data["low_bandwidth"]
    overrides["machines"] = tuple(_machine_from(n, t, where) for n, t in _table(data, "machines", where).items())
    overrides["groups"] = _groups(_table(data, "groups", where), where)
    overrides["ansible_inventory"] = _ansible_inventory(_table(data, "inventory", where), source, where)
    overrides["mcp_servers"] = tuple(
        mcp_server_from(name, table, f"{where}: [{key}.{name}]")
        for key in MCP_TABLES
        for name, table in _table(data, key, where).items()
    )
    for key in ("ssh_config", "local_model"):
        if key in data:
            overrides[key] = Path(str(data[key])).expanduser()
    if "permission_mode" in data:
        overrides["permission_mode"] = str(data["permission_mode"])
    for key in ("max_budget_usd", "approval_timeout_s"):
        if key in data:
            value = data[key]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise SettingsError(f"{where}: {key!r} must be a positive number")
            overrides[key] = float(value)
    settings = replace(settings, **overrides)
    return settings


def _aliases(table: Mapping[str, Any]) -> dict[str, str]:
    aliases = dict(DEFAULT_ALIASES)
    for name, model in table.items():
        aliases[name if name.startswith("@") else f"@{name}"] = str(model)
    return aliases


def _sandbox(data: Mapping[str, Any], where: str) -> SandboxPolicy:
    """`[sandbox]`: mode (off, workspace, strict), writable (a list of paths), network (bool)."""
    table = _table(data, "sandbox", where)
    unknown = sorted(set(table) - {"mode", "writable", "network"})
    if unknown:
        raise SettingsError(f"{where}: [sandbox] has no setting {unknown[0]!r}")
    mode = table.get("mode", "workspace")
    if mode not in MODES:
        raise SettingsError(f"{where}: [sandbox] mode must be one of {', '.join(MODES)}")
    writable = table.get("writable", [])
    if not isinstance(writable, list) or not all(isinstance(path, str) for path in writable):
        raise SettingsError(f"{where}: [sandbox] writable must be a list of paths")
    network = table.get("network", True)
    if not isinstance(network, bool):
        raise SettingsError(f"{where}: [sandbox] network must be true or false")
    return SandboxPolicy(mode=mode, writable=tuple(writable), network=network)


def _context(data: Mapping[str, Any], where: str) -> ContextSettings:
    """`[context]`: compact_at (a share, 0.3-0.95), tail_tokens, summary_tokens, summary_model."""
    table = _table(data, "context", where)
    unknown = sorted(set(table) - {"compact_at", "tail_tokens", "summary_tokens", "summary_model"})
    if unknown:
        raise SettingsError(f"{where}: [context] has no setting {unknown[0]!r}")
    context = ContextSettings()
    compact_at = table.get("compact_at", context.compact_at)
    if isinstance(compact_at, bool) or not isinstance(compact_at, (int, float)) or not 0.3 <= compact_at <= 0.95:
        raise SettingsError(f"{where}: [context] compact_at must be a share of the window from 0.3 to 0.95")
    sizes = {}
    for key in ("tail_tokens", "summary_tokens"):
        value = table.get(key, getattr(context, key))
        if isinstance(value, bool) or not isinstance(value, int) or value < 256:
            raise SettingsError(f"{where}: [context] {key} must be a number of tokens (>= 256)")
        sizes[key] = value
    fast_configured = any(name in _table(data, "aliases", where) for name in ("fast", "@fast"))
    summary_model = table.get("summary_model", "@fast" if fast_configured else None)
    return ContextSettings(
        compact_at=float(compact_at),
        summary_model=None if summary_model is None else str(summary_model),
        **sizes,
    )


def _context_windows(data: Mapping[str, Any], where: str) -> dict[str, int]:
    """`[models."ID"] context_window = N`: the window of a model the Models API does not describe."""
    windows: dict[str, int] = {}
    for model, table in _table(data, "models", where).items():
        if not isinstance(table, dict) or set(table) - {"context_window"}:
            raise SettingsError(f'{where}: [models."{model}"] takes context_window only')
        window = table.get("context_window")
        if window is None:
            continue
        if isinstance(window, bool) or not isinstance(window, int) or window < 1024:
            raise SettingsError(f'{where}: [models."{model}"] context_window must be a number of tokens (>= 1024)')
        windows[model] = window
    return windows


def _prices(data: Mapping[str, Any], where: str) -> dict[str, tuple[float, float]]:
    prices = dict(DEFAULT_PRICES)
    for model, table in _table(data, "prices", where).items():
        try:
            prices[model] = (float(table["input"]), float(table["output"]))
        except (TypeError, KeyError, ValueError):
            raise SettingsError(
                f'{where}: [prices."{model}"] needs numbers input and output (USD per million tokens)'
            ) from None
    return prices


_MACHINE_TYPES: dict[str, type] = {
    "host": str,
    "user": str,
    "port": int,
    "tags": list,
    "cmdop": str,
    "writable": list,
}


def _groups(table: Mapping[str, Any], where: str) -> dict[str, tuple[str, ...]]:
    """`[groups]`: each a list of machine names, `tag:T` and other groups."""
    groups = {}
    for name, members in table.items():
        if not isinstance(members, list) or not all(isinstance(m, str) for m in members):
            raise SettingsError(f"{where}: [groups] {name!r} must be a list of machine names, tags and groups")
        groups[name] = tuple(members)
    return groups


def _ansible_inventory(table: Mapping[str, Any], source: Path | None, where: str) -> Path | None:
    """`[inventory] ansible = "path"` (relative to the settings file's folder)."""
    unknown = sorted(set(table) - {"ansible"})
    if unknown:
        raise SettingsError(f"{where}: [inventory] has no setting {unknown[0]!r} (known: ansible)")
    if "ansible" not in table:
        return None
    if not isinstance(table["ansible"], str):
        raise SettingsError(f"{where}: [inventory] 'ansible' must be a path")
    path = Path(table["ansible"]).expanduser()
    return path if path.is_absolute() or source is None else source.parent / path


def _machine_from(name: str, table: Any, where: str) -> MachineSpec:
    place = f"{where}: [machines.{name}]"
    if not isinstance(table, dict):
        raise SettingsError(f"{place} must be a table")
    for key, value in table.items():
        expected = _MACHINE_TYPES.get(key)
        if expected is None:
            raise SettingsError(f"{place}: unknown key {key!r} (known: {', '.join(_MACHINE_TYPES)})")
        if not isinstance(value, expected) or isinstance(value, bool):
            raise SettingsError(f"{place}: {key!r} must be {expected.__name__}")
    try:
        return _machine(name, table)
    except MachineError as exc:
        raise SettingsError(f"{place}: {exc}") from None


def _machine(name: str, table: dict[str, Any]) -> MachineSpec:
    return MachineSpec(
        name=name,
        host=table.get("host", name),
        user=table.get("user"),
        port=table.get("port"),
        tags=tuple(str(t) for t in table.get("tags", [])),
        cmdop=table.get("cmdop", "cmdop-tui"),
        writable=tuple(str(w) for w in table.get("writable", [])),
    )


_MCP_KEYS = frozenset(
    {"type", "transport", "command", "args", "env", "cwd", "url", "headers", "enabled", "disabled", "timeout"}
)
_MCP_TRANSPORT_SPELLINGS = {
    "stdio": "stdio",
    "http": "http",
    "streamablehttp": "http",
    "streamable": "http",
    "sse": "sse",
}


def mcp_server_from(name: str, table: Any, where: str, *, source: str = "settings") -> McpServerSpec:
    """An MCP server from its table: `[mcp.NAME]` in the settings, or an entry of `.mcp.json`.

    Takes the spellings other tools use: `type` or `transport` ("stdio", "http",
    "streamable-http", "streamableHttp", "sse"; left out, a `url` means HTTP), `command` as a
    list or as one line when no `args` are given, `args` as one line, `disabled = true`,
    numbers and booleans in `env` and `headers`. Raises SettingsError, naming `where`, for what
    cannot be used (the settings file refuses unknown keys; `.mcp.json` ignores them).
    """
    if not isinstance(table, dict):
        raise SettingsError(f"{where} must be a table")
    unknown = sorted(set(table) - _MCP_KEYS)
    if unknown and source == "settings":
        raise SettingsError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(sorted(_MCP_KEYS))})")
    command, args = _mcp_command(table, where)
    url = _mcp_text(table, "url", where)
    transport = _mcp_transport(table, url, where)
    if transport == "stdio" and not command:
        raise SettingsError(f"{where}: a stdio server needs a command (or give a url for an HTTP server)")
    if transport != "stdio" and not url.startswith(("http://", "https://")):
        raise SettingsError(f"{where}: an {transport} server needs a url starting with http:// or https://")
    timeout = table.get("timeout", MCP_CONNECT_TIMEOUT_S)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        raise SettingsError(f"{where}: timeout must be a positive number of seconds")
    enabled, disabled = table.get("enabled", True), table.get("disabled", False)
    if not isinstance(enabled, bool) or not isinstance(disabled, bool):
        raise SettingsError(f"{where}: enabled and disabled must be true or false")
    cwd = _mcp_text(table, "cwd", where)
    return McpServerSpec(
        name=name,
        transport=transport,
        command=command,
        args=args,
        env=_mcp_strings(table, "env", where),
        cwd=cwd or None,
        url=url,
        headers=_mcp_strings(table, "headers", where),
        enabled=enabled and not disabled,
        timeout_s=float(timeout),
        source=source,
    )


def _mcp_text(table: Mapping[str, Any], key: str, where: str) -> str:
    value = table.get(key, "")
    if not isinstance(value, str):
        raise SettingsError(f"{where}: {key} must be a string")
    return value.strip()


def _mcp_transport(table: Mapping[str, Any], url: str, where: str) -> str:
    given = table.get("type", table.get("transport"))
    if given is None:
        return "http" if url else "stdio"
    spelled = str(given).lower().replace("-", "").replace("_", "").strip()
    if spelled not in _MCP_TRANSPORT_SPELLINGS:
        raise SettingsError(f"{where}: unknown transport {given!r} (stdio, http or sse)")
    return _MCP_TRANSPORT_SPELLINGS[spelled]


def _mcp_command(table: Mapping[str, Any], where: str) -> tuple[str, tuple[str, ...]]:
    """The program and its arguments: `command` (a string or a list) and `args` (a list or a line)."""
    command, args = table.get("command", ""), table.get("args")
    if isinstance(command, list):
        words = [_scalar(word, where, "command") for word in command]
        command, extra = (words[0], words[1:]) if words else ("", [])
    elif isinstance(command, str):
        command, extra = command.strip(), []
        if args is None and " " in command and not shutil.which(command) and not Path(command).exists():
            words = shlex.split(command)  # "npx -y server": a whole line in `command`
            command, extra = words[0], words[1:]
    else:
        raise SettingsError(f"{where}: command must be a string or a list")
    if isinstance(args, str):
        extra += shlex.split(args)
    elif isinstance(args, list):
        extra += [_scalar(arg, where, "args") for arg in args]
    elif args is not None:
        raise SettingsError(f"{where}: args must be a list of strings")
    return command, tuple(extra)


def _mcp_strings(table: Mapping[str, Any], key: str, where: str) -> dict[str, str]:
    """`env` or `headers`: names to strings (numbers and booleans as JSON spells them)."""
    value = table.get(key, {})
    if not isinstance(value, dict):
        raise SettingsError(f"{where}: {key} must be a table of names to strings")
    return {str(name): _scalar(item, where, key) for name, item in value.items()}


def _scalar(value: Any, where: str, key: str) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    raise SettingsError(f"{where}: {key} holds {type(value).__name__}, not a string")


def load_settings(path: Path | None = None, environ: Mapping[str, str] = os.environ) -> Settings:
    """File settings with environment overrides applied (flags are applied by the CLI)."""
    path = path or config_path()
    settings = settings_from(read_toml(path), source=path if path.exists() else None)
    if environ.get("CMDOP_AGENT"):
        settings = settings.with_agent(environ["CMDOP_AGENT"])
    if environ.get("CMDOP_MODEL"):
        settings = replace(settings, agent=replace(settings.agent, model=environ["CMDOP_MODEL"]))
    if environ.get("ANTHROPIC_BASE_URL"):
        settings = replace(settings, base_url=environ["ANTHROPIC_BASE_URL"])
    return settings


FIRST_RUN_TEMPLATE = """\
# cmdop-tui settings. Everything here is optional: a commented line shows the default.
# Precedence: command-line flag > environment > this file > default.
# The API key is never kept here: set ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL for another
# Anthropic-compatible endpoint) in the environment, or run `cmdop-tui --local`.

# The agent profile in use (--agent NAME, or CMDOP_AGENT): "default", "autonomous" or your own.
# agent = "default"

# Stop before a request that would take the session's estimated cost past this (USD).
# max_budget_usd = 5.0

# low_bandwidth = false         # fewer frames, no animations (default: on when over SSH)
# theme = "cmdop-dark"          # also cmdop-light, cmdop-high-contrast, cmdop-amber
# permission_mode = "default"   # default: changes ask; strict: changes refused; auto: like --yes
# approval_timeout_s = 60
# local_model = "~/models/model.gguf"   # for --local; default: the bundled SmolLM2

# [agents.default]
# model = "@balanced"           # an alias below, or a model id
# max_turns = 30
# max_tokens = 8192
# loop = false
# max_loops = 20
# allow_tags = []               # on turn 1 offer only tools with these tags (plus core tools)
# hidden_tools = []
# instructions = ""             # added to the system prompt
# parallel_tools = true
# thinking_budget = 0           # > 0 turns extended thinking on

# [agents.ops]                  # your own profile
# model = "@smart"
# loop = true
# loop_message = "Go on. Say 'The task is done.' when it is."
# loop_breakers = ["The task is done."]

# [aliases]
# fast = "claude-haiku-5-5"
# balanced = "claude-sonnet-5-5"
# smart = "claude-opus-5-5"

# [sandbox]                     # what commands may touch (Linux, bubblewrap)
# mode = "workspace"            # off | workspace (write only here and /tmp) | strict (and no network)
# writable = ["~/projects"]     # more places commands may write
# network = true
#
# [context]                     # when the conversation is compacted (summarised)
# compact_at = 0.75             # share of the context window a request may reach
# tail_tokens = 20000           # the recent part kept word for word
# summary_tokens = 4000         # a summary's cap
# summary_model = "@fast"       # writes the summaries (default: the session's model)
#
# [models."my-local-model"]     # a model's context window in tokens, when the endpoint's
# context_window = 32768        # Models API does not say (otherwise 200,000)

# [prices."claude-sonnet-5-5"]  # USD per million tokens, for the cost estimate and budgets
# input = 3.0
# output = 15.0

# [machines.web1]               # Host entries of ~/.ssh/config are machines too
# host = "10.0.0.21"
# user = "ops"
# port = 22
# tags = ["web"]
# cmdop = "cmdop-tui"           # where cmdop-tui is on that machine (for ask_machine)

# [groups]                      # names for sets of machines (run_on_machines, `machine`)
# web = ["web1", "web2", "tag:db"]
#
# [inventory]                   # an Ansible inventory (INI or YAML): its hosts become
# ansible = "~/ansible/hosts"   # machines, its groups their tags (tag:GROUP)

# [mcp.github]                  # an MCP server over stdio (a project's .mcp.json is read too)
# command = "npx"
# args = ["-y", "@modelcontextprotocol/server-github"]
# env = { GITHUB_TOKEN = "${GITHUB_TOKEN}" }
#
# [mcp.docs]                    # an MCP server over streamable HTTP
# url = "https://mcp.example.com/mcp"
# headers = { Authorization = "Bearer ${DOCS_TOKEN}" }
"""


def ensure_config_file(path: Path | None = None) -> Path | None:
    """Create the commented settings file on first run; returns its path when it was created."""
    path = path or config_path()
    if path.exists():
        return None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.tmp-{os.getpid()}")
        temporary.write_text(FIRST_RUN_TEMPLATE, encoding="utf-8")
        os.replace(temporary, path)  # atomic: a reader sees no file or the whole template
    except OSError:
        return None  # a read-only home must not stop the app
    return path
