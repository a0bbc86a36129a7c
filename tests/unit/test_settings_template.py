"""The first-run template and `cmdop-tui config keys`, rendered from the keys' declarations
(config/keys.py): every declared key shown, nothing shown that is not declared, the file valid
TOML that changes nothing, and each value it shows a good one (a default shown is the default)."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable, Iterator
from typing import Any

from cmdop_tui.cli import main
from cmdop_tui.config.keys import MCP_TABLES, SECTIONS, TOP_LEVEL_KEYS, Section
from cmdop_tui.config.model import Settings
from cmdop_tui.config.settings import FIRST_RUN_TEMPLATE, settings_from
from cmdop_tui.mcp.server_tables import settings_servers

HEADER = re.compile(r"^# \[\[?([A-Za-z_]+)(?:\.[^\]]+)?\]")
KEY_LINE = re.compile(r'^# ([A-Za-z0-9_-]+|"[^"]+") = ')
BY_TABLE = {section.table: section for section in SECTIONS}
TABLE_KEYS = {section.table for section in SECTIONS} | set(MCP_TABLES)


def shown() -> Iterator[tuple[str, str]]:
    """(table, key) for every key line of the template, "" being the top level."""
    table = ""
    for line in FIRST_RUN_TEMPLATE.splitlines():
        if header := HEADER.match(line):
            table = header.group(1)
        elif key := KEY_LINE.match(line):
            yield table, key.group(1)


def uncommented() -> str:
    """The template with every shown table and key set, as a user who uncomments it all gets."""
    lines = [line[2:] for line in FIRST_RUN_TEMPLATE.splitlines() if HEADER.match(line) or KEY_LINE.match(line)]
    return "\n".join(lines) + "\n"


def test_every_declared_key_is_in_the_template():
    keys = set(shown())
    for section in SECTIONS:
        for key in section.keys.keys if section.keys else ():
            if section.table == "" and key.name in TABLE_KEYS:
                assert f"[{key.name}" in FIRST_RUN_TEMPLATE  # a table: its header, or its other spelling
            else:
                assert (section.table, key.name) in keys, (section.table, key.name)
    assert {table for table, _ in keys} | {""} == {section.table for section in SECTIONS}


def test_no_key_in_the_template_that_is_not_declared():
    for table, key in shown():
        section = BY_TABLE[table]
        if section.keys is not None:  # a table of free names ([aliases], [groups]) takes any
            assert key in section.keys.names, (table, key)
    assert {
        match.group(1) for line in FIRST_RUN_TEMPLATE.splitlines() if (match := HEADER.match(line))
    } <= TOP_LEVEL_KEYS


def test_the_template_parses_and_loads_to_the_defaults():
    data = tomllib.loads(FIRST_RUN_TEMPLATE)
    assert data == {}
    assert settings_from(data) == Settings() and settings_servers(settings_from(data)) == ()


READERS: dict[str, Callable[[Settings], Any]] = {
    "": lambda settings: settings,
    "agents": lambda settings: settings.agents["default"],
    "sandbox": lambda settings: settings.sandbox,
    "context": lambda settings: settings.context,
}


def test_every_value_the_template_shows_is_a_good_one_and_a_default_shown_is_the_default():
    loaded = settings_from(tomllib.loads(uncommented()))  # no SettingsError: each value is accepted
    assert [spec.name for spec in settings_servers(loaded)] == ["github"]
    for table, read in READERS.items():
        section: Section = BY_TABLE[table]
        assert section.keys is not None
        for key in section.keys.keys:
            if key.example is None and key.name not in TABLE_KEYS:
                assert getattr(read(loaded), key.name) == getattr(section.defaults, key.name), (table, key.name)


def test_config_keys_lists_every_key_with_its_help(capsys):
    assert main(["config", "keys"]) == 0
    listed = capsys.readouterr().out
    for section in SECTIONS:
        for key in section.keys.keys if section.keys else ():
            assert f"{key.name} = " in listed or key.name in TABLE_KEYS
            assert key.help in listed
    assert "[agents.NAME]" in listed and "(a share of the window from 0.3 to 0.95)" in listed
    assert main(["config", "nonsense"]) == 2


def test_a_bad_mcp_table_stops_the_command_before_anything_starts(tmp_path, monkeypatch, capsys):
    config = tmp_path / "config.toml"
    config.write_text('[mcp.x]\ntype = "http"\n')
    monkeypatch.setenv("CMDOP_TUI_CONFIG", str(config))
    for argv in (["-p", "hello"], ["mcp", "list"]):
        assert main(argv) == 1
        error = capsys.readouterr().err
        assert f"{config}: [mcp.x]: an http server needs a url starting with http" in error
