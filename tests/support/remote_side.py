"""The remote side of real-sshd tests: its throwaway home, its workspace, its processes.

The test servers run on this machine as this user, so a remote command's home would be ours:
tests give the remote side a home of its own (sshd `SetEnv HOME=...`), made here, outside /tmp
and /var/tmp, which the sandbox there replaces with the session's private folders (a home in
them would vanish inside every command).
"""

from __future__ import annotations

import asyncio
import os
import pwd
import shutil
import tempfile
from pathlib import Path

PRIVATE = (Path("/tmp"), Path("/var/tmp"))
WORKSPACE = Path(".local/share/cmdop-tui-workspace")  # a machine's workspace, under its home


def _base() -> Path:
    """Where throwaway homes go: under ours, unless ours is itself in /tmp or /var/tmp."""
    own = Path(pwd.getpwuid(os.getuid()).pw_dir)  # the tests may have moved $HOME into /tmp
    for base in (own / ".cache" / "cmdop-tui-test-homes", Path.home() / ".cache" / "cmdop-tui-test-homes"):
        real = Path(os.path.realpath(base.parent))
        if not any(real == p or p in real.parents for p in PRIVATE):
            return base
    raise RuntimeError("no place outside /tmp and /var/tmp for a throwaway home")


def make_home() -> Path:
    """A new empty home (0700), to be removed with `remove_home`."""
    base = _base()
    base.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix="home-", dir=base))


def remove_home(home: Path) -> None:
    """Remove `home` and whatever the remote side left in it (read-only folders too)."""
    for root, dirs, _ in os.walk(home):
        for name in dirs:
            path = os.path.join(root, name)
            if not os.path.islink(path):
                os.chmod(path, 0o700)
    shutil.rmtree(home, ignore_errors=True)


def workspace(home: Path) -> Path:
    """The machine's workspace for a remote side whose home is `home` (made if missing)."""
    path = home / WORKSPACE
    path.mkdir(parents=True, exist_ok=True)
    return path


def processes_named(marker: str) -> list[int]:
    """Processes of this machine (the servers' too) whose command line starts with `marker`."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and Path(f"/proc/{entry}/cmdline").read_bytes().startswith(marker.encode()):
                state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
                if state != "Z":
                    found.append(int(entry))
        except OSError:
            continue
    return found


async def wait_gone(marker: str, timeout: float = 10.0) -> list[int]:
    """Wait until no process is named `marker` (what is left when `timeout` passes)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while (left := processes_named(marker)) and loop.time() < deadline:
        await asyncio.sleep(0.02)  # a killed namespace's processes are reaped a moment later
    return left
