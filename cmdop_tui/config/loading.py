"""Reading the settings file: TOML to a frozen `Settings`, every value checked, and the
environment applied over it (flags are applied by the CLI: config/flags.py).

Precedence, the same for the TUI and headless mode: command-line flag > environment > file > default.
A bad value is a SettingsError naming the file, the table and the key."""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from cmdop_tui.config.defaults import (
    DEFAULT_ALIASES,
    DEFAULT_PRICES,
)
from cmdop_tui.config.keys import (
    CHECKPOINTS,
    CONTEXT,
    INVENTORY,
    MACHINE,
    MCP_TABLES,
    MODEL,
    NOTIFY,
    PROFILE,
    SANDBOX,
    TOP_LEVEL,
    TOP_LEVEL_KEYS,
)
from cmdop_tui.config.model import (
    AgentProfile,
    CheckpointSettings,
    ContextSettings,
    NotifySettings,
    Settings,
    SettingsError,
    builtin_agents,
)
from cmdop_tui.config.paths import config_path
from cmdop_tui.hooks.shape import HookShapeError, HookTable, from_settings
from cmdop_tui.machines.sandbox_policy import SandboxPolicy
from cmdop_tui.machines.spec import MachineError, MachineSpec


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


def _profile_from(table: Mapping[str, Any], base: AgentProfile, where: str) -> AgentProfile:
    PROFILE.check(table, where)
    values: dict[str, Any] = {
        key: tuple(str(v) for v in value) if isinstance(value, list) else value for key, value in table.items()
    }
    return replace(base, **values)


def _table(data: Mapping[str, Any], key: str, where: str) -> Mapping[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise SettingsError(f"{where}: [{key}] must be a table")
    return value


def settings_from(data: Mapping[str, Any], source: Path | None = None) -> Settings:
    where = str(source or "settings")
    TOP_LEVEL.check(data, where, known=", ".join(sorted(TOP_LEVEL_KEYS)))
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
        context_windows=_model_values(data, where, "context_window"),
        idle_timeouts={model: float(s) for model, s in _model_values(data, where, "idle_timeout_s").items()},
        context=_context(data, where),
        sandbox=_sandbox(data, where),
        checkpoints=_checkpoints(data, where),
        notify=_notify(data, where),
    )
    settings = settings.with_agent(str(selected))
    overrides: dict[str, Any] = {key: str(data[key]) for key in ("router_model", "base_url", "theme") if key in data}
    if "stream" in data:
        overrides["stream"] = bool(data["stream"])
    if "low_bandwidth" in data:
        overrides["low_bandwidth"] = data["low_bandwidth"]
    overrides["machines"] = tuple(_machine_from(n, t, where) for n, t in _table(data, "machines", where).items())
    overrides["groups"] = _groups(_table(data, "groups", where), where)
    overrides["ansible_inventory"] = _ansible_inventory(_table(data, "inventory", where), source, where)
    # kept as written: the MCP servers are read from them by cmdop_tui/mcp/ (above config)
    overrides["mcp_tables"] = {key: _table(data, key, where) for key in MCP_TABLES if key in data}
    overrides["hooks"] = _hooks(_table(data, "hooks", where), where)
    for key in ("ssh_config", "local_model"):
        if key in data:
            overrides[key] = Path(str(data[key])).expanduser()
    if "permission_mode" in data:
        overrides["permission_mode"] = str(data["permission_mode"])
    for key in ("max_budget_usd", "approval_timeout_s"):
        if key in data:
            overrides[key] = float(data[key])
    settings = replace(settings, **overrides)
    return settings


def _hooks(table: Mapping[str, Any], where: str) -> HookTable:
    """`[[hooks.EVENT]]`: read by the hooks' own reader (cmdop_tui/hooks/shape.py)."""
    try:
        return from_settings(table, where)
    except HookShapeError as exc:
        raise SettingsError(str(exc)) from None


def _aliases(table: Mapping[str, Any]) -> dict[str, str]:
    aliases = dict(DEFAULT_ALIASES)
    for name, model in table.items():
        aliases[name if name.startswith("@") else f"@{name}"] = str(model)
    return aliases


def _sandbox(data: Mapping[str, Any], where: str) -> SandboxPolicy:
    """`[sandbox]`: mode (off, workspace, strict), writable (a list of paths), network (bool)."""
    table = _table(data, "sandbox", where)
    SANDBOX.check(table, f"{where}: [sandbox]")
    return SandboxPolicy(
        mode=table.get("mode", "workspace"),
        writable=tuple(table.get("writable", [])),
        network=table.get("network", True),
    )


def _checkpoints(data: Mapping[str, Any], where: str) -> CheckpointSettings:
    """`[checkpoints]`: enabled, max_file_mb, keep_days, skip (machine names)."""
    table = _table(data, "checkpoints", where)
    CHECKPOINTS.check(table, f"{where}: [checkpoints]")
    default = CheckpointSettings()
    return CheckpointSettings(
        enabled=table.get("enabled", default.enabled),
        max_file_mb=float(table.get("max_file_mb", default.max_file_mb)),
        keep_days=table.get("keep_days", default.keep_days),
        skip=tuple(table.get("skip", default.skip)),
    )


def _notify(data: Mapping[str, Any], where: str) -> NotifySettings:
    """`[notify]`: enabled, method (auto, osc9, osc777, bell), min_seconds."""
    table = _table(data, "notify", where)
    NOTIFY.check(table, f"{where}: [notify]")
    default = NotifySettings()
    return NotifySettings(
        enabled=table.get("enabled", default.enabled),
        method=table.get("method", default.method),
        min_seconds=float(table.get("min_seconds", default.min_seconds)),
    )


def _context(data: Mapping[str, Any], where: str) -> ContextSettings:
    """`[context]`: compact_at (a share, 0.3-0.95), tail_tokens, summary_tokens, summary_model."""
    table = _table(data, "context", where)
    CONTEXT.check(table, f"{where}: [context]")
    context = ContextSettings()
    sizes = {key: table.get(key, getattr(context, key)) for key in ("tail_tokens", "summary_tokens")}
    fast_configured = any(name in _table(data, "aliases", where) for name in ("fast", "@fast"))
    summary_model = table.get("summary_model", "@fast" if fast_configured else None)
    return ContextSettings(
        compact_at=float(table.get("compact_at", context.compact_at)),
        summary_model=None if summary_model is None else str(summary_model),
        **sizes,
    )


def _model_values(data: Mapping[str, Any], where: str, key: str) -> dict[str, Any]:
    """`[models."ID"] KEY = V` for every model that sets KEY: `context_window`, the window of a
    model the Models API does not describe; `idle_timeout_s`, how long its stream may go quiet."""
    values: dict[str, Any] = {}
    for model, table in _table(data, "models", where).items():
        place = f'{where}: [models."{model}"]'
        if not isinstance(table, dict):
            raise SettingsError(MODEL.unknown.format(place=place))
        MODEL.check(table, place)
        if key in table:
            values[model] = table[key]
    return values


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
    INVENTORY.check(table, f"{where}: [inventory]")
    if "ansible" not in table:
        return None
    path = Path(table["ansible"]).expanduser()
    return path if path.is_absolute() or source is None else source.parent / path


def _machine_from(name: str, table: Any, where: str) -> MachineSpec:
    place = f"{where}: [machines.{name}]"
    if not isinstance(table, dict):
        raise SettingsError(f"{place} must be a table")
    MACHINE.check(table, place)
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
