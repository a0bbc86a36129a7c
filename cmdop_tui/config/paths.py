"""Where the settings file and the app's data live (platformdirs; CMDOP_TUI_CONFIG overrides the file)."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

APP_NAME = "cmdop-tui"
CONFIG_ENV = "CMDOP_TUI_CONFIG"


def config_dir() -> Path:
    return Path(platformdirs.user_config_dir(APP_NAME))


def data_dir() -> Path:
    return Path(platformdirs.user_data_dir(APP_NAME))


def config_path() -> Path:
    override = os.environ.get(CONFIG_ENV)
    return Path(override) if override else config_dir() / "config.toml"
