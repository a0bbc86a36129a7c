"""A host's combined Ansible vars as a machine: how ssh reaches it, as Ansible's ssh plugin would.

Read (where two names mean one thing, the second wins, as in Ansible):
- address: `ansible_host`, `ansible_ssh_host` (else the inventory name); user: `ansible_user`,
  `ansible_ssh_user`; port: `ansible_port`, `ansible_ssh_port`;
- key: `ansible_private_key_file`, `ansible_ssh_private_key_file` (ssh `-i`);
- `ansible_ssh_common_args` and `ansible_ssh_extra_args`: ssh options (`-o K=V`, `-J`, `-i`, `-p`,
  `-l`, `-A`, `-C`, `-4`, `-6`), each kept as one `-o K=V` so that no value can become a host or
  another argument; an option that would change how the app talks to the machine
  (`RemoteCommand`, `RequestTTY`, ...) or one not read here skips the host;
- `ansible_connection`: `ssh`, `smart`, `paramiko` reach it over ssh; `local` makes it this
  machine (its commands run here, under its inventory name and groups); any other (winrm,
  docker, network_cli...) skips the host.
- `{{ name }}` in those values is the host's var `name` (or `inventory_hostname`); any other Jinja
  (filters, tests, `{% if %}`, `hostvars[...]`) is not rendered here and skips the host.

Not read: `ansible_become*`, passwords (ssh runs in BatchMode: a key or agent must do),
`ansible_ssh_args` (it replaces Ansible's own ssh defaults, which are not ours), interpreters.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from typing import Any

from cmdop_tui.machines.ansible_hosts import InventoryError
from cmdop_tui.machines.ansible_model import IMPLICIT_GROUPS, HostFacts
from cmdop_tui.machines.ansible_parse import Vaulted
from cmdop_tui.machines.ansible_vars import UNREADABLE
from cmdop_tui.machines.spec import MachineError, MachineSpec

__all__ = ["machine_of"]

ADDRESS = ("ansible_host", "ansible_ssh_host")
USER = ("ansible_user", "ansible_ssh_user")
PORT = ("ansible_port", "ansible_ssh_port")
KEY = ("ansible_private_key_file", "ansible_ssh_private_key_file")
SSH_ARGS = ("ansible_ssh_common_args", "ansible_ssh_extra_args")
SSH_CONNECTIONS = frozenset(
    {"ssh", "smart", "paramiko", "paramiko_ssh", "ansible.builtin.ssh", "ansible.builtin.paramiko_ssh"}
)
LOCAL_CONNECTIONS = frozenset({"local", "ansible.builtin.local"})
MAX_RENDER_DEPTH = 10

_PLAIN_REFERENCE = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
_JINJA = re.compile(r"\{\{|\{%|\{#")
# ssh flags that take a value, as the option each one sets
_VALUE_FLAGS = {"-J": "ProxyJump", "-i": "IdentityFile", "-p": "Port", "-l": "User", "-c": "Ciphers", "-m": "MACs"}
_FLAGS = {
    "-A": "ForwardAgent=yes",
    "-a": "ForwardAgent=no",
    "-C": "Compression=yes",
    "-4": "AddressFamily=inet",
    "-6": "AddressFamily=inet6",
}
_HARMLESS_FLAGS = frozenset({"-q", "-v", "-vv", "-vvv", "-T", "-n"})
# options that would change how the app talks to the machine: its commands, their stdio, its tty
_REFUSED_OPTIONS = frozenset(
    {"remotecommand", "requesttty", "sessiontype", "stdinnull", "forkafterauthentication", "permitlocalcommand"}
)
_OPTION = re.compile(r"^([A-Za-z][A-Za-z0-9]*)(?:\s*=\s*|\s+)(.*)$", re.DOTALL)


def machine_of(facts: HostFacts) -> MachineSpec:
    """The machine `facts` describes. Raises InventoryError, saying why, for a host that cannot
    be reached as Ansible would reach it from what is known here."""
    variables = facts.vars
    if UNREADABLE in variables:
        raise InventoryError(str(variables[UNREADABLE]))
    values = _Values(facts.name, variables)
    tags = tuple(sorted(facts.groups - IMPLICIT_GROUPS))
    connection = values.text(("ansible_connection",)) or "ssh"
    if connection in LOCAL_CONNECTIONS:
        return MachineSpec(name=facts.name, host=facts.name, tags=tags, source="ansible", connection="local")
    if connection not in SSH_CONNECTIONS:
        raise InventoryError(f"ansible_connection is {connection!r}; machines are reached over ssh only")
    options = tuple(option for name in SSH_ARGS for option in ssh_options(values.text((name,)) or "", name))
    try:
        return MachineSpec(
            name=facts.name,
            host=values.text(ADDRESS) or facts.name,
            user=values.text(USER) or None,
            port=_port(values.value(PORT)),
            tags=tags,
            source="ansible",
            identity_file=values.text(KEY) or None,
            ssh_options=options,
        )
    except MachineError as exc:
        raise InventoryError(str(exc)) from None


class _Values:
    """A host's connection vars, with `{{ name }}` references rendered."""

    def __init__(self, host: str, variables: Mapping[str, Any]) -> None:
        self.host = host
        self.variables = {**variables, "inventory_hostname": host, "inventory_hostname_short": host.split(".")[0]}

    def value(self, names: tuple[str, ...]) -> Any:
        """The last of `names` that is set (Ansible's order), rendered; None when none is."""
        name = next((n for n in reversed(names) if n in self.variables), None)
        return None if name is None else self._render(name, self.variables[name], MAX_RENDER_DEPTH)

    def text(self, names: tuple[str, ...]) -> str:
        value = self.value(names)
        return "" if value is None else str(value)

    def _render(self, name: str, value: Any, depth: int) -> Any:
        if isinstance(value, Vaulted):
            raise InventoryError(f"{name} is encrypted with Ansible Vault")
        if not isinstance(value, str) or not _JINJA.search(value):
            return value
        if depth == 0:
            raise InventoryError(f"{name} refers to itself")
        whole = _PLAIN_REFERENCE.fullmatch(value.strip())
        if whole:  # the value is one variable: it keeps its type (a port stays a number)
            return self._reference(name, whole.group(1), depth)
        rendered = _PLAIN_REFERENCE.sub(lambda m: str(self._reference(name, m.group(1), depth)), value)
        if _JINJA.search(rendered):
            raise InventoryError(f"{name} is a Jinja expression ({value.strip()!r}) that only Ansible can render")
        return rendered

    def _reference(self, name: str, referred: str, depth: int) -> Any:
        if referred not in self.variables:
            raise InventoryError(f"{name} uses the undefined variable {referred!r}")
        return self._render(referred, self.variables[referred], depth - 1)


