"""A package's names loaded on first use (PEP 562's module `__getattr__`): what start-up does not
draw is not imported before the first paint."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def loaded_on_use(package: str, where: Mapping[str, str]) -> Callable[[str], Any]:
    """A module `__getattr__` for `package` that imports each name of `where` from its module
    (absolute, or relative to `package`) when it is first asked for."""

    def __getattr__(name: str) -> Any:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(import_module(where[name], package), name)

    return __getattr__
