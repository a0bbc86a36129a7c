"""The sandbox on another machine: bubblewrap there, set up by the command's own shell script.

The health probe (`REMOTE_PROBE`) says whether the machine has bubblewrap that can make
namespaces; where it does, each command runs inside it (`remote_script`): the machine's
filesystem read-only but for the working directory and /tmp, its user's secrets hidden.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable

from cmdop_tui.machines.sandbox import SECRET_PATHS

__all__ = ["REMOTE_PROBE", "remote_script"]

REMOTE_PROBE = (
    "if command -v bwrap >/dev/null 2>&1 && bwrap --ro-bind / / --unshare-pid --die-with-parent -- true "
    ">/dev/null 2>&1; then echo sandbox:bubblewrap; else echo sandbox:none; fi"
)


def remote_script(command: str, writable: Iterable[str] = ()) -> str:
    """`command` for a remote shell, inside bubblewrap there (the health probe found it): the
    workspace policy, with the remote's own home, working directory and secrets."""
    hidden = " ".join(f'"$HOME"/{shlex.quote(relative)}' for relative in SECRET_PATHS)
    extra = " ".join(_remote_path(path) for path in writable)
    return (
        "set --; "
        f'for p in {hidden} ./.env; do if [ -d "$p" ] && [ ! -L "$p" ]; then set -- "$@" --tmpfs "$p"; '
        'elif [ -e "$p" ]; then set -- "$@" --ro-bind /dev/null "$p"; fi; done; '
        + (f'for w in {extra}; do [ -e "$w" ] && set -- --bind "$w" "$w" "$@"; done; ' if extra else "")
        + "exec bwrap --die-with-parent --unshare-pid --new-session --ro-bind / / --dev /dev --proc /proc "
        '--tmpfs /dev/shm --bind /tmp /tmp --bind "$PWD" "$PWD" "$@" --chdir "$PWD" '
        f"-- /bin/bash -c {shlex.quote(command)}"
    )


def _remote_path(path: str) -> str:
    if path == "~" or path.startswith("~/"):
        return '"$HOME"' + shlex.quote(path[1:]) if path[1:] else '"$HOME"'
    return shlex.quote(path)
