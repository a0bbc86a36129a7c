"""The shape of the package, measured: module and function sizes, import cycles.

Used by `bench/bench_structure.py` (which prints the figures) and by `tests/bench/test_structure.py`
(which holds them). Cycles are counted on grimp's import graph with function-level and
`TYPE_CHECKING` imports in (a type-only import is a dependency too), at two grains: modules, and
folders (a module belongs to the folder it sits in; a package's `__init__` to the package's own
folder). Untyped data is counted where the conversation flows: the text `dict[str, Any]`, and
tests of a message's `"type"` outside the module that defines the conversation's types.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "cmdop_tui"
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 60
# Rooms held to less than the house limit: the hosts stay hosts.
MODULE_LIMITS = {"cmdop_tui/tui/app.py": 300, "cmdop_tui/agent/runner.py": 350}
FOLDER_LIMITS = {"cmdop_tui/config/": 400}
# Where the conversation flows: at most 28 `dict[str, Any]` (half of the 56 the untyped
# conversation had) and no test of a message's "type" outside its types module.
CONVERSATION_FOLDERS = ("cmdop_tui/agent/", "cmdop_tui/transcripts/", "cmdop_tui/tui/")
MAX_UNTYPED_DICTS = 28
MESSAGE_TYPES_MODULE = "cmdop_tui/agent/messages.py"
UNTYPED_DICT = "dict[str, Any]"


@dataclass(frozen=True)
class Function:
    path: str
    name: str
    lines: int


def modules() -> list[Path]:
    return sorted((ROOT / PACKAGE).rglob("*.py"))


def module_lines() -> dict[str, int]:
    """Lines per module, by path relative to the repository."""
    return {str(path.relative_to(ROOT)): len(path.read_text().splitlines()) for path in modules()}


def functions() -> list[Function]:
    """Every function and method with its length in lines (decorators excluded), longest first."""
    found = []
    for path in modules():
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                found.append(Function(str(path.relative_to(ROOT)), node.name, length))
    return sorted(found, key=lambda f: -f.lines)


def over_limits() -> dict[str, int]:
    """The modules longer than the house limit, or than their own or their folder's limit."""
    over = {}
    for path, n in module_lines().items():
        limits = [MAX_MODULE_LINES, MODULE_LIMITS.get(path, MAX_MODULE_LINES)]
        limits += [limit for folder, limit in FOLDER_LIMITS.items() if path.startswith(folder)]
        if n > min(limits):
            over[path] = n
    return over


def conversation_modules() -> list[Path]:
    return [p for p in modules() if str(p.relative_to(ROOT)).startswith(CONVERSATION_FOLDERS)]


def untyped_dicts() -> dict[str, int]:
    """`dict[str, Any]` per module where the conversation flows (modules with none left out)."""
    counts = {str(p.relative_to(ROOT)): p.read_text().count(UNTYPED_DICT) for p in conversation_modules()}
    return {path: n for path, n in counts.items() if n}


def _names_type(node: ast.expr) -> bool:
    """`x["type"]` or `x.get("type")`: reading a block's or message's kind by its string key."""
    if isinstance(node, ast.Subscript):
        return isinstance(node.slice, ast.Constant) and node.slice.value == "type"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
        return bool(node.args) and isinstance(node.args[0], ast.Constant) and node.args[0].value == "type"
    return False


def type_tests() -> list[str]:
    """`path:line` of each comparison of a `"type"` key outside the conversation's types module."""
    found = []
    for path in conversation_modules():
        where = str(path.relative_to(ROOT))
        if where == MESSAGE_TYPES_MODULE:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Compare) and any(map(_names_type, [node.left, *node.comparators])):
                found.append(f"{where}:{node.lineno}")
    return found


def import_graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports, anywhere in its body, TYPE_CHECKING included."""
    graph = grimp.build_graph(PACKAGE, exclude_type_checking_imports=False, cache_dir=None)
    return {module: set(graph.find_modules_directly_imported_by(module)) for module in graph.modules}


def folder_of(module: str, packages: set[str]) -> str:
    return module if module in packages else module.rpartition(".")[0]


def folder_graph(graph: Mapping[str, set[str]]) -> dict[str, set[str]]:
    packages = {path_to_module(p.parent) for p in (ROOT / PACKAGE).rglob("__init__.py")}
    folders: dict[str, set[str]] = {}
    for module, imported in graph.items():
        source = folder_of(module, packages)
        targets = {folder_of(target, packages) for target in imported} - {source}
        folders.setdefault(source, set()).update(targets)
    return folders


def path_to_module(folder: Path) -> str:
    return ".".join(folder.relative_to(ROOT).parts)


def cycles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The strongly connected parts of more than one node (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(graph.get(root, ())))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(graph.get(child, ()))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                part = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    part.append(member)
                    if member == node:
                        break
                if len(part) > 1:
                    found.append(sorted(part))
    return found
