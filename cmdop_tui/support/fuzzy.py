"""Fuzzy matching of paths as a prompt's `@` completes them: fast on 100,000 paths per keystroke.

A query matches a path when its characters appear in it in order (a subsequence). Candidates are
found in tiers, each by one regular expression over all the paths joined in one string (the
scan runs in C, not a Python loop over paths): the query whole in the file's name, whole in the
path, spread over the file's name, spread over the path. Each tier stops once enough candidates
are pooled; the paths are stored shallow and short first, so the first found are the likely
ones. The pool is then scored in Python (consecutive characters, the file's name, depth) and the
best returned. Matching is case-smart: a query with a capital letter matches case exactly.

A query that extends the previous one (typing on) searches only the paths that matched it, when
they were all found and few.

    paths = FuzzyPaths(["src/app.py", "README.md"])
    paths.search("app", limit=20)  -> ["src/app.py"]
"""

from __future__ import annotations

import heapq
import re
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import accumulate, chain, repeat
from operator import add, contains, methodcaller

__all__ = ["FuzzyPaths", "score", "shallowest"]

DEPTH = methodcaller("count", "/")
WARM_CHARS = "abcdefghijklmnopqrstuvwxyz._-/0123456789"
POOL = 150  # candidates scored per query
SPREAD_IN_NAME_MAX = 2_000  # paths searched with every tier at most
NARROW_MAX = 8_000  # paths holding every character of a query: searched whole when at most this many


@dataclass(frozen=True)
class _Haystack:
    """Paths joined by newlines, with where each starts, searched by one regular expression."""

    paths: Sequence[str]  # as shown
    text: str  # the paths as matched (lowercased for a lowercase query), one a line
    starts: tuple[int, ...]  # where each path starts in `text`

    @classmethod
    def of(cls, shown: Sequence[str], matched: Sequence[str], joined: str | None = None) -> _Haystack:
        """`joined`: `matched` joined by newlines, when the caller has it already."""
        ends = accumulate(map(len, matched))  # C loops: this runs over every path at each listing
        starts = tuple(map(add, chain((0,), ends), range(len(matched))))[: len(matched)]
        return cls(shown, "\n".join(matched) if joined is None else joined, starts)

    def subset(self, lines: Sequence[int]) -> _Haystack:
        """The haystack of these paths alone (indexes into this one)."""
        return _Haystack.of([self.paths[i] for i in lines], [self.line(i) for i in lines])

    def line(self, index: int) -> str:
        end = self.starts[index + 1] - 1 if index + 1 < len(self.starts) else len(self.text)
        return self.text[self.starts[index] : end]

    def lines(self, pattern: re.Pattern[str], seen: set[int], limit: int | None) -> Iterator[int]:
        """Indexes of paths `pattern` matches in, not in `seen`, in order; at most `limit` new ones."""
        found = 0
        starts = self.starts
        for match in pattern.finditer(self.text):
            line = bisect_right(starts, match.start()) - 1
            if line in seen:
                continue
            seen.add(line)
            yield line
            found += 1
            if limit is not None and found >= limit:
                return


def _spread(query: str, *, within_name: bool) -> str:
    """Each character, then anything up to the next (greedy, no going back), on one line."""
    stop = "\n/" if within_name else "\n"
    parts = [re.escape(query[0])]
    for char in query[1:]:
        parts.append(f"[^{re.escape(stop + char)}]*+{re.escape(char)}")
    return "".join(parts)


def _tiers(query: str) -> list[re.Pattern[str]]:
    """The patterns, best first: whole in the name, whole in the path, spread in the name, anywhere."""
    whole, in_name, rest = re.escape(query), r"(?=[^/\n]*$)", r"[^\n]*+"  # `rest`: one match a line
    return [
        re.compile(whole + in_name + rest, re.MULTILINE),
        re.compile(whole + rest),
        re.compile(_spread(query, within_name=True) + in_name + rest, re.MULTILINE),
        re.compile(_spread(query, within_name=False) + rest),
    ]


def shallowest(paths: Sequence[str], limit: int) -> list[str]:
    """The `limit` least deep of `paths` (in their order among equals): the list of an empty query."""
    return heapq.nsmallest(limit, paths, key=DEPTH)


def score(path: str, query: str) -> float:
    """How well `query` (already case-folded as the path is) fits `path`: higher is better."""
    name_at = path.rfind("/") + 1
    value = 0.0
    where = path.rfind(query)
    if where >= 0:
        value += 100 + 20 * len(query)
        if where >= name_at:
            value += 60 + (40 if where == name_at else 0)
    else:
        value += _spread_score(path, query, name_at)
    return value - 3 * path.count("/") - len(path) / 20


