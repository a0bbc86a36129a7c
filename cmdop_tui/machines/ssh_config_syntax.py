"""The words of an ssh_config line and its patterns, split as OpenSSH splits them.

Ported from OpenSSH's misc.c (`strdelim`, `argv_split`) and match.c (`match_pattern`,
`match_pattern_list`), so that what we read is what `ssh` reads: keywords are case-insensitive,
`Keyword value`, `Keyword=value` and `Keyword = value` are one thing, double or single quotes
group words, a word that starts with `#` ends the line, and a pattern knows only `*` and `?`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

WHITESPACE = " \t\r\n"
WILDCARDS = frozenset("*?")


class SyntaxProblem(ValueError):
    """A line ssh would refuse (it stops with `terminating, N bad configuration options`)."""


@dataclass(frozen=True)
class Line:
    """One directive: its keyword (lower case), its words, and the raw rest of the line
    (ProxyCommand and ProxyJump take the rest whole, comment and all, as ssh does)."""

    keyword: str
    args: tuple[str, ...]
    rest: str


def strdelim(text: str) -> tuple[str | None, str]:
    """The next word of a line and what follows it: a word ends at whitespace, at a quote (a
    quoted stretch is the word's end) or at one `=` (with whitespace either side of it).
    (None, "") for an unmatched quote, which makes ssh skip the line."""
    end = next((i for i, c in enumerate(text) if c in WHITESPACE + '"='), None)
    if end is None:
        return text, ""
    if text[end] == '"':
        after = text[end + 1 :]
        close = after.find('"')
        if close < 0:
            return None, ""
        return text[:end] + after[:close], after[close + 1 :].lstrip(WHITESPACE)
    split_on_equals = text[end] == "="
    rest = text[end + 1 :].lstrip(WHITESPACE)
    if rest.startswith("=") and not split_on_equals:
        rest = rest[1:].lstrip(WHITESPACE)
    return text[:end], rest


def argv_split(text: str) -> tuple[str, ...]:
    """The words of a directive's arguments: quotes group (and are removed), `\\` escapes a
    quote, a backslash or (outside quotes) a space, and a word starting with `#` ends them.
    Raises SyntaxProblem for an unclosed quote."""
    words: list[str] = []
    i, n = 0, len(text)
    while i < n:
        if text[i] in " \t":
            i += 1
            continue
        if text[i] == "#":
            break
        word, quote = [], ""
        while i < n:
            c = text[i]
            if c == "\\" and i + 1 < n and (text[i + 1] in "'\"\\" or (not quote and text[i + 1] == " ")):
                i += 1
                word.append(text[i])
            elif not quote and c in " \t":
                break
            elif not quote and c in "\"'":
                quote = c
            elif quote and c == quote:
                quote = ""
            else:
                word.append(c)
            i += 1
        if quote:
            raise SyntaxProblem("invalid quotes")
        words.append("".join(word))
    return tuple(words)


def parse_line(raw: str) -> Line | None:
    """One line of a config file as a directive; None for a blank or comment line.
    Raises SyntaxProblem for a line ssh would refuse to read."""
    text = raw.rstrip(WHITESPACE + "\f")
    keyword, rest = strdelim(text)
    if keyword == "":  # the line starts with whitespace
        keyword, rest = strdelim(rest)
    if not keyword or keyword.startswith("#"):
        return None
    rest = rest.lstrip(WHITESPACE)
    if not rest:
        raise SyntaxProblem(f'no argument after keyword "{keyword}"')
    return Line(keyword.lower(), argv_split(rest), rest)


@lru_cache(maxsize=4096)
def _pattern(pattern: str) -> re.Pattern[str]:
    return re.compile(_regex(pattern), re.DOTALL)


def _regex(pattern: str) -> str:
    """A pattern as an expression that cannot backtrack without bound: between its `*`s, each
    run is found at its first place (an atomic group: the first place leaves the most room, so
    no other need be tried). `*a*a*a...b` taken as `.*a.*a.*a...b` took time exponential in
    its stars (a Host line of a dotfiles repository could hang the reading)."""
    head, *runs = pattern.split("*")
    if not runs:
        return _run(head)
    middle = "".join(f"(?>.*?{_run(run)})" for run in runs[:-1] if run)
    return f"{_run(head)}{middle}.*{_run(runs[-1])}"


def _run(text: str) -> str:
    return "".join("." if c == "?" else re.escape(c) for c in text)


@lru_cache(maxsize=256)
def _host_line(patterns: tuple[str, ...]) -> tuple[re.Pattern[str] | None, re.Pattern[str] | None]:
    """A Host line's patterns as two expressions, its plain ones and its negated ones, compiled
    once: every alias is matched against the line, and one by one a line of thousands of
    patterns made a config's reading quadratic in them (each recompiled past the cache)."""
    plain = [_regex(p) for p in patterns if not p.startswith("!")]
    negated = [_regex(p[1:]) for p in patterns if p.startswith("!")]
    return _either(plain), _either(negated)


def _either(regexes: list[str]) -> re.Pattern[str] | None:
    return re.compile("|".join(f"(?:{r})" for r in regexes), re.DOTALL) if regexes else None


def host_line_applies(name: str, patterns: tuple[str, ...]) -> bool:
    """Whether a `Host` line applies to `name`: one of its patterns matches and none of its
    negated ones does (case counts)."""
    plain, negated = _host_line(patterns)
    if negated is not None and negated.fullmatch(name):
        return False
    return plain is not None and plain.fullmatch(name) is not None


def match_pattern(name: str, pattern: str) -> bool:
    """Whether `name` matches a pattern of `*` (any run) and `?` (any one character); nothing
    else is special (a `[` is itself), and case counts."""
    return _pattern(pattern).fullmatch(name) is not None


def match_pattern_list(name: str, patterns: str, *, fold_case: bool = False) -> int:
    """A comma-separated list with `!` negations, as OpenSSH's match_pattern_list: -1 when a
    negated pattern matches, 1 when a plain one does, 0 when none does."""
    if fold_case:
        name, patterns = name.lower(), patterns.lower()
    found = 0
    for pattern in patterns.split(","):
        negated = pattern.startswith("!")
        if match_pattern(name, pattern[1:] if negated else pattern):
            if negated:
                return -1
            found = 1
    return found


def is_concrete(word: str) -> bool:
    """A `Host` word that names one host (no wildcard, no negation): an alias."""
    return bool(word) and not word.startswith("!") and not WILDCARDS & set(word)
