"""An inventory read by Ansible itself: `ansible-inventory -i PATH --list`.

Ansible then does all of it (plugins, scripts, group_vars and host_vars, precedence); its JSON
gives every host its combined vars (`_meta.hostvars`) and the group tree from `all`. Values are
not templated by `--list`: `{{ ... }}` reaches machine_of as it is written. Its warnings (a
source it could not parse) become notices, one line each.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from cmdop_tui.machines.ansible_hosts import InventoryError
from cmdop_tui.machines.ansible_model import ALL, AnsibleInventory, HostFacts
from cmdop_tui.machines.ansible_run import Deadline, run_bounded

__all__ = ["ansible_facts", "warnings_of"]

_MESSAGE = re.compile(r"^\[(WARNING|ERROR)\]:\s*(.*)$")  # not deprecations: they are Ansible's news
_REDUNDANT = (
    "No inventory was parsed, only implicit localhost is available",
    "provided hosts list is empty, only localhost is available",
    "Invalid characters were found in group names but not replaced",  # Ansible keeps the names
    "Deprecation warnings can be disabled",
)


def ansible_facts(program: Path, path: Path, timeout_s: float) -> tuple[list[HostFacts], list[str]]:
    """The hosts of the inventory at `path` as Ansible sees them, and its warnings. Raises
    InventoryError when ansible-inventory fails, says nothing readable, or takes too long."""
    finished = run_bounded([str(program), f"--inventory={path.absolute()}", "--list"], Deadline.after(timeout_s))
    if finished.status != 0:
        said = [text for kind, text in _messages(finished.stderr) if kind == "ERROR"]
        last = finished.stderr.strip().splitlines()[-1:]
        raise InventoryError(f"ansible-inventory failed ({(said or last or [f'exit {finished.status}'])[0]})")
    notices = warnings_of(finished.stderr)
    try:
        listing = json.loads(finished.stdout.decode("utf-8", "replace"))
    except json.JSONDecodeError as exc:
        raise InventoryError(f"ansible-inventory printed no JSON ({exc})") from None
    if not isinstance(listing, dict):
        raise InventoryError("ansible-inventory printed no JSON object")
    return _facts(listing), notices


def _facts(listing: dict[str, Any]) -> list[HostFacts]:
    inventory = AnsibleInventory()
    meta = listing.get("_meta")
    hostvars = meta.get("hostvars", {}) if isinstance(meta, dict) else {}

    def visit(name: str, path: tuple[str, ...]) -> None:
        body = listing.get(name)
        if name in path or not isinstance(body, dict):
            return
        for host in body.get("hosts", []):
            inventory.add_host(str(host), name)
        for child in body.get("children", []):
            inventory.add_child(name, str(child))
            visit(str(child), (*path, name))

    visit(ALL, ())
    memberships = inventory.groups_of()
    own = hostvars if isinstance(hostvars, dict) else {}
    return [HostFacts(host, dict(own.get(host) or {}), frozenset(memberships[host])) for host in inventory.hosts]


def _messages(stderr: str) -> list[tuple[str, str]]:
    """Ansible's warnings and errors: (WARNING or ERROR, the first line: the rest is detail)."""
    found = []
    for line in stderr.splitlines():
        match = _MESSAGE.match(line.strip())
        if match is not None:
            found.append((match.group(1), match.group(2).strip()))
    return found


def warnings_of(stderr: str) -> list[str]:
    """Ansible's warnings as notices, once each (those that say nothing to the user left out)."""
    found: list[str] = []
    for kind, text in _messages(stderr):
        notice = f"ansible-inventory: {text}" if kind == "WARNING" else f"ansible-inventory: {kind}: {text}"
        if not text.startswith(_REDUNDANT) and notice not in found:
            found.append(notice)
    if any("with 'ini' plugin" in line for line in found):  # an INI file: that YAML failed is no news
        found = [line for line in found if "with 'yaml' plugin" not in line]
    return found
