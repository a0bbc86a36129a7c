"""cmdop-tui: a terminal operator that chats with an LLM doing real work on your machines.

As a library, its front door is `Operator`:

    from cmdop_tui import Operator

    with Operator(loop=True, approval="auto") as operator:
        print(operator.chat("list the files here and tell me the largest"))

The names below are imported on first use, so importing a submodule (the loop, a tool) stays
light and never loads the model SDK.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from cmdop_tui.support.version import VERSION as __version__

if TYPE_CHECKING:
    from cmdop_tui.agent.approval import Approval, ToolCall
    from cmdop_tui.config.settings import RunOptions, Settings
    from cmdop_tui.machines.spec import MachineSpec
    from cmdop_tui.session.operator import Operator, OperatorError
    from cmdop_tui.session.rewind import RewindConflict, RewindError, Rewound, TurnSummary

_LAZY = {
    "Operator": "cmdop_tui.session.operator",
    "OperatorError": "cmdop_tui.session.operator",
    "Approval": "cmdop_tui.agent.approval",
    "ToolCall": "cmdop_tui.agent.approval",
    "MachineSpec": "cmdop_tui.machines.spec",
    "Settings": "cmdop_tui.config.settings",
    "RunOptions": "cmdop_tui.config.settings",
    "RewindConflict": "cmdop_tui.session.rewind",
    "RewindError": "cmdop_tui.session.rewind",
    "Rewound": "cmdop_tui.session.rewind",
    "TurnSummary": "cmdop_tui.session.rewind",
}

__all__ = [
    "Approval",
    "MachineSpec",
    "Operator",
    "OperatorError",
    "RewindConflict",
    "RewindError",
    "Rewound",
    "RunOptions",
    "Settings",
    "ToolCall",
    "TurnSummary",
    "__version__",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'cmdop_tui' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
