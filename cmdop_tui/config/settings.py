"""Settings: TOML in the platformdirs config dir, read with tomllib, created on first run as a
commented template. The API key is never part of the settings: it comes from the environment only,
so it never lands in a file the app writes.

This module is the front door; the parts live beside it: the data (model.py), what ships
(defaults.py), every key declared once (keys.py), reading and checking the file (loading.py),
the first-run template and the keys' help rendered from the declarations (template.py) and
where files live (paths.py). The `[mcp.NAME]` tables are kept as written (`Settings.mcp_tables`):
MCP servers are read by cmdop_tui/mcp/, which sits above config.
"""

from cmdop_tui.config.defaults import (
    AUTONOMOUS_BREAKERS,
    AUTONOMOUS_INSTRUCTIONS,
    AUTONOMOUS_LOOP_MESSAGE,
    DEFAULT_ALIASES,
    DEFAULT_PRICES,
)
from cmdop_tui.config.keys import MCP_CONNECT_TIMEOUT_S, MCP_TABLES, TOP_LEVEL_KEYS
from cmdop_tui.config.loading import load_settings, read_toml, settings_from
from cmdop_tui.config.model import (
    AgentProfile,
    CheckpointSettings,
    ContextSettings,
    NotifySettings,
    RunOptions,
    Settings,
    SettingsError,
    builtin_agents,
)
from cmdop_tui.config.paths import APP_NAME, CONFIG_ENV, config_dir, config_path, data_dir
from cmdop_tui.config.template import FIRST_RUN_TEMPLATE, ensure_config_file, first_run_template, keys_help
from cmdop_tui.machines.sandbox_policy import SandboxPolicy

__all__ = [
    "APP_NAME",
    "AUTONOMOUS_BREAKERS",
    "AUTONOMOUS_INSTRUCTIONS",
    "AUTONOMOUS_LOOP_MESSAGE",
    "CONFIG_ENV",
    "DEFAULT_ALIASES",
    "DEFAULT_PRICES",
    "FIRST_RUN_TEMPLATE",
    "MCP_CONNECT_TIMEOUT_S",
    "MCP_TABLES",
    "TOP_LEVEL_KEYS",
    "AgentProfile",
    "CheckpointSettings",
    "ContextSettings",
    "NotifySettings",
    "RunOptions",
    "SandboxPolicy",
    "Settings",
    "SettingsError",
    "builtin_agents",
    "config_dir",
    "config_path",
    "data_dir",
    "ensure_config_file",
    "first_run_template",
    "keys_help",
    "load_settings",
    "read_toml",
    "settings_from",
]
