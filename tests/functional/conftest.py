"""Fixtures the functional tests share."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from cmdop_tui.mcp import McpServers
from cmdop_tui.mcp.server_tables import McpServerSpec


@pytest.fixture
async def attach(tmp_path: Path) -> AsyncIterator:
    """attach(runner, *specs): the servers' tools in the runner's registry, once every server has
    connected or failed (closed after)."""
    made: list[McpServers] = []

    async def start(runner, *specs: McpServerSpec) -> McpServers:
        servers = McpServers(specs, runner.tools, cwd=tmp_path)
        made.append(servers)
        servers.start()
        assert await servers.wait(60), servers.states()
        return servers

    yield start
    for servers in made:
        await servers.close()
