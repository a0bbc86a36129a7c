"""Print the package's structural figures: module and function sizes (and the rooms held to less),
import cycles (type-only imports included), untyped data where the conversation flows, and whether
ruff, the formatter, mypy and the import-linter contracts pass.

    .venv/bin/python bench/bench_structure.py
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from structure import (  # the sibling module, found through the path set above
    FOLDER_LIMITS,
    MAX_FUNCTION_LINES,
    MAX_MODULE_LINES,
    MAX_UNTYPED_DICTS,
    MESSAGE_TYPES_MODULE,
    MODULE_LIMITS,
    ROOT,
    UNTYPED_DICT,
    cycles,
    folder_graph,
    functions,
    import_graph,
    module_lines,
    over_limits,
    type_tests,
    untyped_dicts,
)

BIN = Path(sys.executable).parent
CHECKS = {
    "ruff check": [str(BIN / "ruff"), "check", "."],
    "ruff format --check": [str(BIN / "ruff"), "format", "--check", "."],
    "mypy": [str(BIN / "mypy")],
    "lint-imports": [str(BIN / "lint-imports")],
}


def main() -> None:
    lines = module_lines()
    longest = max(lines, key=lines.__getitem__)
    print(f"longest module: {longest}, {lines[longest]} lines (limit {MAX_MODULE_LINES})")
    for path, limit in MODULE_LIMITS.items():
        print(f"{path}: {lines.get(path, 0)} lines (limit {limit})")
    for folder, limit in FOLDER_LIMITS.items():
        inside = {p: n for p, n in lines.items() if p.startswith(folder)}
        print(f"longest module in {folder}: {max(inside.values(), default=0)} lines (limit {limit})")
    print(f"modules over their limit: {len(over_limits())}")
    for path, n in over_limits().items():
        print(f"  {path} {n}")
    over = [f for f in functions() if f.lines > MAX_FUNCTION_LINES]
    top = functions()[0]
    print(f"longest function: {top.path}:{top.name}, {top.lines} lines (limit {MAX_FUNCTION_LINES})")
    print(f"functions over {MAX_FUNCTION_LINES} lines: {len(over)}")
    for function in over:
        print(f"  {function.path}:{function.name} {function.lines}")
    graph = import_graph()
    module_cycles, folder_cycles = cycles(graph), cycles(folder_graph(graph))
    print(f"import cycles between modules: {len(module_cycles)}")
    for cycle in module_cycles:
        print("  " + " <-> ".join(cycle))
    print(f"import cycles between folders: {len(folder_cycles)}")
    for cycle in folder_cycles:
        print("  " + " <-> ".join(cycle))
    dicts = untyped_dicts()
    print(f"{UNTYPED_DICT} in agent/, transcripts/, tui/: {sum(dicts.values())} (limit {MAX_UNTYPED_DICTS})")
    for path, n in sorted(dicts.items(), key=lambda item: -item[1]):
        print(f"  {path} {n}")
    tests = type_tests()
    print(f'tests of a message\'s "type" outside {MESSAGE_TYPES_MODULE}: {len(tests)}')
    for where in tests:
        print(f"  {where}")
    for name, command in CHECKS.items():
        code = subprocess.run(command, cwd=ROOT, capture_output=True).returncode
        print(f"{name}: exit {code}")


if __name__ == "__main__":
    main()
