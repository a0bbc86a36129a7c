"""Bash globs as the floor reads them: a path may still hold ``*``, ``?`` or ``[...]`` when it is
judged (``rm -rf /*``), and is then judged by what it could match."""

from __future__ import annotations

import fnmatch


def has_glob(text: str) -> bool:
    return "*" in text or "?" in text or "[" in text


def glob_matches(pattern: str, name: str) -> bool:
    """Does one path component `pattern` (a bash glob) match `name`? A leading dot must be
    matched literally (bash without dotglob)."""
    if not has_glob(pattern):
        return pattern == name
    if name.startswith(".") and not pattern.startswith("."):
        return False
    return fnmatch.fnmatchcase(name, pattern)


def glob_path_matches(pattern: str, path: str) -> bool:
    """Component-wise glob match of a whole path (so `*` never crosses `/`)."""
    pat, concrete = pattern.split("/"), path.split("/")
    return len(pat) == len(concrete) and all(glob_matches(p, c) for p, c in zip(pat, concrete, strict=True))
