"""A real full disk for tests and benches: a small tmpfs, filled to the last byte."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path


class NoFilesystem(Exception):
    """A small filesystem cannot be mounted here (not root, no tmpfs); the message says why."""


@contextlib.contextmanager
def small_filesystem(path: Path, size: str = "256k", *options: str) -> Iterator[Path]:
    """A tmpfs of `size` mounted at `path` for the duration (root only)."""
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        raise NoFilesystem("mounting a small filesystem needs root")
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", ",".join([f"size={size}", "mode=0700", *options]), "tmpfs", str(path)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        raise NoFilesystem(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=True)


def fill(directory: Path) -> Path:
    """Fill the filesystem holding `directory` to the last byte; the file that does it."""
    filler = directory / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for chunk in (65536, 4096, 1):
            with contextlib.suppress(OSError):
                while True:
                    os.write(fd, b"x" * chunk)
    finally:
        os.close(fd)
    return filler
