"""Child processes that must not outlive us, and whether a process still runs."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable


def kill_process_group(pgid: int) -> None:
    """SIGKILL a whole process group (a shell and everything it started); gone already is fine."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def process_alive(pid: int) -> bool:
    """Whether process `pid` exists (one of another user, which we may not signal, does)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def parent_death_signal() -> Callable[[], None] | None:
    """On Linux, a pre-exec hook by which the kernel sends the child SIGTERM when we die, even by
    SIGKILL (so a served app or a local model server never outlives us). None elsewhere."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    pr_set_pdeathsig = 1
    sigterm = int(signal.SIGTERM)
    parent_pid = os.getpid()

    def hook() -> None:
        prctl(pr_set_pdeathsig, sigterm, 0, 0, 0)
        if os.getppid() != parent_pid:  # we died before the hook ran
            os._exit(1)

    return hook
