"""An inventory path as Ansible takes it: a file, a folder of inventories, or a script.

A folder's entries are read in name order (hidden ones, `group_vars`, `host_vars`, and files
Ansible ignores such as `*.md`, `*.txt`, `*.cfg`, `*.retry`, `*~` left out; subfolders too); a
file that cannot be read is left out with a notice and the others are read. An executable file
is an inventory script: it is run with `--list` (and `--host NAME` where its answer has no
`_meta`), bounded in time. Group and host vars folders are read beside the file, or in the folder.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cmdop_tui.machines.ansible_hosts import InventoryError
from cmdop_tui.machines.ansible_model import AnsibleInventory
from cmdop_tui.machines.ansible_parse import parse_file
from cmdop_tui.machines.ansible_run import Deadline, TookTooLong, run_bounded

__all__ = ["SourceRead", "read_source"]

IGNORED_NAMES = re.compile(
    r"^\.|^host_vars$|^group_vars$|^vars_plugins$|(?:\.pyc|\.pyo|\.swp|\.bak|~|\.rpm|\.md|\.txt|\.rst|\.orig|\.cfg|\.retry)$"
)
MAX_DEPTH = 8  # folders of inventories inside folders, at most this deep


@dataclass
class SourceRead:
    """What one inventory path gave: its hosts and groups, where its vars folders are, and what
    could not be read."""

    inventory: AnsibleInventory = field(default_factory=AnsibleInventory)
    basedir: Path = Path(".")
    notices: list[str] = field(default_factory=list)


def read_source(path: Path, timeout_s: float) -> SourceRead:
    """Read the inventory at `path`, its scripts within `timeout_s` in all. Raises InventoryError
    when nothing there can be read (TookTooLong when its scripts took too long)."""
    deadline = Deadline.after(timeout_s)
    if path.is_dir():
        read = SourceRead(basedir=path)
        _read_folder(path, read, deadline, MAX_DEPTH)
        return read
    read = SourceRead(basedir=path.parent)
    read.inventory = _read_file(path, deadline)
    return read


def _read_folder(folder: Path, read: SourceRead, deadline: Deadline, depth: int) -> None:
    try:
        entries = sorted(folder.iterdir(), key=lambda p: p.name)
    except OSError as exc:
        raise InventoryError(f"cannot list {folder}: {exc.strerror or exc}") from None
    for entry in entries:
        if IGNORED_NAMES.search(entry.name):
            continue
        if entry.is_dir():
            if depth > 0:
                _read_folder(entry, read, deadline, depth - 1)
            continue
        try:
            read.inventory.merge(_read_file(entry, deadline))
        except TookTooLong:
            raise  # the rest would not be read in time either
        except InventoryError as exc:
            read.notices.append(f"Ansible inventory {entry} is not read: {exc}")


def _read_file(path: Path, deadline: Deadline) -> AnsibleInventory:
    if os.access(path, os.X_OK) and path.is_file():
        try:
            return read_script(path, deadline)
        except _NotAProgram:
            pass  # Ansible then reads it as a static file
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeError) as exc:
        raise InventoryError(f"cannot read it: {getattr(exc, 'strerror', None) or exc}") from None
    return parse_file(path, text)


class _NotAProgram(Exception):
    """An executable file the system cannot run (no `#!` line)."""


def read_script(path: Path, deadline: Deadline) -> AnsibleInventory:
    """A dynamic inventory: `path --list`, and `path --host NAME` for hosts when the list has no
    `_meta.hostvars`. Raises InventoryError for a script that fails or answers no JSON object."""
    with path.open("rb") as file:
        if file.read(2) != b"#!":
            raise _NotAProgram
    listing = _script_json(path, ["--list"], deadline)
    if not isinstance(listing, dict):
        raise InventoryError(f"{path} --list did not print a JSON object")
    inventory = AnsibleInventory()
    listed: list[str] = []
    for group, body in listing.items():
        if group != "_meta":
            listed += _script_group(inventory, str(group), body)
    meta = listing.get("_meta")
    hostvars = meta.get("hostvars") if isinstance(meta, dict) else None
    for host in dict.fromkeys(listed):
        got = hostvars.get(host, {}) if isinstance(hostvars, dict) else _script_json(path, ["--host", host], deadline)
        if not isinstance(got, dict):
            raise InventoryError(f"{path} gave {host} vars that are not a JSON object")
        inventory.set_host_vars(host, got)
    return inventory


def _script_json(path: Path, arguments: list[str], deadline: Deadline) -> Any:
    finished = run_bounded([str(path.absolute()), *arguments], deadline)  # a path, never a PATH look-up
    if finished.status != 0:
        last = finished.stderr.strip().splitlines()[-1:] or [f"exit {finished.status}"]
        raise InventoryError(f"{path} {' '.join(arguments)} failed: {last[0]}")
    text = finished.stdout.decode("utf-8", "replace")
    if not text.strip():
        return {}
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InventoryError(f"{path} {' '.join(arguments)} did not print JSON ({exc})") from None


def _script_group(inventory: AnsibleInventory, name: str, body: Any) -> list[str]:
    """A group of a script's answer; returns its hosts."""
    inventory.group(name)
    if not isinstance(body, dict):
        body = {"hosts": body}
    elif not any(key in body for key in ("hosts", "vars", "children")):
        body = {"hosts": [name], "vars": body}
    hosts = body.get("hosts", [])
    if not isinstance(hosts, list) or not isinstance(body.get("vars", {}), dict):
        raise InventoryError(f"the group {name!r} has bad data for its hosts or vars")
    for host in hosts:
        inventory.add_host(str(host), name)
    inventory.group(name).vars.update(body.get("vars", {}))
    for child in body.get("children", []):
        inventory.add_child(name, str(child))
    return [str(host) for host in hosts]
