"""The rule "Allow always" adds: as wide as is safe for the call the user just approved."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from cmdop_tui.tools.base import RuleReach, Tool
from cmdop_tui.tools.placement import Placement

from .arguments import command_parts, declaration, fanout_hosts, main_argument
from .rules import Rule, local_home, normalise_rule_path
from .scanning import words

TAG_PREFIX = "tag:"  # a selector of every machine with that tag (machines/inventory.py)
# programs that delete, run other code or escalate: their rule is the exact command line
_EXACT_PROGRAMS = words(
    "rm rmdir dd mkfs shred wipefs chmod chown chgrp mv kill killall pkill reboot shutdown halt "
    "poweroff bash sh zsh dash ksh fish eval exec xargs env sudo doas su python python3 perl ruby "
    "node php curl wget ssh scp rsync find crontab systemctl iptables nft ufw truncate tee source "
    ". docker kubectl"
)
# programs whose first word is a subcommand worth keeping in the rule (git status *)
_SUBCOMMAND_PROGRAMS = words(
    "git docker kubectl systemctl journalctl apt apt-get dnf yum brew npm pnpm yarn pip pip3 uv "
    "cargo go make poetry helm terraform gh podman service snap flatpak conda rustup gcloud aws "
    "az"
)


def derive_rule(
    tool: str,
    args: Mapping[str, Any],
    machine: str = "local",
    *,
    placement: Placement | None = None,
    cwd: str | None = None,
    any_machine: bool = False,
    spec: Tool | None = None,
) -> Rule:
    """The allow rule that "Allow always" adds for this call.

    * a command (execute_command): a simple command gives its program, plus its subcommand for
      tools such as git, docker, systemctl, apt, npm (``git status -s`` -> ``git status *``,
      ``ls -la`` -> ``ls *``); a command line with several commands, redirections,
      substitutions or variables, and any command of a program that deletes, runs other code
      or escalates (rm, dd, chmod, bash, python, sudo, ssh, curl, find, xargs, systemctl...;
      with their subcommand for systemctl/docker/kubectl) gives the exact command line.
    * read_file, write_file, grep, list_dir: the directory of the path with ``/**``
      (``~/projects/app/src/x.py`` -> ``~/projects/app/src/**``); list_dir the directory itself.
    * glob: its pattern; ask_machine: the host; ask_machines: ``{a,b}`` of the hosts (a call
      placed on several machines is not scoped to them: the hosts are its argument).

    `spec` is the tool's declaration (None: the built-in tool called `tool`). The rule is
    scoped to where the call runs, `placement` (the loop's; without it, `machine`): ``web1:...``,
    ``local:...``, ``{web1,web2}:...`` for several, unless `any_machine`; a call that runs on
    several machines (run_on_machines) is scoped to the machines it names, whatever `machine`
    says (``{web1,web2}:run_on_machines(uptime *)``; ``tag\\:web:...`` for a tag), and its
    note names them (``2 machines: web1, web2``).
    """
    hosts = fanout_hosts(args)
    if hosts and not any_machine:
        rule = derive_rule(tool, args, cwd=cwd, any_machine=True, spec=spec)
        return replace(rule, machine=_machines_glob(hosts), note=fanout_label(hosts))
    placed = placement if placement is not None and placement.machines else Placement.one(machine or "local")
    machine = placed.machines[0]
    several = len(placed.machines) > 1
    prefix = None if any_machine else (_machines_glob(list(placed.machines)) if several else machine)
    declared = declaration(tool, spec)
    subject = declared.subject if declared is not None else None
    argument = main_argument(tool, args, spec=declared)
    if subject is not None and subject.kind == "command":
        pattern = _command_pattern(argument if isinstance(argument, str) else "")
    elif subject is not None and subject.kind == "path" and subject.reach != "exact":
        pattern = _path_pattern(subject.reach, argument if isinstance(argument, str) else "", machine, cwd)
    elif subject is not None and subject.many:
        hosts = list(dict.fromkeys(argument if isinstance(argument, list) else []))
        pattern = _names_glob(hosts)
        if prefix is not None and several:  # the hosts are its argument: not scoped to the machines
            return Rule(tool=tool, pattern=pattern, machine=None, source="global", note=fanout_label(hosts))
    else:
        pattern = _escape_path_glob(argument) if isinstance(argument, str) and argument else "*"
    return Rule(tool=tool, pattern=pattern, verdict="allow", machine=prefix, source="global")


def fanout_label(hosts: list[str]) -> str:
    """What a rule scoped to these machines covers, for people: `2 machines: web1, web2`, and
    `the machines tagged db` for a tag."""
    names = [host for host in hosts if not host.startswith(TAG_PREFIX)]
    tags = [host.removeprefix(TAG_PREFIX) for host in hosts if host.startswith(TAG_PREFIX)]
    parts = [f"{len(names)} machine{'' if len(names) == 1 else 's'}: {', '.join(names)}"] if names else []
    if tags:
        parts.append(f"the machines tagged {', '.join(tags)}")
    return "; ".join(parts)


def _machines_glob(hosts: list[str]) -> str:
    """The machine glob naming exactly these machines (a tag's `:` escaped)."""
    return _names_glob(hosts)


def _names_glob(names: list[str]) -> str:
    """The name glob matching exactly these names: `{a,b}`, or the one name. Names come from the
    model: whatever would end a part of the rule's text (`:` `(` `)` whitespace), split or close
    an alternative (`,` `{` `}`), open a quote (which brace matching skips) or be a wildcard is
    escaped, so `web1,db1` stays one name and the rule reads back as written."""
    escaped = [_escape_name(name) for name in names]
    return escaped[0] if len(escaped) == 1 else "{" + ",".join(escaped) + "}"


def _escape_name(name: str) -> str:
    return re.sub(r"([*?\[\]{}\\:,()'\"`!\s])", r"\\\1", name)


def _path_pattern(reach: RuleReach, path: str, machine: str, cwd: str | None) -> str:
    normal = normalise_rule_path(path or ".", machine=machine or "local", cwd=cwd)
    home = local_home()
    if (machine or "local") == "local" and (normal == home or normal.startswith(home + "/")):
        normal = "~" + normal[len(home) :]
    names_directory = reach == "itself" or (reach == "search" and not posixpath.splitext(normal)[1])
    directory = normal if names_directory else (posixpath.dirname(normal) or ".")
    return _escape_path_glob(directory).rstrip("/") + "/**"


def _escape_path_glob(text: str) -> str:
    return re.sub(r"([*?\[\]{}\\])", r"\\\1", text)


def _escape_command_glob(text: str) -> str:
    return re.sub(r"([*?\\])", r"\\\1", " ".join(text.split()))


def _command_pattern(command: str) -> str:
    parts = command_parts(command)
    simple = len(parts) == 1 and parts[0].trusted and not re.search(r"[;&|<>`$\n(){}]", command)
    command_words = command.split()
    if not simple or not command_words:
        return _escape_command_glob(command)
    program = command_words[0]
    base = posixpath.basename(program)
    if not re.fullmatch(r"[\w.+-]+", base) or re.match(r"[A-Za-z_]\w*=", program):
        return _escape_command_glob(command)
    subcommand = (
        command_words[1] if len(command_words) > 1 and re.fullmatch(r"[a-z][a-z0-9_-]*", command_words[1]) else None
    )
    if base in _EXACT_PROGRAMS:
        return _escape_command_glob(command)
    if base in _SUBCOMMAND_PROGRAMS and subcommand:
        return f"{_escape_command_glob(program)} {subcommand} *"
    return f"{_escape_command_glob(program)} *"
