"""When the sandbox said no: the path a failed command could not write, checked against the rules.

A command's errors name the path it could not write (`touch: cannot touch '/etc/x': Read-only
file system`). The output is the command's own, so it only points: a path is reported as refused
only when the sandbox's rules keep it read-only (outside every writable root), never because the
command said so.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

__all__ = ["READ_ONLY", "UNNAMED", "denied_path"]

UNNAMED = "a path outside the writable places"  # what the errors did not name

READ_ONLY = "Read-only file system"  # what the sandbox says where a command may not write
_QUOTED_PATH = re.compile(r"['\"`\u2018\u2019](/[^'\"`\u2018\u2019]*)['\"`\u2018\u2019]")


def _object_of(line: str, error: str) -> str | None:
    """The path an error line is about: the part just before `: <error>`, quoted or bare
    (`touch: cannot touch '/etc/x': Read-only file system`, `tee: /etc/x: Read-only file system`)."""
    before = line.split(f": {error}", 1)[0].rsplit(": ", 1)[-1].strip()
    quoted = _QUOTED_PATH.search(before)
    path = quoted.group(1) if quoted else before
    return path if path.startswith("/") else None


def denied_path(
    output: str,
    writable: Iterable[Path],
    private: Iterable[Path] = (),
    errors: tuple[str, ...] = (READ_ONLY,),
    protected: Iterable[Path] = (),
) -> str | None:
    """The path a failed command could not write because the sandbox keeps it read-only (read
    from its errors, kept only when it is outside every writable root or inside a protected
    path), or one it could not find in a directory the sandbox keeps private (its /tmp) though
    it exists outside; UNNAMED for a read-only error that names no such path; None when it
    failed for another reason. Permission errors are not the sandbox's: running outside it
    would not change them."""
    kept = [str(path).rstrip("/") + "/" for path in protected]
    roots = [str(root).rstrip("/") + "/" for root in writable]
    hidden = [str(root).rstrip("/") + "/" for root in private]
    unnamed = False  # a read-only error whose path cannot be read
    for line in output.splitlines():
        error = next((e for e in errors if f": {e}" in line), None)
        if error is not None:
            path = _object_of(line, error)
            unnamed = unnamed or path is None
            if path is not None and (not _under(path, roots) or _under(path, kept)):
                return path
        elif hidden and ": No such file or directory" in line:
            path = _object_of(line, "No such file or directory")
            if path is not None and _under(path, hidden) and Path(path).parent.exists():
                return path
    return UNNAMED if unnamed else None


def _under(path: str, roots: list[str]) -> bool:
    return any((path.rstrip("/") + "/").startswith(root) for root in roots)
