"""A tool call's arguments as a person reads them before approving it."""

from __future__ import annotations

import json
from collections.abc import Mapping


def describe_arguments(arguments: Mapping[str, object]) -> str:
    """The command itself when there is one (the rest as JSON below it), else indented JSON."""
    command = arguments.get("command")
    if isinstance(command, str) and len(arguments) <= 2:
        rest = {k: v for k, v in arguments.items() if k != "command"}
        return command + (f"\n{json.dumps(rest, ensure_ascii=False)}" if rest else "")
    return json.dumps(arguments, indent=2, ensure_ascii=False)
