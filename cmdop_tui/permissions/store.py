"""The files: the global rules (TOML) and the audit log (JSON lines).

Rules live in ``config_dir()/permissions.toml`` (``[[rule]]`` tables with ``rule`` and
``verdict``, optional ``note``; optional top-level ``mode``), read with tomllib, written
atomically (temp file + ``os.replace``) with mode 0600 via tomli-w, and never overwritten when
it cannot be parsed. Decisions are appended to ``data_dir()/audit.jsonl`` (mode 0600), one JSON
object a line: ``time`` (UTC), ``call_id``, ``tool``, ``machine``, ``argument`` (the rules'
argument: the command, path, pattern or host(s), as given), ``verdict``, ``reason``, ``rule``,
``rule_source``, ``floor``, ``mode``, ``outcome``.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import os
import re
import tempfile
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import tomli_w

from cmdop_tui.config.settings import config_dir, data_dir

from .decisions import MODES
from .rules import VERDICTS, Rule

_RULE_KEYS = frozenset({"rule", "verdict", "note"})
_TOP_KEYS = frozenset({"rule", "mode"})
_HEADER = (
    '# cmdop-tui permission rules: [[rule]] tables with rule = "[machine:]tool(argument glob)"\n'
    '# and verdict = "allow" | "ask" | "deny". See `cmdop-tui permissions list`.\n'
)


class PermissionsError(Exception):
    """The rules file cannot be used; the message names the file (and line)."""


def rules_path() -> Path:
    """Where the global rules live: ``config_dir()/permissions.toml``."""
    return config_dir() / "permissions.toml"


def audit_path() -> Path:
    """Where decisions are logged: ``data_dir()/audit.jsonl``."""
    return data_dir() / "audit.jsonl"


# --- the rules file -------------------------------------------------------------------------------


def read_rules_file(path: Path) -> tuple[list[Rule], str | None]:
    """(global rules, the file's mode or None); no file: ([], None). PermissionsError if unusable."""
    raw = _read_text(path)
    if raw is None:
        return [], None
    try:
        data = tomllib.loads(raw)
    except tomllib.TOMLDecodeError as exc:
        raise PermissionsError(f"{path}: invalid TOML: {exc}") from None
    unknown = sorted(set(data) - _TOP_KEYS)
    if unknown:
        raise PermissionsError(f"{path}: unknown key(s) {', '.join(unknown)} (expected [[rule]] tables and mode)")
    mode = data.get("mode")
    if mode is not None and (not isinstance(mode, str) or mode not in MODES):
        raise PermissionsError(f"{path}: mode must be one of {', '.join(MODES)}, not {mode!r}")
    entries = data.get("rule", [])
    if not isinstance(entries, list):
        raise PermissionsError(f"{path}: `rule` must be an array of tables ([[rule]])")
    lines = _rule_lines(raw)
    rules = []
    for index, entry in enumerate(entries):
        where = f"{path}: rule #{index + 1}" + (f" (line {lines[index]})" if index < len(lines) else "")
        rules.append(_read_rule(entry, where))
    return rules, mode


def _read_text(path: Path) -> str | None:
    """The file's text; None when there is no file."""
    try:
        raw_bytes = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise PermissionsError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        return raw_bytes.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PermissionsError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def _rule_lines(raw: str) -> list[int]:
    return [number for number, line in enumerate(raw.splitlines(), 1) if re.match(r"\s*\[\[\s*rule\s*\]\]", line)]


def _read_rule(entry: Any, where: str) -> Rule:
    """One `[[rule]]` table; `where` names it in the error."""
    if not isinstance(entry, dict):
        raise PermissionsError(f"{where}: must be a table with `rule` and `verdict`")
    extra = sorted(set(entry) - _RULE_KEYS)
    if extra:
        raise PermissionsError(f"{where}: unknown key(s) {', '.join(extra)} (expected rule, verdict, note)")
    text, verdict, note = entry.get("rule"), entry.get("verdict"), entry.get("note")
    if not isinstance(text, str):
        raise PermissionsError(f'{where}: `rule` must be a string such as "execute_command(git status *)"')
    if not isinstance(verdict, str) or verdict not in VERDICTS:
        raise PermissionsError(f"{where}: `verdict` must be one of {', '.join(VERDICTS)}, not {verdict!r}")
    if note is not None and not isinstance(note, str):
        raise PermissionsError(f"{where}: `note` must be a string")
    try:
        return Rule.parse(text, verdict, source="global", note=note)
    except ValueError as exc:
        raise PermissionsError(f"{where}: {exc}") from None


def write_rules_file(path: Path, rules: Sequence[Rule], mode: str | None) -> None:
    """Write atomically: a temp file in the same directory (0600), fsync, os.replace."""
    chunks = [_HEADER]
    if mode is not None:
        chunks.append(tomli_w.dumps({"mode": mode}))
    for rule in rules:
        entry = {"rule": rule.text, "verdict": rule.verdict}
        if rule.note:
            entry["note"] = rule.note
        chunks.append("[[rule]]\n" + tomli_w.dumps(entry))
    text = "\n".join(chunks)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as stream:
            os.fchmod(stream.fileno(), 0o600)
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise


# --- the audit log --------------------------------------------------------------------------------


def append_audit_line(path: Path, line: bytes) -> None:
    """Append one line to the audit log, creating it (and its directory) private; OSError on failure."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        if os.fstat(fd).st_mode & 0o777 != 0o600:
            os.fchmod(fd, 0o600)
        os.write(fd, line)
    finally:
        os.close(fd)


def now() -> str:
    """The time of an audit line: UTC, milliseconds, `Z`."""
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
