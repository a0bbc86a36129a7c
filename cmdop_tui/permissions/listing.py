"""The rules with their source, for ``cmdop-tui permissions list``."""

from __future__ import annotations

from pathlib import Path

from .rulebook import Permissions
from .store import rules_path


def list_rules_text(permissions: Permissions | None = None, *, path: Path | None = None) -> str:
    """The rules with their source, for ``cmdop-tui permissions list``.

    With no `permissions`, the global rules file (`path`, default ``config_dir()/permissions.toml``)
    is read; PermissionsError propagates (the CLI prints it).
    """
    perms = permissions or Permissions.load(path, audit=False)
    file_path = perms.path or rules_path()
    lines = [f"mode: {perms.mode}", ""]
    session = perms.session_rules
    if session:
        lines.append("session rules (this session only, consulted first):")
        lines.extend(f"  {rule.verdict:<5}  {rule.text}" for rule in session)
        lines.append("")
    lines.append(f"global rules ({file_path}):")
    if perms.rules:
        lines.extend(
            f"  {rule.verdict:<5}  {rule.text}" + (f"    # {rule.note}" if rule.note else "") for rule in perms.rules
        )
    else:
        lines.append("  (none)" + ("" if file_path.exists() else " - the file does not exist yet"))
    lines += [
        "",
        "Precedence: session rules, then global rules (deny > ask > allow), then the mode",
        "(default: read-only tools allowed, others ask; strict: others denied; auto: all allowed).",
        "The safety floor (deleting / or a home directory, disk writes, fork bombs, SSH private",
        "keys, .env files, credentials, /etc/shadow, /etc/sudoers) always applies; what it cannot",
        "read (code it cannot know) only a person may allow, not a rule or auto mode.",
    ]
    return "\n".join(lines) + "\n"
