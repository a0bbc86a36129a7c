"""Ansible's static inventory formats, read as its `ini` and `yaml` plugins read them.

A file either plugin would refuse is refused whole (InventoryError, with its line): Ansible reads
none of its hosts then either. Which plugin reads a file: YAML for `.yml`, `.yaml`, `.json` or no
suffix when the text is a YAML mapping, else INI; TOML for `.toml`. A YAML file that configures an
inventory plugin (`plugin: ...`) needs Ansible itself.
"""

from __future__ import annotations

import ast
import re
import shlex
import tomllib
import warnings
from pathlib import Path
from typing import Any

import yaml

from cmdop_tui.machines.ansible_hosts import InventoryError, host_and_port
from cmdop_tui.machines.ansible_model import UNGROUPED, AnsibleInventory

__all__ = ["Vaulted", "load_yaml", "parse_file", "parse_ini", "parse_toml", "parse_yaml"]

YAML_SUFFIXES = frozenset({".yml", ".yaml", ".json"})
_SECTION = re.compile(r"^\[([^:\]\s]+)(?::(\w+))?\]\s*(?:#.*)?$")
_GROUP_NAME = re.compile(r"^([^:\]\s]+)\s*(?:#.*)?$")
VAULT_HEADER = "$ANSIBLE_VAULT;"


class Vaulted(str):
    """A value Ansible Vault encrypts (`!vault |`): its plain text is not known here."""


class _Loader(yaml.SafeLoader):
    """YAML as Ansible writes it: `!vault` values stay unknown, `!unsafe` ones are plain text."""


_Loader.add_constructor("!vault", lambda loader, node: Vaulted(loader.construct_scalar(node)))  # type: ignore[arg-type]
_Loader.add_constructor("!unsafe", lambda loader, node: loader.construct_scalar(node))  # type: ignore[arg-type]


def load_yaml(text: str) -> Any:
    """YAML (or JSON) text as data; raises InventoryError for text that is neither."""
    try:
        return yaml.load(text, Loader=_Loader)  # a SafeLoader with two more tags
    except yaml.YAMLError as exc:
        raise InventoryError(f"not valid YAML ({' '.join(str(exc).split())})") from None


def parse_file(path: Path, text: str) -> AnsibleInventory:
    """A static inventory file as Ansible reads it; raises InventoryError where it would refuse.

    Ansible tries its YAML plugin first (for `.yml`, `.yaml`, `.json` or no suffix), then INI."""
    if text.startswith(VAULT_HEADER):
        raise InventoryError("it is encrypted with Ansible Vault")
    if path.suffix == ".toml":
        return parse_toml(text)
    if not path.suffix or path.suffix in YAML_SUFFIXES:
        try:
            data = load_yaml(text)
        except InventoryError:
            data = None
        if isinstance(data, dict) and data.get("plugin"):
            raise InventoryError(f"it configures the inventory plugin {data['plugin']!r}, which ansible-inventory runs")
        if isinstance(data, dict) and data:
            try:
                return parse_yaml(data)
            except InventoryError as yaml_error:
                try:  # Ansible then tries it as INI; where that fails too, the YAML error says more
                    return parse_ini(text)
                except InventoryError:
                    raise yaml_error from None
    return parse_ini(text)


# --- INI ---------------------------------------------------------------------------------------


def parse_ini(text: str) -> AnsibleInventory:
    """An INI inventory: hosts, then `[group]`, `[group:children]`, `[group:vars]` sections."""
    inventory = AnsibleInventory()
    group, kind = UNGROUPED, "hosts"
    pending: dict[str, tuple[int, str]] = {}  # groups named before they are defined: line, kind
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        try:
            section = _SECTION.match(line)
            if section:
                group, kind = section.group(1), section.group(2) or "hosts"
                _open_section(inventory, group, kind, number, pending)
            elif line.startswith("[") and line.endswith("]"):
                raise InventoryError(f"invalid section entry: {line!r}")
            elif kind == "hosts":
                _ini_hosts(inventory, group, line)
            elif kind == "vars":
                key, value = _ini_assignment(line, "Expected key=value")
                inventory.group(group).vars[key] = value
            else:
                _ini_child(inventory, group, line, number, pending)
        except InventoryError as exc:
            raise InventoryError(f"line {number}: {exc}") from None
    for name, (number, what) in pending.items():
        raise InventoryError(f"line {number}: [{what}] names the undefined group {name}")
    return inventory


def _open_section(
    inventory: AnsibleInventory, group: str, kind: str, number: int, pending: dict[str, tuple[int, str]]
) -> None:
    if kind not in ("hosts", "children", "vars"):
        raise InventoryError(f"section [{group}:{kind}] has unknown type: {kind}")
    if group not in inventory.groups:
        if kind == "vars":
            pending.setdefault(group, (number, f"{group}:vars"))
        inventory.group(group)
    if kind != "vars":
        pending.pop(group, None)  # defined (as hosts or children): it exists now


