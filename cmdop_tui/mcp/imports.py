"""The project's own modules a server's script imports, followed from file to file.

`python server.py` puts the script's folder first on the module path, and `node server.js`
loads `./lib/x.js` beside it: code a trusted server runs that its command line never names.
Read, never run: Python's `import a.b` / `from a import b` (the module `a.py` or the package
folder `a/` beside the script), and JavaScript's and TypeScript's relative specifiers
(`require("./x")`, `import ... from "../y.js"`, `import("./z")`). A name built at run time
(`importlib.import_module(name)`) is not seen: a server that loads its code so is covered by
its folder only.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Iterator
from itertools import islice
from pathlib import Path

MAX_SCRIPTS = 500  # scripts read while following imports, at most
MAX_SCRIPT_BYTES = 2 * 1024 * 1024  # a bigger script is not read (it is still fingerprinted)
PYTHON = frozenset({".py", ".pyw"})
SCRIPT = frozenset({".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", ".jsx", ".tsx"})
_SPECIFIER = re.compile(r"""(?:\bfrom|\bimport|\brequire\s*\(|\bimport\s*\()\s*["'](\.{1,2}/[^"'\n]+)["']""")
_RESOLVED = ("", *sorted(SCRIPT), ".json")  # as written (a folder: all of it), or with an extension


def is_script(path: Path) -> bool:
    """Whether :func:`imported` follows what `path` imports: a script, or a Python package folder."""
    if path.is_dir():
        return (path / "__init__.py").is_file() or (path / "__main__.py").is_file()
    return path.suffix in PYTHON | SCRIPT


def imported(path: Path) -> list[Path]:
    """The files and package folders the script `path` imports from beside it, and what those
    import, transitively; for a package folder (`python -m pkg`), what its modules import from
    beside the folder. At most MAX_SCRIPTS scripts read; paths as found, not checked to be inside."""
    beside = path.parent  # sys.path[0]: the script's folder, or where `-m` found the package
    queue = list(islice(path.rglob("*.py"), MAX_SCRIPTS)) if path.is_dir() else [path]
    found: list[Path] = []
    read = 0
    while queue and read < MAX_SCRIPTS:
        current = queue.pop(0)
        read += 1
        for module in _imports_of(current, beside):
            if module not in found and module != path and path not in module.parents:
                found.append(module)
                if module.is_file() and is_script(module):
                    queue.append(module)
    return found


def _imports_of(script: Path, beside: Path) -> Iterator[Path]:
    text = _text(script)
    if text is None:
        return
    if script.suffix in PYTHON:
        yield from _python_imports(text, beside)
    else:
        yield from _relative_specifiers(text, script.parent)


def _text(script: Path) -> str | None:
    try:
        if script.stat().st_size > MAX_SCRIPT_BYTES:
            return None
        return script.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def _python_imports(text: str, beside: Path) -> Iterator[Path]:
    """The top modules `text` imports absolutely, found beside the script (its sys.path[0])."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        for name in names:
            top = name.split(".", 1)[0]
            for path in (beside / top, beside / f"{top}.py"):
                if os.path.lexists(path):
                    yield path


def _relative_specifiers(text: str, folder: Path) -> Iterator[Path]:
    """What the relative specifiers of a JavaScript or TypeScript file name, as Node resolves
    them: the path as written (a folder: all of it), else with an extension."""
    for specifier in _SPECIFIER.findall(text):
        for ending in _RESOLVED:
            path = folder / f"{specifier}{ending}"
            if os.path.lexists(path):
                yield path
                break
