"""The operators of ``${NAME...}`` computed on a value the floor knows: ``${HOME%/}`` is the home
directory, ``${X#*/}``, ``${X/a/b}``, ``${X:1:3}``, ``${X^^}``, ``${X@Q}`` what bash makes of
them.

A pattern is a bash glob. Case changes keep the value as it was too (on a file system that
ignores case, ``/HOME/ALICE`` is ``/home/alice``). What cannot be computed here (a pattern that
cannot be known, an operator not read, a value that is itself unknown) gives None: the caller
takes the result for one the floor does not follow (:data:`.paths.OPAQUE`).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable

from .arithmetic import Unknown, Unreadable, evaluate
from .context import MAX_CANDIDATES
from .paths import HOME, OPAQUE, unknowable
from .scanning import ansi_c

#: Expands a word inside the braces (a pattern, a replacement): its values, or None when one of
#: them cannot be known.
SubWord = Callable[[str], tuple[str, ...] | None]

_CASE = re.compile(r"(\^\^|\^|,,|,|~~|~)(.*)$", re.DOTALL)
_REMOVE = re.compile(r"(##|#|%%|%)(.*)$", re.DOTALL)
_REPLACE = re.compile(r"/([/#%]?)((?:\\.|[^/\\])*)(?:/(.*))?$", re.DOTALL)
_TRANSFORM = re.compile(r"@([QEULuAaKkP])$")


def operate(values: tuple[str, ...], op: str, sub: SubWord) -> tuple[str, ...] | None:
    """`${NAME<op>}` for each of NAME's `values`, or None when it cannot be computed."""
    if any(unknowable(value) for value in values):
        return None
    for pattern, compute in (
        (_REMOVE, _remove),
        (_REPLACE, _replace),
        (_CASE, _case),
        (_TRANSFORM, _transform),
    ):
        match = pattern.match(op)
        if match is not None:
            return _bounded(compute(values, match, sub))
    if op.startswith(":"):
        return _bounded(_substring(values, op[1:]))
    return None


def _bounded(found: list[str] | None) -> tuple[str, ...] | None:
    return None if found is None else tuple(dict.fromkeys(found))[:MAX_CANDIDATES]


def _patterns(text: str, sub: SubWord) -> tuple[str, ...] | None:
    found = sub(text) if text else ("",)
    return None if found is None or any(unknowable(p) for p in found) else found


def _remove(values: tuple[str, ...], match: re.Match[str], sub: SubWord) -> list[str] | None:
    """${X#p} ${X##p}: the shortest, longest prefix matching p taken off; % and %%: suffix."""
    kind, patterns = match.group(1), _patterns(match.group(2), sub)
    if patterns is None:
        return None
    out: list[str] = []
    for value in values:
        cuts = list(range(len(value) + 1))
        # where to cut, the first that matches wins: the shortest match first for # and %
        order = cuts if kind in ("#", "%%") else cuts[::-1]
        for pattern in patterns:
            if kind.startswith("#"):
                kept = next((value[i:] for i in order if fnmatch.fnmatchcase(value[:i], pattern)), value)
            else:
                kept = next((value[:i] for i in order if fnmatch.fnmatchcase(value[i:], pattern)), value)
            out.append(kept)
    return out


def _glob_regex(pattern: str) -> str:
    """A bash glob as a regular expression that matches anywhere (no anchors)."""
    translated = fnmatch.translate(pattern)  # (?s:...)\Z
    return translated[: -len(r"\Z")] if translated.endswith(r"\Z") else translated


def _replace(values: tuple[str, ...], match: re.Match[str], sub: SubWord) -> list[str] | None:
    """${X/p/r} (the first match), ${X//p/r} (all), ${X/#p/r} (a prefix), ${X/%p/r} (a suffix)."""
    anchor, patterns = match.group(1), _patterns(match.group(2), sub)
    replacements = _patterns(match.group(3) or "", sub)
    if patterns is None or replacements is None:
        return None
    out: list[str] = []
    for value in values:
        for pattern in patterns:
            if not pattern:
                out.append(value)
                continue
            regex = _glob_regex(pattern)
            regex = "^" + regex if anchor == "#" else regex + "$" if anchor == "%" else regex
            for replacement in replacements:
                count = 0 if anchor == "/" else 1
                out.append(re.sub(regex, _literally(replacement), value, count=count))
    return out


def _literally(text: str) -> Callable[[re.Match[str]], str]:
    """A replacement for re.sub that is `text` itself (no backslash escapes)."""

    def replacement(_match: re.Match[str]) -> str:
        return text

    return replacement


def _case(values: tuple[str, ...], match: re.Match[str], sub: SubWord) -> list[str]:
    """^ ^^ , ,, ~ ~~: the value with its case changed, and as it was."""
    kind = match.group(1)
    out: list[str] = []
    for value in values:
        changed = {
            "^^": value.upper(),
            "^": value[:1].upper() + value[1:],
            ",,": value.lower(),
            ",": value[:1].lower() + value[1:],
            "~~": value.swapcase(),
            "~": value[:1].swapcase() + value[1:],
        }[kind]
        out += [changed, value]
    return out


def _transform(values: tuple[str, ...], match: re.Match[str], sub: SubWord) -> list[str] | None:
    """@Q (quoted), @E (escapes), @U @u @L (case, and as it was), @K @k @a @A; @P is not read."""
    kind = match.group(1)
    if kind == "P":
        return None
    out: list[str] = []
    for value in values:
        if kind == "Q":
            out.append("'" + value.replace("'", "'\\''") + "'")
        elif kind == "E":
            out.append(ansi_c(value))
        elif kind in "ULu":
            out += [value.upper() if kind == "U" else value.lower() if kind == "L" else value[:1].upper() + value[1:]]
            out.append(value)
        else:
            out.append(value)
    return out


def _substring(values: tuple[str, ...], spec: str) -> list[str] | None:
    """${X:offset} and ${X:offset:length}, the numbers being arithmetic."""
    offset_text, _, length_text = spec.partition(":")
    try:
        offset = evaluate(offset_text, lambda name: None)
        length = evaluate(length_text, lambda name: None) if length_text.strip() else None
    except (Unknown, Unreadable):
        return None
    out: list[str] = []
    for value in values:
        start = max(len(value) + offset, 0) if offset < 0 else min(offset, len(value))
        if length is None:
            out.append(value[start:])
        else:
            end = len(value) + length if length < 0 else start + length
            out.append(value[start : max(end, start)])
    return out


# what a home may be spelled as, to see what an operator makes of a home whose name is not known
_HOME_STAND_INS = ("/home/cmdop-a", "/root")


def operate_on_homes(values: tuple[str, ...], op: str, sub: SubWord) -> tuple[str, ...] | None:
    """`operate`, where a value that is the home (whose real name is not known: HOME is the
    floor's spelling of it) is tried as two real homes, and what comes back mapped to HOME again;
    when the two disagree, the result is one the floor does not follow as well."""
    if not any(v == HOME or v.startswith(HOME + "/") for v in values):
        return operate(values, op, sub)
    results: list[set[str]] = []
    for stand_in in _HOME_STAND_INS:
        tried = tuple(stand_in + v[len(HOME) :] if v == HOME or v.startswith(HOME + "/") else v for v in values)
        found = operate(tried, op, sub)
        if found is None:
            return None
        results.append(
            {HOME + r[len(stand_in) :] if r == stand_in or r.startswith(stand_in + "/") else r for r in found}
        )
    union = tuple(sorted(results[0] | results[1]))
    return union if results[0] == results[1] else (*union, OPAQUE)
