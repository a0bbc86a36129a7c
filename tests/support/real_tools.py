"""Third-party programs the tests run against, installed by `.ci/tools` under `.tools/`: the
official MCP servers, Ansible's own inventory reader and the TypeScript ACP SDK (an editor's
side of the Agent Client Protocol that we did not write).

A test asks for one by name and gets its path. Where it is missing, the test is skipped on a
developer's machine (run `bash .ci/tools` once to get them all) and fails in CI, where `.ci/run`
installs them: a missing install step must not pass as a skip.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parents[2] / ".tools"

PLACES = {
    "mcp-server-everything": TOOLS / "node" / "node_modules" / ".bin" / "mcp-server-everything",
    "mcp-server-filesystem": TOOLS / "node" / "node_modules" / ".bin" / "mcp-server-filesystem",
    "mcp-server-memory": TOOLS / "node" / "node_modules" / ".bin" / "mcp-server-memory",
    "mcp-server-git": TOOLS / "mcp-py" / "bin" / "mcp-server-git",
    "mcp-server-time": TOOLS / "mcp-py" / "bin" / "mcp-server-time",
    "ansible-inventory": TOOLS / "ansible" / "bin" / "ansible-inventory",
    # @agentclientprotocol/sdk's stable v1 entry point (an ES module, run by node)
    "acp-typescript-sdk": TOOLS
    / "acp-node"
    / "node_modules"
    / "@agentclientprotocol"
    / "sdk"
    / "dist"
    / "v1"
    / "stable"
    / "acp.js",
}


def real_tool(name: str) -> Path:
    """The path of an installed third-party program, or skip (fail in CI) where it is missing."""
    path = PLACES[name]
    if path.exists():
        return path
    message = f"{name} is not installed: run `bash .ci/tools`"
    if os.environ.get("CI"):
        pytest.fail(message, pytrace=False)
    pytest.skip(message)
