"""The sandbox's system-call filter: no Unix socket, no io_uring, no new user namespace.

A sandboxed command must reach no socket of the user: not the ssh agent, not the app's own ssh
ControlMasters or warm agent, not a tmux server, D-Bus, Docker or an editor's server, whether the
socket has a path or is abstract. Hiding paths cannot find every socket a home holds, and an
abstract socket has no path at all; so the filter refuses the one call every Unix-socket
client needs first: `socket(AF_UNIX, ...)` fails with EACCES. (A pair made by `socketpair`
reaches nothing but itself, so it stays allowed: pipes between a command's own processes.)
This is as tight as a network namespace for abstract sockets, tighter for path sockets, and
leaves the host's network as the user has it (outbound connections, the host's localhost ports).

It also refuses what would go around it or around the namespaces: io_uring (which makes sockets
without the `socket` call), a new user namespace (`unshare`/`clone` with CLONE_NEWUSER; `clone3`
answers ENOSYS, so the C library falls back to `clone`, whose flags the filter can read), the
kernel keyrings (the user's keys live there), injecting keys into a terminal (TIOCSTI,
TIOCLINUX), and the kernel's BPF, perf and userfaultfd interfaces. A system call of another ABI
(32-bit code on a 64-bit kernel, x32) kills the process: its numbers mean other calls.

    program(machine) -> bytes    the classic BPF program for bubblewrap's --seccomp, or None
"""

from __future__ import annotations

import errno
import platform
import struct
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["ARCHES", "program"]

# BPF instruction classes and modes (linux/bpf_common.h)
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_JSET_K = 0x45
_RET_K = 0x06

_ALLOW = 0x7FFF0000
_KILL_PROCESS = 0x80000000
_ERRNO = 0x00050000

_NR, _ARCH, _ARG0, _ARG1 = 0, 4, 16, 24  # offsets in struct seccomp_data (low words: little-endian)
AF_UNIX = 1
CLONE_NEWUSER = 0x10000000
TIOCSTI, TIOCLINUX = 0x5412, 0x541C
X32_BIT = 0x40000000


@dataclass(frozen=True)
class Arch:
    """One ABI: its audit number and the numbers of the calls the filter looks at."""

    audit: int
    socket: int
    ioctl: int
    clone: int
    unshare: int
    denied: tuple[int, ...]  # refused outright (EPERM)
    x32: bool = False


ARCHES = {
    "x86_64": Arch(
        audit=0xC000003E,
        socket=41,
        ioctl=16,
        clone=56,
        unshare=272,
        # io_uring_setup/enter/register, add_key, request_key, keyctl, bpf, perf_event_open, userfaultfd
        denied=(425, 426, 427, 248, 249, 250, 321, 298, 323),
        x32=True,
    ),
    "aarch64": Arch(
        audit=0xC00000B7,
        socket=198,
        ioctl=29,
        clone=220,
        unshare=97,
        denied=(425, 426, 427, 217, 218, 219, 280, 241, 282),
    ),
}
_ALIASES = {"amd64": "x86_64", "arm64": "aarch64"}
CLONE3 = 435  # the same number on both


def program(machine: str | None = None) -> bytes | None:
    """The filter for `machine` (`uname -m`; default: this one), None for an ABI it does not know
    (the caller then says the sandbox is weaker there)."""
    name = (machine or platform.machine()).lower()
    arch = ARCHES.get(_ALIASES.get(name, name))
    if arch is None:
        return None
    return b"".join(struct.pack("<HBBI", *instruction) for instruction in _assemble(list(_source(arch))))


# --- a tiny assembler: instructions with labels for their jumps -------------------------------


@dataclass(frozen=True)
class _Op:
    """One line of the program: an instruction (a jump names its targets; "" is the next
    instruction) or, with `label`, a place to jump to."""

    op: str
    k: int = 0
    true: str = ""
    false: str = ""
    label: str = ""


def _source(arch: Arch) -> Iterator[_Op]:
    """The program: load the arch, the call's number or an argument; compare; return."""
    yield _Op("ld", k=_ARCH)
    yield _Op("jeq", k=arch.audit, false="kill")
    yield _Op("ld", k=_NR)
    if arch.x32:
        yield _Op("jge", k=X32_BIT, true="kill")
    yield _Op("jeq", k=arch.socket, true="socket")
    yield _Op("jeq", k=arch.clone, true="clone")
    yield _Op("jeq", k=arch.unshare, true="clone")
    yield _Op("jeq", k=CLONE3, true="enosys")
    yield _Op("jeq", k=arch.ioctl, true="ioctl")
    for number in arch.denied:
        yield _Op("jeq", k=number, true="eperm")
    yield _Op("ret", k=_ALLOW)
    yield _Op("label", label="socket")
    yield _Op("ld", k=_ARG0)
    yield _Op("jeq", k=AF_UNIX, true="eacces", false="allow")
    yield _Op("label", label="clone")
    yield _Op("ld", k=_ARG0)
    yield _Op("jset", k=CLONE_NEWUSER, true="eperm", false="allow")
    yield _Op("label", label="ioctl")
    yield _Op("ld", k=_ARG1)
    yield _Op("jeq", k=TIOCSTI, true="eperm")
    yield _Op("jeq", k=TIOCLINUX, true="eperm", false="allow")
    yield _Op("label", label="allow")
    yield _Op("ret", k=_ALLOW)
    yield _Op("label", label="eacces")
    yield _Op("ret", k=_ERRNO | errno.EACCES)
    yield _Op("label", label="eperm")
    yield _Op("ret", k=_ERRNO | errno.EPERM)
    yield _Op("label", label="enosys")
    yield _Op("ret", k=_ERRNO | errno.ENOSYS)
    yield _Op("label", label="kill")
    yield _Op("ret", k=_KILL_PROCESS)


_CODES = {"ld": _LD_W_ABS, "jeq": _JEQ_K, "jge": _JGE_K, "jset": _JSET_K, "ret": _RET_K}


def _assemble(lines: list[_Op]) -> list[tuple[int, int, int, int]]:
    """(code, jt, jf, k) for each instruction, the jumps resolved to offsets."""
    labels: dict[str, int] = {}
    position = 0
    for line in lines:
        if line.op == "label":
            labels[line.label] = position
        else:
            position += 1
    out: list[tuple[int, int, int, int]] = []
    for line in (line for line in lines if line.op != "label"):
        here = len(out)
        true = labels[line.true] - here - 1 if line.true else 0
        false = labels[line.false] - here - 1 if line.false else 0
        out.append((_CODES[line.op], true, false, line.k))
    return out
