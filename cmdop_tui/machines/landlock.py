"""The sandbox where bubblewrap cannot run: Landlock (Linux 5.13+), for writes only.

Run as a program in front of a command; it limits itself to writing under the given roots
(and a few harmless device files), then becomes the command:

    python -S -I landlock.py --write /work --write /tmp -- /bin/bash -c 'make'

It imports nothing of this project, so it starts in a few milliseconds. Reads stay open:
Landlock grants access to trees and cannot carve a secret out of one, so where only Landlock is
available the status line says so ("sandbox workspace (landlock, writes only)").
"""

from __future__ import annotations

import ctypes
import os
import sys

SYS_CREATE_RULESET, SYS_ADD_RULE, SYS_RESTRICT_SELF = 444, 445, 446  # x86_64 and aarch64 alike
PR_SET_NO_NEW_PRIVS = 38
RULE_PATH_BENEATH = 1
CREATE_RULESET_VERSION = 1

WRITE_FILE, READ_FILE = 1 << 1, 1 << 2
REMOVE_DIR, REMOVE_FILE = 1 << 4, 1 << 5
MAKE = sum(1 << bit for bit in range(6, 13))  # char, dir, reg, sock, fifo, block, sym
REFER, TRUNCATE = 1 << 13, 1 << 14  # ABI 2, ABI 3
DEVICE_FILES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/random", "/dev/urandom")


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def abi_version() -> int:
    """The kernel's Landlock ABI (0: none)."""
    libc = ctypes.CDLL(None, use_errno=True)
    version = libc.syscall(SYS_CREATE_RULESET, None, 0, CREATE_RULESET_VERSION)
    return max(int(version), 0)


def write_rights(abi: int) -> int:
    rights = WRITE_FILE | REMOVE_DIR | REMOVE_FILE | MAKE
    if abi >= 2:
        rights |= REFER
    if abi >= 3:
        rights |= TRUNCATE
    return rights


def restrict_writes(roots: list[str]) -> None:
    """From now on this process (and what it runs) writes only under `roots`. Raises OSError."""
    libc = ctypes.CDLL(None, use_errno=True)
    abi = abi_version()
    if abi < 1:
        raise OSError("Landlock is not available")
    handled = ctypes.c_uint64(write_rights(abi))
    ruleset = libc.syscall(SYS_CREATE_RULESET, ctypes.byref(handled), ctypes.sizeof(handled), 0)
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset")
    file_rights = WRITE_FILE | (TRUNCATE if abi >= 3 else 0)
    for path, rights in [*((root, write_rights(abi)) for root in roots), *((f, file_rights) for f in DEVICE_FILES)]:
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            continue
        rule = _PathBeneath(rights, fd)
        added = libc.syscall(SYS_ADD_RULE, ruleset, RULE_PATH_BENEATH, ctypes.byref(rule), 0)
        os.close(fd)
        if added < 0:
            raise OSError(ctypes.get_errno(), f"landlock_add_rule {path}")
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 or libc.syscall(SYS_RESTRICT_SELF, ruleset, 0) != 0:
        raise OSError(ctypes.get_errno(), "landlock_restrict_self")
    os.close(ruleset)


def main(argv: list[str]) -> int:
    if "--" not in argv:
        print("usage: landlock.py --write ROOT ... -- COMMAND ...", file=sys.stderr)
        return 2
    split = argv.index("--")
    options, command = argv[:split], argv[split + 1 :]
    roots = [options[i + 1] for i, option in enumerate(options[:-1]) if option == "--write"]
    try:
        restrict_writes(roots)
    except OSError as exc:
        print(f"cmdop-tui sandbox: {exc}", file=sys.stderr)
        return 126
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        print(f"cmdop-tui sandbox: {command[0]}: {exc.strerror}", file=sys.stderr)
    return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
