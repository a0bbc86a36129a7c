"""How busy a machine is, in one word (online, degraded), and this machine's own health: read
from the kernel without a probe. Apart from machines/health.py (the probes over ssh) so that the
machines panel draws this machine at start-up without loading the ssh and remote sandbox code.
"""

from __future__ import annotations

import getpass
import os
import platform

from cmdop_tui.machines.spec import Health

SLOW_MS = 1_000.0  # an answer slower than this marks the machine degraded
BUSY_LOAD_PER_CPU = 2.0  # so does a 1-minute load above this many runnable tasks per CPU


def current_user() -> str:
    """Who the app runs as, by name (by id when the account has none)."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return str(os.getuid())


def judge(latency_ms: float, load1: float | None, cpus: int | None) -> str:
    if latency_ms > SLOW_MS:
        return "degraded"
    if load1 is not None and cpus and load1 > BUSY_LOAD_PER_CPU * cpus:
        return "degraded"
    return "online"


def local_health() -> Health:
    try:
        one, five, fifteen = os.getloadavg()
        load = f"{one:.2f} {five:.2f} {fifteen:.2f}"
    except OSError:
        one, load = 0.0, ""
    return Health(
        state=judge(0.0, one, os.cpu_count()),  # type: ignore[arg-type]
        latency_ms=0.0,
        os_name=f"{platform.system()} {platform.release()}",
        load=load,
    )
