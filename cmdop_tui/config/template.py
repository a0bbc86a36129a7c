"""The commented settings file written on first run (atomically; the app never rewrites it) and
the keys' help (`cmdop-tui config keys`), both rendered from the declarations in config/keys.py:
each key with its default (or an example) and its help, table by table."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from cmdop_tui.config.keys import MCP_TABLES, SECTIONS, TOP_LEVEL_KEYS, Key, Section
from cmdop_tui.config.paths import config_path

_PREAMBLE = """\
# cmdop-tui settings. Everything here is optional: a commented line shows the default, or an
# example where there is none. Precedence: command-line flag > environment > this file > default.
# The API key is never kept here: set ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL for another
# Anthropic-compatible endpoint) in the environment, or run `cmdop-tui --local`.
"""
_COMMENT_COLUMN = 32  # where a line's help starts, so the values read as a column
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_TABLE_KEYS = frozenset({section.table for section in SECTIONS} | set(MCP_TABLES))


def toml_value(value: Any) -> str:
    """`value` as TOML writes it (the inline forms: one line each)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str | Path):
        return json.dumps(str(value))  # a TOML basic string: JSON's escapes are TOML's
    if isinstance(value, Mapping):
        pairs = (f"{_toml_key(name)} = {toml_value(item)}" for name, item in value.items())
        return "{ " + ", ".join(pairs) + " }"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    raise TypeError(f"no TOML for {value!r}")


def _toml_key(name: str) -> str:
    return name if _BARE_KEY.fullmatch(name) else json.dumps(name)


def shown_value(key: Key, section: Section) -> Any:
    """What the template shows for `key`: its example, else its field's default."""
    if key.example is not None:
        return key.example
    value = getattr(section.defaults, key.name, None)
    if value is None:
        raise ValueError(f"the key {key.name!r} of [{section.table}] has neither a default nor an example")
    return value


def _keys(section: Section) -> Iterator[Key]:
    if section.keys is None:
        return
    for key in section.keys.keys:
        if not (section.table == "" and key.name in _TABLE_KEYS):  # a table is a section of its own
            yield key


def _header(section: Section) -> str:
    if section.array:
        return f"[[{section.table}.{section.each}]]"
    return f"[{section.table}.{section.each}]" if section.each else f"[{section.table}]"


def _line(text: str, help: str) -> str:
    return f"{text:<{_COMMENT_COLUMN - 1}} # {help}" if help else text


def _section_lines(section: Section) -> Iterator[str]:
    if section.table:
        yield ""
        yield _line(f"# {_header(section)}", section.help)
    for key in _keys(section):
        yield _line(f"# {key.name} = {toml_value(shown_value(key, section))}", key.help)
    for name, value in section.entries.items():
        yield f"# {_toml_key(name)} = {toml_value(value)}"


def first_run_template() -> str:
    """The commented settings file: every key of every table, none of them set."""
    lines = [line for section in SECTIONS for line in _section_lines(section)]
    return _PREAMBLE + "\n" + "\n".join(lines) + "\n"


def keys_help() -> str:
    """Every key of the settings file: its table, default (or example), good values and help."""
    lines = []
    for section in SECTIONS:
        name = f"[{section.table}.NAME]" if section.each else f"[{section.table}]"
        name = f"[[{section.table}.EVENT]]" if section.array else name
        lines.append(f"{name}  {section.help}" if section.table else "top level")
        for key in _keys(section):
            what = f" ({key.what})" if key.what else ""
            lines.append(f"  {key.name} = {toml_value(shown_value(key, section))}{what}  {key.help}".rstrip())
        if section.entries:
            lines.append(
                "  NAME = VALUE, as in: " + ", ".join(f"{n} = {toml_value(v)}" for n, v in section.entries.items())
            )
    lines.append(f"Top-level keys: {', '.join(sorted(TOP_LEVEL_KEYS))}")
    return "\n".join(lines)


FIRST_RUN_TEMPLATE = first_run_template()


def ensure_config_file(path: Path | None = None) -> Path | None:
    """Create the commented settings file on first run; returns its path when it was created."""
    path = path or config_path()
    if path.exists():
        return None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.tmp-{os.getpid()}")
        temporary.write_text(FIRST_RUN_TEMPLATE, encoding="utf-8")
        os.replace(temporary, path)  # atomic: a reader sees no file or the whole template
    except OSError:
        return None  # a read-only home must not stop the app
    return path
