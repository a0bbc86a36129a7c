"""A project's `.cmdop/hooks.json`, read for a session: its hooks when the user trusts the file as
it is (hooks/trust.py), else none and a note saying how to trust it; a broken file is said too."""

from __future__ import annotations

from pathlib import Path

from cmdop_tui.hooks.shape import PROJECT_FILE, HookShapeError, HookTable, from_json
from cmdop_tui.hooks.trust import is_trusted

TRUST_HOW = "`cmdop-tui hooks trust` in the project trusts it as it is now"


def project_hooks(cwd: Path, store: Path) -> tuple[HookTable, list[str]]:
    """The trusted hooks of the project at `cwd` and notes for the user."""
    path = cwd / PROJECT_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return HookTable(), []
    except (OSError, UnicodeDecodeError) as exc:
        return HookTable(), [f"{path} is not read ({exc}); its hooks do not run"]
    try:
        table = from_json(text, str(path))
    except HookShapeError as exc:
        return HookTable(), [f"{exc}; its hooks do not run"]
    if not table:
        return table, []
    if not is_trusted(store, path, text):
        return HookTable(), [
            f"{path} names hooks (programs run outside the sandbox) that run only once you trust them, "
            f"or trust them again since they changed: {TRUST_HOW}"
        ]
    return table, []
