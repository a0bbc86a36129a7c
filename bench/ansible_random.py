"""Seeded random Ansible inventories for bench_ansible_inventory.py: what the built-in reader must
read as Ansible does, in shapes nobody wrote by hand.

Each has 3 to 7 groups (some children of others, the graph without cycles), hosts named with
ranges and ports, and connection vars (`ansible_host`, `_user`, `_port`, the old `ansible_ssh_*`
names, `ansible_group_priority`) set at random on `all`, on groups, on hosts, in group_vars/ and
host_vars/ files (plain, `.yml`, or a folder of files); in INI or in YAML.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import yaml

RANDOM_INVENTORIES = 40
VARS = ("ansible_host", "ansible_user", "ansible_port", "ansible_ssh_user", "ansible_ssh_port", "ansible_ssh_host")


def _value(rng: random.Random, name: str) -> object:
    if name.endswith("port"):
        return rng.choice([22, 2200, 2222, 5022])
    if name.endswith("host"):
        return f"192.0.2.{rng.randint(1, 254)}"
    return rng.choice(["ops", "deploy", "root", "admin"])


def _some_vars(rng: random.Random, odds: float) -> dict[str, object]:
    return {name: _value(rng, name) for name in VARS if rng.random() < odds}


def _host_patterns(rng: random.Random, group: int) -> list[str]:
    shapes = [
        f"h{group}-[1:{rng.randint(1, 4)}]",
        f"n{group}[01:09:{rng.randint(2, 4)}].example.org",
        f"x{group}[a:{rng.choice('bcd')}]",
        f"p{group}.example.org:{rng.choice([2201, 2202])}",
        f"s{group}",
        "shared",
    ]
    return rng.sample(shapes, rng.randint(1, 3))


def write_random_inventory(folder: Path, seed: int) -> Path:
    """Write inventory `seed` in `folder`; returns the inventory file's path."""
    rng = random.Random(seed)
    folder.mkdir(parents=True)
    names = [f"g{n}" for n in range(rng.randint(3, 7))]
    children = {name: [c for c in names[i + 1 :] if rng.random() < 0.3] for i, name in enumerate(names)}
    hosts = {
        name: {pattern: _some_vars(rng, 0.25) for pattern in _host_patterns(rng, i)} for i, name in enumerate(names)
    }
    group_vars = {name: _some_vars(rng, 0.5) for name in names}
    for name in names:  # only an inventory's own group vars set a group's priority
        if rng.random() < 0.5:
            group_vars[name]["ansible_group_priority"] = rng.randint(0, 3)
    all_vars = _some_vars(rng, 0.5)
    _vars_files(rng, folder / "group_vars", ["all", *names])
    _vars_files(rng, folder / "host_vars", ["shared", "s0", "s1", "h0-1"])
    if rng.random() < 0.5:
        return _write_ini(folder / "hosts", names, children, hosts, group_vars, all_vars)
    return _write_yaml(folder / "hosts.yml", names, children, hosts, group_vars, all_vars)


def _vars_files(rng: random.Random, folder: Path, entities: list[str]) -> None:
    folder.mkdir()
    for name in entities:
        if rng.random() < 0.4:
            continue
        shape = rng.choice(["plain", "yml", "folder"])
        if shape == "folder":
            (folder / name).mkdir()
            for part in ("a.yml", "b.yaml"):
                (folder / name / part).write_text(yaml.safe_dump(_some_vars(rng, 0.4)))
        else:
            (folder / (name if shape == "plain" else f"{name}.yml")).write_text(yaml.safe_dump(_some_vars(rng, 0.5)))


def _ini_words(variables: dict[str, object]) -> str:
    return "".join(f" {key}={value}" for key, value in variables.items())


def _write_ini(path: Path, names: list[str], children: Any, hosts: Any, group_vars: Any, all_vars: Any) -> Path:
    lines = ["[all:vars]", *(f"{k}={v}" for k, v in all_vars.items())]
    for name in names:
        lines += [f"[{name}]", *(f"{pattern}{_ini_words(own)}" for pattern, own in hosts[name].items())]
        lines += [f"[{name}:vars]", *(f"{k} = {v}" for k, v in group_vars[name].items())]
        if children[name]:
            lines += [f"[{name}:children]", *children[name]]
    path.write_text("\n".join(lines) + "\n")
    return path


def _write_yaml(path: Path, names: list[str], children: Any, hosts: Any, group_vars: Any, all_vars: Any) -> Path:
    groups = {
        name: {"hosts": {p: (own or None) for p, own in hosts[name].items()}, "vars": group_vars[name] or None}
        for name in names
    }
    for name in names:
        if children[name]:
            groups[name]["children"] = {child: None for child in children[name]}
    path.write_text(yaml.safe_dump({"all": {"vars": all_vars or None}, **groups}, sort_keys=False))
    return path
