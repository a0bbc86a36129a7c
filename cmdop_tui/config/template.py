"""The commented settings file written on first run (atomically; the app never rewrites it)."""

from __future__ import annotations

import os
from pathlib import Path

from cmdop_tui.config.paths import config_path

FIRST_RUN_TEMPLATE = """\
# cmdop-tui settings. Everything here is optional: a commented line shows the default.
# Precedence: command-line flag > environment > this file > default.
# The API key is never kept here: set ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL for another
# Anthropic-compatible endpoint) in the environment, or run `cmdop-tui --local`.

# The agent profile in use (--agent NAME, or CMDOP_AGENT): "default", "autonomous" or your own.
# agent = "default"

# Stop before a request that would take the session's estimated cost past this (USD).
# max_budget_usd = 5.0

# low_bandwidth = false         # fewer frames, no animations (default: on when over SSH)
# theme = "cmdop-dark"          # also cmdop-light, cmdop-high-contrast, cmdop-amber
# permission_mode = "default"   # default: changes ask; strict: changes refused; auto: like --yes
# approval_timeout_s = 60
# local_model = "~/models/model.gguf"   # for --local; default: the bundled SmolLM2

# [agents.default]
# model = "@balanced"           # an alias below, or a model id
# max_turns = 30
# max_tokens = 8192
# loop = false
# max_loops = 20
# allow_tags = []               # on turn 1 offer only tools with these tags (plus core tools)
# hidden_tools = []
# instructions = ""             # added to the system prompt
# parallel_tools = true
# thinking_budget = 0           # > 0 turns extended thinking on

# [agents.ops]                  # your own profile
# model = "@smart"
# loop = true
# loop_message = "Go on. Say 'The task is done.' when it is."
# loop_breakers = ["The task is done."]

# [aliases]
# fast = "claude-haiku-5-5"
# balanced = "claude-sonnet-5-5"
# smart = "claude-opus-5-5"

# [sandbox]                     # what commands may touch (Linux, bubblewrap)
# mode = "workspace"            # off | workspace (write only here and /tmp) | strict (and no network)
# writable = ["~/projects"]     # more places commands may write
# network = true
#
# [context]                     # when the conversation is compacted (summarised)
# compact_at = 0.75             # share of the context window a request may reach
# tail_tokens = 20000           # the recent part kept word for word
# summary_tokens = 4000         # a summary's cap
# summary_model = "@fast"       # writes the summaries (default: the session's model)
#
# [models."my-local-model"]     # a model's context window in tokens, when the endpoint's
# context_window = 32768        # Models API does not say (otherwise 200,000)

# [prices."claude-sonnet-5-5"]  # USD per million tokens, for the cost estimate and budgets
# input = 3.0
# output = 15.0

# [machines.web1]               # Host entries of ~/.ssh/config are machines too
# host = "10.0.0.21"
# user = "ops"
# port = 22
# tags = ["web"]
# cmdop = "cmdop-tui"           # where cmdop-tui is on that machine (for ask_machine)

# [groups]                      # names for sets of machines (run_on_machines, `machine`)
# web = ["web1", "web2", "tag:db"]
#
# [inventory]                   # an Ansible inventory (INI or YAML): its hosts become
# ansible = "~/ansible/hosts"   # machines, its groups their tags (tag:GROUP)

# [mcp.github]                  # an MCP server over stdio (a project's .mcp.json is read too)
# command = "npx"
# args = ["-y", "@modelcontextprotocol/server-github"]
# env = { GITHUB_TOKEN = "${GITHUB_TOKEN}" }
#
# [mcp.docs]                    # an MCP server over streamable HTTP
# url = "https://mcp.example.com/mcp"
# headers = { Authorization = "Bearer ${DOCS_TOKEN}" }
"""


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
