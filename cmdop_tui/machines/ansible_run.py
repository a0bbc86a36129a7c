"""Programs an Ansible inventory runs here (ansible-inventory, an inventory script), bounded.

Each runs in its own process group with no standard input (a vault password prompt must fail,
not wait), an environment without the app's API credentials, and a deadline: past it the whole
group is killed (a hung script's children too) and InventoryError says so.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from cmdop_tui.machines.ansible_hosts import InventoryError
from cmdop_tui.support.processes import kill_process_group
from cmdop_tui.support.secrets import CREDENTIAL_ENV

__all__ = ["DEFAULT_TIMEOUT_S", "Deadline", "Finished", "TookTooLong", "child_environment", "run_bounded"]

DEFAULT_TIMEOUT_S = 20.0  # ansible-inventory itself starts in about a second; cloud plugins take longer
OUTPUT_LIMIT = 64 * 1024 * 1024  # an inventory's JSON past this is not read


class TookTooLong(InventoryError):
    """A program of the inventory did not finish in time (it was killed)."""


@dataclass(frozen=True)
class Finished:
    status: int
    stdout: bytes
    stderr: str


def child_environment(environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The environment a child of the inventory gets: the user's, less the app's credentials,
    with Ansible's colours off (its warnings become notices)."""
    env = {name: value for name, value in environ.items() if name not in CREDENTIAL_ENV}
    env.pop("ANSIBLE_FORCE_COLOR", None)
    env["ANSIBLE_NOCOLOR"] = "1"
    return env


@dataclass(frozen=True)
class Deadline:
    """One time budget for a whole reading (a script's `--list`, then its `--host` for each host)."""

    budget_s: float
    ends_at: float

    @classmethod
    def after(cls, budget_s: float) -> Deadline:
        return cls(budget_s, time.monotonic() + budget_s)

    def left(self) -> float:
        return self.ends_at - time.monotonic()


def run_bounded(argv: Sequence[str], deadline: Deadline) -> Finished:
    """Run `argv` to its end before `deadline`. Raises InventoryError when it cannot start, and
    TookTooLong when it does not end in time (it is killed then, with its process group)."""
    name = os.path.basename(argv[0])
    if deadline.left() <= 0:
        raise TookTooLong(f"{name} did not finish within {deadline.budget_s:g} s")
    try:
        process = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=child_environment(),
            start_new_session=True,
        )
    except OSError as exc:
        raise InventoryError(f"cannot run {argv[0]}: {exc.strerror or exc}") from None
    try:
        stdout, stderr = process.communicate(timeout=max(deadline.left(), 0.0))
    except subprocess.TimeoutExpired:
        _end(process)
        raise TookTooLong(f"{name} did not finish within {deadline.budget_s:g} s") from None
    except BaseException:
        _end(process)
        raise
    if len(stdout) > OUTPUT_LIMIT:
        raise InventoryError(f"{name} printed more than {OUTPUT_LIMIT // 2**20} MB")
    return Finished(process.returncode, stdout, stderr.decode("utf-8", "replace"))


def _end(process: subprocess.Popen[bytes]) -> None:
    """Kill the group (a child that outlived its parent still holds the pipes), reap, close."""
    kill_process_group(process.pid)
    process.wait()
    for pipe in (process.stdout, process.stderr):
        if pipe is not None:
            pipe.close()