def _ini_hosts(inventory: AnsibleInventory, group: str, line: str) -> None:
    try:
        words = shlex.split(line, comments=True)
    except ValueError as exc:
        raise InventoryError(f"cannot read the host line {line!r}: {exc}") from None
    pattern = words[0]
    names, port = host_and_port(pattern)
    if pattern.endswith(":") and port is None:
        raise InventoryError(f"invalid host pattern {pattern!r}: a trailing ':' is for a port")
    variables = dict(_ini_assignment(word, "Expected key=value host variable assignment") for word in words[1:])
    for name in names:
        inventory.add_host(name, group, port)
        inventory.set_host_vars(name, variables)


def _ini_child(
    inventory: AnsibleInventory, group: str, line: str, number: int, pending: dict[str, tuple[int, str]]
) -> None:
    match = _GROUP_NAME.match(line)
    if match is None:
        raise InventoryError(f"Expected group name, got: {line}")
    child = match.group(1)
    if child not in inventory.groups:
        pending.setdefault(child, (number, f"{group}:children"))
    inventory.add_child(group, child)


def _ini_assignment(text: str, expected: str) -> tuple[str, Any]:
    if "=" not in text:
        raise InventoryError(f"{expected}, got: {text}")
    key, value = (part.strip() for part in text.split("=", 1))
    return key, _ini_value(value)


def _ini_value(text: str) -> Any:
    """A Python literal where the text is one (`2222` is a number, `"a b"` a string), else the
    text itself."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)
            return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text


# --- YAML --------------------------------------------------------------------------------------


def parse_yaml(data: dict[Any, Any]) -> AnsibleInventory:
    """A YAML inventory's data: top-level groups, each with `hosts`, `children`, `vars`."""
    inventory = AnsibleInventory()
    for name, body in data.items():
        _yaml_group(inventory, str(name), body)
    return inventory


def _yaml_group(inventory: AnsibleInventory, name: str, body: Any) -> None:
    if not isinstance(body, dict | None):
        return  # Ansible warns and skips it
    inventory.group(name)
    for section in ("vars", "children", "hosts"):
        if isinstance(body, dict) and isinstance(body.get(section), str):
            body[section] = {body[section]: None}
        if isinstance(body, dict) and not isinstance(body.get(section), dict | None):
            raise InventoryError(f"invalid {section!r} entry for the group {name!r}: it must be a mapping")
    for key, value in (body or {}).items():
        if not isinstance(value, dict):
            continue  # not a mapping (Ansible warns), or empty
        if key == "vars":
            inventory.group(name).vars.update(value)
        elif key == "children":
            for child, child_body in value.items():
                _yaml_group(inventory, str(child), child_body)
                inventory.add_child(name, str(child))
        elif key == "hosts":
            for pattern, variables in value.items():
                if not isinstance(pattern, str):
                    raise InventoryError(f"host pattern {pattern} must be a string: quote numbers")
                if not isinstance(variables, dict | None):
                    raise InventoryError(f"the vars of host {pattern} must be a mapping")
                hosts, port = host_and_port(pattern)
                for host in hosts:
                    inventory.add_host(host, name, port)
                    inventory.set_host_vars(host, variables or {})


# --- TOML --------------------------------------------------------------------------------------


def parse_toml(text: str) -> AnsibleInventory:
    """A TOML inventory: `[group.hosts]` (host = { vars }), `[group.vars]`, `group.children = [...]`."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InventoryError(f"not valid TOML ({exc})") from None
    if not data:
        raise InventoryError("the TOML file is empty")
    if data.get("plugin"):
        raise InventoryError(f"it configures the inventory plugin {data['plugin']!r}, which ansible-inventory runs")
    inventory = AnsibleInventory()
    for name, body in data.items():
        _toml_group(inventory, name, body)
    return inventory


def _toml_group(inventory: AnsibleInventory, name: str, body: Any) -> None:
    if not isinstance(body, dict):
        return  # Ansible warns and skips it
    inventory.group(name)
    for key, value in body.items():
        wanted = list if key == "children" else dict
        if key in ("vars", "children", "hosts") and not isinstance(value, wanted):
            raise InventoryError(f"invalid {key!r} entry for the group {name!r}: it must be a {wanted.__name__}")
        if key == "vars":
            inventory.group(name).vars.update(value)
        elif key == "children":
            for child in value:
                _toml_group(inventory, str(child), {})
                inventory.add_child(name, str(child))
        elif key == "hosts":
            for pattern, variables in value.items():
                if not isinstance(variables, dict):
                    raise InventoryError(f"the vars of host {pattern} must be a table")
                hosts, port = host_and_port(pattern)
                for host in hosts:
                    inventory.add_host(host, name, port)
                    inventory.set_host_vars(host, variables or {})
