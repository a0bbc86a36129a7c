"""Settings: TOML in the platformdirs config dir, read with tomllib.

Precedence, the same for the TUI and headless mode: command-line flag > environment > file > default.
The API key is never part of the settings: it comes from the environment only, so it never lands
in a file the app writes.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import platformdirs

from cmdop_tui.machines.spec import MachineSpec

APP_NAME = "cmdop-tui"
CONFIG_ENV = "CMDOP_TUI_CONFIG"

DEFAULT_ALIASES: dict[str, str] = {
    "@fast": "claude-haiku-5-5",
    "@balanced": "claude-sonnet-5-5",
    "@smart": "claude-opus-5-5",
}


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


@dataclass(frozen=True)
class Settings:
    agent: AgentProfile = field(default_factory=AgentProfile)
    aliases: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_ALIASES))
    router_model: str = "@fast"
    stream: bool = True
    base_url: str | None = None
    permission_mode: str = "default"  # default | strict | auto (see permissions.py); --yes is auto
    auto_approve: bool = False
    approval_timeout_s: float = 60.0  # no answer in the approval modal this long means deny
    theme: str = "cmdop-dark"
    machines: tuple[MachineSpec, ...] = ()
    ssh_config: Path | None = None  # None: the user's ~/.ssh/config (read for Host entries too)
    target_machine: str | None = None  # scope the session to this machine
    resume: str | None = None  # a session id (or prefix) to continue
    continue_latest: bool = False  # continue the most recent session
    source: Path | None = None

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


def settings_from(data: Mapping[str, Any], source: Path | None = None) -> Settings:
    where = str(source or "settings")
    agent = _profile_from(data.get("agent", {}), AgentProfile(), f"{where}: [agent]")
    aliases = dict(DEFAULT_ALIASES)
    for name, model in data.get("aliases", {}).items():
        aliases[name if name.startswith("@") else f"@{name}"] = str(model)
    settings = Settings(agent=agent, aliases=aliases, source=source)
    for key in ("router_model", "base_url", "theme"):
        if key in data:
            settings = replace(settings, **{key: str(data[key])})
    if "stream" in data:
        settings = replace(settings, stream=bool(data["stream"]))
    machines = data.get("machines", {})
    if not isinstance(machines, dict):
        raise SettingsError(f"{where}: [machines] must be a table of [machines.NAME] tables")
    settings = replace(settings, machines=tuple(_machine_from(n, t, where) for n, t in machines.items()))
    if "ssh_config" in data:
        settings = replace(settings, ssh_config=Path(str(data["ssh_config"])).expanduser())
    if "permission_mode" in data:
        settings = replace(settings, permission_mode=str(data["permission_mode"]))
    return settings


_MACHINE_TYPES: dict[str, type] = {"host": str, "user": str, "port": int, "tags": list, "cmdop": str}


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
    return MachineSpec(
        name=name,
        host=table.get("host", name),
        user=table.get("user"),
        port=table.get("port"),
        tags=tuple(str(t) for t in table.get("tags", [])),
        cmdop=table.get("cmdop", "cmdop-tui"),
    )


def load_settings(path: Path | None = None, environ: Mapping[str, str] = os.environ) -> Settings:
    """File settings with environment overrides applied (flags are applied by the CLI)."""
    path = path or config_path()
    settings = settings_from(read_toml(path), source=path if path.exists() else None)
    if environ.get("CMDOP_MODEL"):
        settings = replace(settings, agent=replace(settings.agent, model=environ["CMDOP_MODEL"]))
    if environ.get("ANTHROPIC_BASE_URL"):
        settings = replace(settings, base_url=environ["ANTHROPIC_BASE_URL"])
    return settings
