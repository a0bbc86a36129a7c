"""What a session makes read-only to its commands before the first one runs: the Ansible
inventory (and a working directory inside an inventory folder is no writable root) and what
the MCP servers run; then the scan of secrets starts."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from cmdop_tui.machines.fleet import Fleet
from cmdop_tui.machines.sandbox import Sandbox
from cmdop_tui.mcp import McpServerSpec
from cmdop_tui.mcp.files import server_files


def hold_the_sandbox(fleet: Fleet, specs: Sequence[McpServerSpec], cwd: Path, inventory: Path | None) -> list[str]:
    """Make the Ansible inventory and what the MCP servers run read-only to commands, start
    the scan of secrets, and say where commands write when the working directory may not be
    written whole."""
    sandbox = fleet.sandbox
    if not sandbox.confines:
        return []
    # The inventory first: a working directory inside an inventory folder is no writable root.
    sandbox = _protecting(sandbox, _inventory_files(inventory, cwd))
    roots = sandbox.writable_roots(cwd)
    fleet.sandbox = sandbox = _protecting(
        sandbox, [str(path) for spec in specs for path in server_files(spec, cwd, writable=roots)]
    )
    sandbox.prepare(cwd)
    workspace = sandbox.workspace_for(cwd)
    if workspace == cwd:
        return []
    return [
        f"{cwd} is not made writable to commands whole ({sandbox.why_unsafe(cwd)}); they write in the "
        f"scratch workspace {workspace}, and read everything else as it is"
    ]


def _inventory_files(inventory: Path | None, cwd: Path) -> list[str]:
    """What reading the Ansible inventory runs or reads: made read-only to commands, and a
    folder of it holding the working directory makes that no writable root."""
    if inventory is None:
        return []
    from cmdop_tui.machines.ansible import inventory_files  # it brings the YAML parser

    return [os.path.abspath(path) for path in inventory_files(inventory, cwd)]


def _protecting(sandbox: Sandbox, paths: list[str]) -> Sandbox:
    """`sandbox` with `paths` read-only to commands too."""
    return replace(sandbox, policy=replace(sandbox.policy, protected=(*sandbox.policy.protected, *paths)))
