"""What the two modes between asking and not asking let through: `accept_edits` and `plan`.

``accept_edits`` allows, without asking, a file edit (a mutating tool whose subject is one path:
write_file, edit_file) on this machine inside the session's working tree; a command, a remote
machine, a path outside the tree or inside its ``.git`` (hooks, config: code that runs later) is
asked as in ``default``. ``plan`` runs nothing that changes anything: every mutating call is
refused with a reason that tells the model to present a plan instead.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Mapping
from typing import Any

from cmdop_tui.tools.base import Tool

LOCAL = "local"
# Inside the tree but not edits like the others: git runs its hooks and reads its config (which
# can name programs); the project's own cmdop settings say what may run.
KEPT_OUT = frozenset({".git", ".cmdop"})

PLAN_REFUSAL = (
    "plan mode: {tool} was not run. Nothing is changed in plan mode. Look with the read-only "
    "tools if you need to, then present your plan and ask the user to go on; they switch the "
    "mode (Shift+Tab) for it to be carried out. Do not retry this call in plan mode."
)


def plan_refusal(tool: str) -> str:
    """The reason a mutating call is refused in plan mode, as the model reads it."""
    return PLAN_REFUSAL.format(tool=tool)


def edit_in_tree(args: Mapping[str, Any], *, spec: Tool | None, machine: str, working_tree: str | None) -> str | None:
    """The path a file edit writes when it is one accept_edits lets through (see the module
    doc), resolved through symbolic links; None otherwise."""
    subject = spec.subject if spec is not None else None
    if working_tree is None or machine != LOCAL or spec is None or subject is None or not spec.mutating:
        return None
    if subject.kind != "path" or subject.many or subject.every_string:
        return None
    raw = subject.value(args)
    if not isinstance(raw, str) or not raw or raw.startswith("~"):
        return None
    tree = os.path.realpath(working_tree)
    if not _a_tree(tree):
        return None
    path = os.path.realpath(posixpath.join(tree, raw))
    if path == tree or not path.startswith(tree.rstrip("/") + "/"):
        return None
    if KEPT_OUT & set(posixpath.relpath(path, tree).split("/")):
        return None
    return path


def _a_tree(tree: str) -> bool:
    """A project's folder, not the root, the home folder or one above it (every file of the
    user's would be "in the tree")."""
    home = os.path.realpath(os.path.expanduser("~"))
    return tree != "/" and not (home == tree or home.startswith(tree.rstrip("/") + "/"))
