"""MCP in the real app (Pilot, the fake Messages API, real servers): `/mcp` lists the servers
configured before and after the session opens; a project's `.mcp.json` waiting for trust is said
at start, shown in the MCP panel and by `/mcp`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from mcp_servers.harness import DEMO, new_tag, settings_with, stdio_spec, tagged, wait_gone
from textual.widgets import Static
from tui_helpers import make_app, notices, submit, wait_until

from cmdop_tui.tui.widgets.mcp_panel import McpPanel


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)  # the app's session works in the current directory
    return tmp_path


def panel_text(app) -> str:
    return str(app.query_one(McpPanel).query_one("#mcp-servers", Static).content)


async def test_slash_mcp_lists_the_configured_servers_before_and_after_the_session_opens(fake_api, project):
    tag = new_tag()
    app = make_app(fake_api, settings=settings_with(stdio_spec("demo", tag=tag)))
    async with app.run_test(size=(80, 24)) as pilot:
        await submit(pilot, "/mcp")  # the session is still opening
        await pilot.pause()
        first = notices(app)[-1]
        assert first.startswith("MCP servers:\n  demo: ") and "none configured" not in first
        await wait_until(pilot, lambda: app.session is not None, what="the session")
        await wait_until(pilot, lambda: not app.session.mcp.connecting, timeout=30, what="the server")
        await submit(pilot, "/mcp")
        await pilot.pause()
        assert notices(app)[-1] == "MCP servers:\n  demo: connected: 13 tools"
    assert wait_gone(tag) == []


async def test_a_projects_mcp_json_waiting_for_trust_is_said_shown_and_listed(fake_api, project):
    tag = new_tag()
    (project / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"proj": {"command": sys.executable, "args": [str(DEMO), "--tag", tag]}}})
    )
    app = make_app(fake_api)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: app.session is not None, what="the session")
        await wait_until(pilot, lambda: any("trust" in n for n in notices(app)), what="the trust note")
        note = next(n for n in notices(app) if "trust" in n)
        assert "(proj)" in note and "start only once you trust this project" in note and "/mcp trust" in note
        await pilot.pause()
        assert app.query_one(McpPanel).display
        shown = panel_text(app)
        assert "⊘ proj not trusted yet · /mcp trust" in shown and f"stdio: {sys.executable}" in shown
        await submit(pilot, "/mcp")
        await pilot.pause()
        assert notices(app)[-1].startswith("MCP servers:\n  proj: untrusted: waits for your trust: /mcp trust")
        assert tagged(tag) == []  # never started
        await submit(pilot, "/mcp trust")
        await pilot.pause()
        assert notices(app)[-1].startswith(f"Trusted {project / '.mcp.json'} (proj)")
