"""cmdop-tui: a terminal operator that chats with an LLM doing real work on your machines.

As a library, its front door is `Operator`:

    from cmdop_tui import Operator

    operator = Operator(loop=True, approval="auto")
    print(operator.chat("list the files here and tell me the largest"))

`Operator` is imported on first use, so importing a submodule (the loop, the tools) stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cmdop_tui.support.version import VERSION as __version__

if TYPE_CHECKING:
    from cmdop_tui.session.operator import Operator

__all__ = ["Operator", "__version__"]


def __getattr__(name: str) -> Any:
    if name == "Operator":
        from cmdop_tui.session.operator import Operator

        return Operator
    raise AttributeError(f"module 'cmdop_tui' has no attribute {name!r}")