def _port(value: Any) -> int | None:
    if value is None or value == "":
        return None
    if isinstance(value, bool) or not str(value).strip().isdigit() or not 0 < int(value) < 65536:
        raise InventoryError(f"ansible_port {value!r} is not a port number")
    return int(value)


def ssh_options(text: str, where: str) -> list[str]:
    """ssh command-line arguments as `Key=Value` options. Raises InventoryError for anything
    else (a bare word would be read by ssh as the host or the command)."""
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise InventoryError(f"cannot read {where}: {exc}") from None
    options: list[str] = []
    while words:
        word = words.pop(0)
        if word in _HARMLESS_FLAGS:
            continue
        if word in _FLAGS:
            options.append(_FLAGS[word])
        elif word[:2] == "-o" or word[:2] in _VALUE_FLAGS:
            value = word[2:] or (words.pop(0) if words else "")
            option = value if word[:2] == "-o" else f"{_VALUE_FLAGS[word[:2]]}={value}"
            options.append(_option(option, where))
        else:
            raise InventoryError(f"{where} has {word!r}, which is not an ssh option read here")
    return options


def _option(text: str, where: str) -> str:
    match = _OPTION.match(text.strip())
    if match is None or not match.group(2).strip():
        raise InventoryError(f"{where} has the ssh option {text!r}, not Key=Value")
    key, value = match.group(1), match.group(2).strip()
    if key.lower() in _REFUSED_OPTIONS:
        raise InventoryError(f"{where} sets {key}, which would change how the app runs commands there")
    return f"{key}={value}"
