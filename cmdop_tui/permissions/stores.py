"""Credential stores by kind (:mod:`cmdop_tui.support.secret_kinds`), as the floor finds them in a
path: under any home (``~/.config/rclone``, ``~/.cargo/credentials.toml``, ``~/.bash_history``),
where this machine's environment moves them (``KUBECONFIG=/etc/k8s/admin.conf``), and named by
the variable that relocates them (``cat $KUBECONFIG``: :func:`relocated`).

SSH keys keep their own, finer rules (:mod:`.paths`: ``~/.ssh/config`` may be read, the keys
may not); every other store is a secret whole: nothing in it is read.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, replace
from pathlib import Path

from cmdop_tui.support.secret_kinds import ENV_RELOCATIONS, KINDS, secret_locations

from .globs import glob_matches, has_glob

#: Marks the value of a variable that names a credential store (`$KUBECONFIG`): `"\x04KUBECONFIG"`.
STORE_MARK = "\x04"
# kinds the floor judges by finer rules of its own
_OWN_RULES = frozenset({"ssh"})
# stores that are folders of credentials: named freely, not copied or searched whole
STORE_FOLDERS = (".aws", ".gnupg", ".azure", ".config/gcloud", ".kube", ".docker", ".password-store")
_XDG_DEFAULTS = (("config", ".config"), ("data", ".local/share"), ("state", ".local/state"))
# variables of the relocation list that hold a secret itself, not where one is
_VALUE_SUFFIXES = ("_TOKEN", "_AUTH")
_BASE_KEYS = ("HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME")
_ENVIRONMENT_KEYS = (*_BASE_KEYS, *ENV_RELOCATIONS)
# how long the relocation variables are trusted not to have changed (reading them all costs as
# much as a whole decision); the home and the XDG folders are read every time
_RELOCATIONS_KEPT_S = 2.0


def _home_relative_stores() -> tuple[tuple[str, ...], ...]:
    """Every store's path below a home, as components, for the default XDG folders too."""
    found: list[tuple[str, ...]] = []
    for kind in KINDS:
        if kind.name in _OWN_RULES:
            continue
        found.extend(tuple(path.split("/")) for path in kind.home)
        for which, base in _XDG_DEFAULTS:
            for path in getattr(kind, which):
                found.append((*base.split("/"), *path.split("/")))
    return tuple(dict.fromkeys(found))


HOME_STORE_PARTS = _home_relative_stores()
_FOLDER_PARTS = frozenset(tuple(folder.split("/")) for folder in STORE_FOLDERS)
_HIDDEN_PARTS = tuple(parts for parts in HOME_STORE_PARTS if parts[0].startswith("."))
_BY_FIRST: dict[str, list[tuple[str, ...]]] = {}
for _parts in HOME_STORE_PARTS:
    _BY_FIRST.setdefault(_parts[0], []).append(_parts)


def store_below_home(rest: list[str]) -> bool | None:
    """Is `rest` (a path's components below a home, perhaps globs) in a credential store? True
    when it is in one, or is one that is a file; False when it is a folder of stores itself
    (`~/.aws`: named freely, not read whole); None when it is no store."""
    if not rest:
        return None
    # a glob may match a hidden store (`.*`); `*` matching `_netrc` is a name no one means
    candidates = _HIDDEN_PARTS if has_glob(rest[0]) else _BY_FIRST.get(rest[0], ())
    for parts in candidates:
        if len(rest) >= len(parts) and all(glob_matches(r, p) for r, p in zip(rest, parts, strict=False)):
            return not (len(rest) == len(parts) and parts in _FOLDER_PARTS)
    return None


def relocated(name: str) -> str | None:
    """What the floor takes `$name` for when `name` relocates a credential store: the store."""
    if name in ENV_RELOCATIONS and not name.endswith(_VALUE_SUFFIXES):
        return STORE_MARK + name
    return None


def marked_store(path: str) -> str | None:
    """The variable whose credential store `path` is (or is in), when it holds a mark."""
    at = path.find(STORE_MARK)
    if at < 0:
        return None
    return path[at + 1 :].split("/", 1)[0] or None


@dataclass(frozen=True)
class _Environment:
    key: tuple[str | None, ...]
    home: str | None
    stores: frozenset[str]
    read_at: float = 0.0
    generation: int = 0  # counts the changes: what was judged under an older one is judged again


_current = _Environment((), None, frozenset())


def refresh_environment() -> None:
    """Read again where this machine's environment puts the home and the stores (cheap when it
    did not change; called once per decision)."""
    global _current
    base = tuple(os.environ.get(name) for name in _BASE_KEYS)
    now = time.monotonic()
    if base == _current.key[: len(_BASE_KEYS)] and now - _current.read_at < _RELOCATIONS_KEPT_S:
        return
    key = base + tuple(os.environ.get(name) for name in ENV_RELOCATIONS)
    if key == _current.key:
        _current = replace(_current, read_at=now)
        return
    home = os.environ.get("HOME", "")
    absolute = home.startswith("/") and os.path.normpath(home) != "/"
    found = secret_locations(Path(home or "/"), os.environ)
    stores = frozenset(str(path) for path in found if path.is_absolute() and path.name != ".ssh")  # keys: own rules
    _current = _Environment(key, os.path.normpath(home) if absolute else None, stores, now, _current.generation + 1)


def environment_generation() -> int:
    """A number that changes whenever what this module says of the environment changes."""
    return _current.generation


def environment_home() -> str | None:
    """This machine's `$HOME`, when it is an absolute directory other than `/`."""
    return _current.home


def environment_store(path: str) -> bool:
    """Is `path` (absolute, normalised) a store this machine's environment names, or in one?"""
    stores = _current.stores
    if not stores or not path.startswith("/"):
        return False
    end = len(path)
    while end > 0:
        if path[:end] in stores:
            return True
        end = path.rfind("/", 0, end)
    return False
