"""What commands may do, as settings read it: the sandbox's modes and `SandboxPolicy`. Apart
from machines/sandbox.py (which applies them) so that reading the settings at start-up does not
load bubblewrap, seccomp and the secret scan.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

SandboxMode = Literal["off", "workspace", "strict"]
MODES: tuple[SandboxMode, ...] = ("off", "workspace", "strict")


@dataclass(frozen=True)
class SandboxPolicy:
    """What commands may do: `[sandbox]` in the settings, `--sandbox`, per profile and machine."""

    mode: SandboxMode = "workspace"
    writable: tuple[str, ...] = ()  # more writable roots (`~` allowed)
    network: bool = True
    hidden: tuple[str, ...] = ()  # more paths to hide (the app adds its config and data dirs)
    protected: tuple[str, ...] = ()  # more read-only paths inside writable roots (what MCP servers run)
    data: str = ""  # the app's data folder: the scratch workspace is there (default: the session's own)
