"""The shadow repository of each machine's working tree (machines/shadow_git.py), for a fleet.

This machine's tree is the session's workspace (its working directory, or the scratch
workspace); another machine's is its workspace there, reached over its own connection, with the
repository in its data dir there. A tree that holds a home (or is `/`) gets none: a checkpoint
of it would copy the whole home.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from cmdop_tui.machines.agent import DATA_DIR_SH, WORKSPACE_NAME
from cmdop_tui.machines.fleet import Fleet
from cmdop_tui.machines.local import LocalMachine
from cmdop_tui.machines.remote import RemoteMachine
from cmdop_tui.machines.shadow_git import ShadowRepo, repository_name, run_here
from cmdop_tui.machines.spec import MachineError
from cmdop_tui.machines.ssh import SshTransport

REMOTE_TIMEOUT_S = 120.0  # the first checkpoint there hashes the whole workspace


def shadow_of(fleet: Fleet, name: str, cwd: Path, store: Path, max_file_bytes: int) -> ShadowRepo:
    """The shadow repository of machine `name`'s working tree (`store`: where this machine's
    repositories are kept). Raises MachineError when that machine can have none."""
    machine = fleet.machine(None if name == "local" else name, cwd=cwd)
    if isinstance(machine, LocalMachine):
        return _local(machine, store, max_file_bytes)
    if isinstance(machine, RemoteMachine):
        return _remote(machine.transport, max_file_bytes)
    raise MachineError(f"{name}: no checkpoints on this kind of machine")


def _local(machine: LocalMachine, store: Path, max_file_bytes: int) -> ShadowRepo:
    tree = Path(os.path.realpath(machine.workspace))
    home = Path(os.path.realpath(Path.home()))
    if tree == Path("/") or tree == home or tree in home.parents:
        raise MachineError(f"{tree} holds your home: it is not copied into checkpoints")
    git_dir = store / repository_name(str(tree))
    return ShadowRepo(run_here, shlex.quote(str(git_dir)), shlex.quote(str(tree)), max_file_bytes=max_file_bytes)


def _remote(transport: SshTransport, max_file_bytes: int) -> ShadowRepo:
    async def run(script: str) -> tuple[int, bytes, bytes]:
        result = await transport.run(script, timeout_s=REMOTE_TIMEOUT_S)
        return result.status, result.stdout, result.stderr

    prelude = f'{DATA_DIR_SH}; w="${{d%/*}}/{WORKSPACE_NAME}"; mkdir -p -m 700 -- "$w" "$d/checkpoints" || exit 91'
    return ShadowRepo(run, '"$d/checkpoints/workspace.git"', '"$w"', prelude=prelude, max_file_bytes=max_file_bytes)