def _spread_score(path: str, query: str, name_at: int) -> float:
    """Consecutive runs and characters in the file's name, for a greedy subsequence match."""
    value, last, position = 0.0, -2, -1
    for char in query:
        position = path.find(char, position + 1)
        if position < 0:
            return -1000.0
        if position == last + 1:
            value += 8
        if position >= name_at:
            value += 4
        if position == 0 or path[position - 1] in "/_-. ":
            value += 6  # the start of a word
        last = position
    return value


class _Side:
    """The paths as one case mode matches them, with which paths hold each character (lazily)."""

    def __init__(self, shown: tuple[str, ...], matched: list[str], joined: str | None = None) -> None:
        self.matched = matched
        self.haystack = _Haystack.of(shown, matched, joined)
        self._holders: dict[str, int] = {}  # a character -> byte i is 1 when path i holds it
        self._last: tuple[int, _Haystack] | None = None  # typing on seldom changes the mask

    def holding(self, chars: str) -> int:
        """A byte per path (as an int, first path first): 1 when the path holds every one of `chars`."""
        mask = -1
        for char in set(chars):
            if char not in self._holders:
                self._holders[char] = int.from_bytes(bytes(map(contains, self.matched, repeat(char))), "big")
            mask &= self._holders[char]
        return mask

    def warm(self, chars: str) -> None:
        """Learn which paths hold each of `chars` now, not at the first key that needs it."""
        for char in chars:
            self.holding(char)

    def narrowed(self, mask: int) -> _Haystack:
        """The haystack of the paths `mask` marks."""
        if self._last is not None and self._last[0] == mask:
            return self._last[1]
        marks = mask.to_bytes(len(self.matched), "big")
        lines = [found.start() for found in _MARK.finditer(marks)]
        haystack = _Haystack.of([self.haystack.paths[i] for i in lines], [self.matched[i] for i in lines])
        self._last = (mask, haystack)
        return haystack


_MARK = re.compile(b"\x01")


class FuzzyPaths:
    """A set of paths to complete from, searched per keystroke."""

    def __init__(self, paths: Sequence[str]) -> None:
        """`paths`: no newline in any (one path a line is how they are searched)."""
        self.paths = tuple(sorted(paths, key=DEPTH))  # shallow first (a stable sort: git's order kept)
        folded = "\n".join(self.paths).lower()
        self._folded = _Side(self.paths, folded.split("\n") if self.paths else [], folded)
        self._exact_side: _Side | None = None  # made at the first query with a capital letter
        self._previous: tuple[str, bool, _Haystack] | None = None  # a query, its case, all it matched

    @property
    def _exact(self) -> _Side:
        if self._exact_side is None:
            self._exact_side = _Side(self.paths, list(self.paths))
        return self._exact_side

    def __len__(self) -> int:
        return len(self.paths)

    def warm(self) -> None:
        """Do now what the first keys would (slow: in a worker thread, once)."""
        self._folded.warm(WARM_CHARS)
        self._exact.warm("")

    def search(self, query: str, *, limit: int = 50) -> list[str]:
        """The best `limit` paths for `query`, best first; the shallowest paths for an empty one."""
        if not query:
            return list(self.paths[:limit])
        fold = query == query.lower()
        haystack, tiers = self._where(query, fold)
        seen: set[int] = set()
        pool: list[int] = []
        for pattern in tiers:
            pool += haystack.lines(pattern, seen, POOL - len(pool))
            if len(pool) >= POOL:
                break
        # Under POOL after every tier: all that match are in `seen`, and the next key's are among them.
        self._previous = (query, fold, haystack.subset(sorted(seen))) if len(pool) < POOL else None
        ranked = sorted(pool, key=lambda line: -score(haystack.line(line), query))
        return [haystack.paths[line] for line in ranked[:limit]]

    def _where(self, query: str, fold: bool) -> tuple[_Haystack, list[re.Pattern[str]]]:
        """What to search and with which tiers: the previous query's matches when this one
        extends it and they were all found; else the paths holding every character of it when
        they are few; else all the paths. Spread-in-name is the slow tier: only over a few paths."""
        tiers = _tiers(query)
        if self._previous is not None:
            previous, previous_fold, haystack = self._previous
            if previous_fold == fold and query.startswith(previous):
                return haystack, tiers
        side = self._folded if fold else self._exact
        holders = side.holding(query)
        count = holders.bit_count()
        if count <= SPREAD_IN_NAME_MAX:
            return side.narrowed(holders), tiers
        if count <= NARROW_MAX:
            return side.narrowed(holders), [tiers[0], tiers[1], tiers[3]]
        return side.haystack, [tiers[0], tiers[1], tiers[3]]
