"""`@` completion over a 100,000-file tree: first list <= 100 ms, each key after <= 16 ms.

Run: .venv/bin/python bench/bench_completion.py [FILES]

A git repository of FILES files (default 100,000; names from a project-like vocabulary, 1 to 7
folders deep, all in git's index) is made in a temporary directory. Then, as the prompt does:

1. first list, cold: from the first `@` (`PathIndex.start()`) to the first list shown (git's
   tracked files listed, the shallowest taken); RUNS times; and, for information, until any
   query can be answered (the index made);
2. each key after: several queries typed one character at a time, each from a fresh `@` on the
   listed tree, the search of each prefix timed (median, p95, worst), what the prompt does per key
   (the list's drawing is not in it).
"""

from __future__ import annotations

import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cmdop_tui.machines.path_index import PathIndex

FIRST_LIST_MS = 100.0
PER_KEY_MS = 16.0
RUNS = 5
QUERIES = [
    "widgetparser",
    "components/index",
    "mainhelper.py",
    "srccore",
    "README",
    "hooks/store",
    "test_api_client",
    "cfgldr",
    "zzzz",
    "Render",
]
WORDS = (
    "src lib test tests docs app core util utils model models view views controller api server client "
    "config data cache build tools scripts assets components pages hooks styles index main helper helpers "
    "parser lexer render widget widgets store loader schema types routes handlers middleware auth db"
).split()
EXTENSIONS = [".py", ".ts", ".tsx", ".js", ".md", ".json", ".rs", ".go", ".css", ".html", ".txt", ".yaml"]


def make_tree(root: Path, count: int) -> None:
    """`count` empty files in a project-like layout, all added to git's index."""
    chooser = random.Random(24)
    made: set[str] = set()
    while len(made) < count:
        folders = [chooser.choice(WORDS) + (str(chooser.randint(0, 40)) if chooser.random() < 0.4 else "")
                   for _ in range(chooser.randint(1, 7))]  # fmt: skip
        name = f"{chooser.choice(WORDS)}_{chooser.choice(WORDS)}{chooser.choice(EXTENSIONS)}"
        made.add("/".join([*folders, name]))
    for relative in sorted(made):
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
    (root / "README.md").write_text("a tree to complete from\n")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)


def first_list_ms(root: Path) -> tuple[float, float, int]:
    """(ms to the first list, ms until any query is answered, files listed)."""
    started = time.perf_counter()
    index = PathIndex(root)
    index.start()
    index.listed.wait()
    shown = index.search("")
    first = (time.perf_counter() - started) * 1000
    assert shown, "no files listed"
    index.ready.wait()
    indexed = (time.perf_counter() - started) * 1000
    index.wait()  # the untracked files too, and the warm-up: the next run starts quiet
    return first, indexed, len(index)


def per_key_ms(root: Path) -> list[float]:
    timings: list[float] = []
    for query in QUERIES:
        index = PathIndex(root)  # a fresh `@`: nothing learnt from the query before
        index.start()
        index.wait()  # typed once listed: the figure is the keys', not the listing's
        for end in range(1, len(query) + 1):
            started = time.perf_counter()
            index.search(query[:end])
            timings.append((time.perf_counter() - started) * 1000)
    return timings


def verdict(value: float, limit: float) -> str:
    return "ok" if value <= limit else "OVER"


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    with tempfile.TemporaryDirectory(prefix="bench-completion-") as directory:
        root = Path(directory)
        print(f"making a git tree of {count:,} files…", flush=True)
        make_tree(root, count)
        firsts, indexed = [], []
        for _ in range(RUNS):
            first, ready, listed = first_list_ms(root)
            firsts.append(first)
            indexed.append(ready)
        keys = sorted(per_key_ms(root))
    first = statistics.median(firsts)
    median, p95 = statistics.median(keys), keys[int(len(keys) * 0.95)]
    print(f"files listed: {listed:,}")
    print(f"first list (cold: git ls-files, the shallowest paths): median {first:.0f} ms, "
          f"worst {max(firsts):.0f} ms  (limit {FIRST_LIST_MS:.0f} ms: {verdict(first, FIRST_LIST_MS)})")  # fmt: skip
    print(f"  any query answered (the index made): median {statistics.median(indexed):.0f} ms")
    print(f"each key after ({len(keys)} keys over {len(QUERIES)} queries): median {median:.1f} ms, "
          f"p95 {p95:.1f} ms, worst {keys[-1]:.1f} ms  (limit {PER_KEY_MS:.0f} ms: {verdict(p95, PER_KEY_MS)})")  # fmt: skip


if __name__ == "__main__":
    main()
