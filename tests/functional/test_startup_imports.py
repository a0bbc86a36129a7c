"""What the app imports before its first paint: the TUI and what it draws, not the code that
only an open session, a reply or a dialog needs (each costs start-up time: the session loads
it in a thread after the first paint, or the first reply or dialog does)."""

from __future__ import annotations

import subprocess
import sys

import pytest

AFTER_THE_FIRST_PAINT = (
    "markdown_it",  # a reply's Markdown (tui/vocabulary/rich_markdown.py)
    "pygments",
    "rich.markdown",
    "cmdop_tui.agent.approval",  # the approval dialog (tui/approvals.py)
    "cmdop_tui.permissions",
    "cmdop_tui.tui.screens.approval",
    "cmdop_tui.tui.screens.elicitation",
    "cmdop_tui.session.local_model",  # opening the session (tui/session_life.py)
    "urllib.request",
    "cmdop_tui.session.rewind",  # /rewind (tui/rewinding.py)
    "cmdop_tui.session.user_commands",  # !command (tui/submission.py)
    "cmdop_tui.hooks.engine",  # the settings read only hooks/shape.py
    "cmdop_tui.machines.sandbox",  # the settings read only machines/sandbox_policy.py
    "cmdop_tui.machines.fleet",  # opening the session; the panel draws this machine (local_load.py)
    "cmdop_tui.machines.health",
    "cmdop_tui.machines.remote_sandbox",  # the first remote machine in the panel
    "cmdop_tui.machines.ssh",
    "cmdop_tui.tools.registry",
    "cmdop_tui.mcp.servers",  # opening the session (mcp/__init__.py loads it on use)
    "cmdop_tui.mcp.configured",  # /mcp (the CLI checks only the settings' server tables)
    "cmdop_tui.machines.path_index",  # the first `@` (widgets/prompt_completion.py)
    "cmdop_tui.tui.widgets.prompt_completion",  # the first `/` or `@` typed (widgets/prompt_input.py)
    "cmdop_tui.tui.widgets.completion_menu",
    "cmdop_tui.transcripts",  # /export, /sessions, the output view
    "cmdop_tui.session.skills",  # /skills, a custom command's front matter
    "cmdop_tui.tui.screens.output_view",  # a tool's whole output
    "cmdop_tui.tui.screens.sessions",  # /sessions
    "cmdop_tui.agent.events",  # the first event (tui/events.py, made on first use); the status line's
    # usage totals are a module of their own (agent/usage_totals.py)
    "cmdop_tui.tui.widgets.assistant_reply",  # the first reply (widgets/chat_log.py)
    "cmdop_tui.tui.widgets.thinking_block",
    "cmdop_tui.tui.widgets.compaction_item",  # the first compaction
    "cmdop_tui.tui.widgets.tool_card",  # the first tool call
    "cmdop_tui.tui.widgets.tool_table",  # the tool panel says "no calls" until the first
    "textual.widgets._data_table",
    "cmdop_tui.tui.vocabulary.tool_records",
    "cmdop_tui.support.diffs",
    "cmdop_tui.tools.outcome",
    "cmdop_tui.tui.widgets.stored_entries",  # a resumed conversation, and the messages' shapes with it
    "cmdop_tui.agent.messages",
    "cmdop_tui.agent.history",
    "cmdop_tui.tui.screens.confirm",  # the quit question, the local model's offer
    "cmdop_tui.agent.context",  # the session's facts (the machines panel reads this machine's own)
)


@pytest.fixture(scope="module")
def imported_at_start() -> set[str]:
    probe = "import sys, cmdop_tui.cli, cmdop_tui.tui.app; print(' '.join(sys.modules))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return set(done.stdout.split())


@pytest.mark.parametrize("module", AFTER_THE_FIRST_PAINT)
def test_the_app_draws_without(module, imported_at_start):
    assert "cmdop_tui.tui.widgets.prompt_input" in imported_at_start  # the probe saw the app
    assert module not in imported_at_start
