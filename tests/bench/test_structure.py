"""The house rules of docs/ARCHITECTURE.md, held: sizes, no import cycles at any grain, and the
conversation typed where it flows."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from structure import (  # bench/structure.py, shared with the figures script
    MAX_FUNCTION_LINES,
    MAX_UNTYPED_DICTS,
    MESSAGE_TYPES_MODULE,
    ROOT,
    _names_type,
    cycles,
    folder_graph,
    functions,
    import_graph,
    over_limits,
    type_tests,
    untyped_dicts,
)


def test_no_module_is_longer_than_its_limit():
    assert over_limits() == {}


def test_no_function_is_longer_than_the_limit():
    assert [f for f in functions() if f.lines > MAX_FUNCTION_LINES] == []


def test_no_import_cycles_between_modules_or_folders():
    graph = import_graph()
    assert cycles(graph) == []
    assert cycles(folder_graph(graph)) == []


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_conversation_is_typed_where_it_flows():
    assert (ROOT / MESSAGE_TYPES_MODULE).is_file()
    assert sum(untyped_dicts().values()) <= MAX_UNTYPED_DICTS, untyped_dicts()
    assert type_tests() == []


def compares_type(source: str) -> bool:
    comparison = ast.parse(source, mode="eval").body
    assert isinstance(comparison, ast.Compare)
    return any(map(_names_type, [comparison.left, *comparison.comparators]))


def test_the_type_test_finder_sees_each_spelling():
    for spelling in ['b["type"] == "text"', 'b.get("type") != "tool_use"', '"text" == b["type"]', 'b.get("type") in K']:
        assert compares_type(spelling), spelling
    assert not compares_type('b.get("kind") == "text"')
    assert not compares_type('b["name"] == "type"')
