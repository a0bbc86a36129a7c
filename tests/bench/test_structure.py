"""The house rules of docs/ARCHITECTURE.md, held: sizes, and no import cycles at any grain."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from structure import (  # bench/structure.py, shared with the figures script
    MAX_FUNCTION_LINES,
    MAX_MODULE_LINES,
    cycles,
    folder_graph,
    functions,
    import_graph,
    module_lines,
)


def test_no_module_is_longer_than_the_limit():
    assert {path: n for path, n in module_lines().items() if n > MAX_MODULE_LINES} == {}


def test_no_function_is_longer_than_the_limit():
    assert [f for f in functions() if f.lines > MAX_FUNCTION_LINES] == []


def test_no_import_cycles_between_modules_or_folders():
    graph = import_graph()
    assert cycles(graph) == []
    assert cycles(folder_graph(graph)) == []


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
