"""`cmdop-tui acp`: the operator as an Agent Client Protocol agent, over standard input and output.

An editor (Zed, JetBrains, Neovim's plugins) or another front-end (Toad) starts it and speaks
ACP on its stdin and stdout; what we say for people goes to stderr, which editors keep in their
logs. Each editor session is one `Session`, driving the one loop as every surface does. The map:

* `agent.py`: `OperatorAgent`, the protocol's methods, and `EditorSession`, one editor session;
* `updates.py`: the loop's events as `session/update` notifications, sent in order;
* `permission.py`: approvals as `session/request_permission`, the answers as our rules;
* `replay.py`: a loaded transcript told again as notifications;
* `commands.py`: the slash commands an editor lists and runs;
* `client_files.py`: reads and writes of the working tree through the editor (`fs/*`);
* `first_answer.py`: `initialize` answered before the SDK loads (a cold start's most);
* `client_terminal.py`: commands in the editor's terminal where our sandbox would not hold them;
* `prompts.py`, `mcp_servers.py`: a prompt's blocks as text; the editor's MCP servers as ours;
* `tool_calls.py`: a tool call's kind, title, locations, diff and output, for all of them.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence

from cmdop_tui.config.settings import SettingsError, ensure_config_file, load_settings


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="cmdop-tui acp",
        description="Speak the Agent Client Protocol on stdin/stdout, for editors (Zed, JetBrains, Neovim) and Toad.",
    )
    p.add_argument("--agent", metavar="NAME", help="the agent profile to use (default: the settings')")
    p.add_argument(
        "--sandbox",
        choices=["off", "workspace", "strict"],
        help="what commands may touch (default: the settings'); off lets an editor that offers its "
        "terminal run commands on this machine there",
    )
    return p


def acp_main(argv: Sequence[str]) -> int:
    """Serve one editor until it closes our standard input; the exit code."""
    args = parser().parse_args(list(argv))
    ensure_config_file()
    try:
        settings = load_settings()
        if args.agent:
            settings = settings.with_agent(args.agent)
        if args.sandbox:
            settings = settings.with_run(sandbox_mode=args.sandbox)
        settings.resolve_model(settings.agent.model)
    except SettingsError as exc:
        sys.stderr.write(f"cmdop-tui: {exc}\n")
        return 1
    from cmdop_tui.acp.first_answer import answer_first_message

    first = answer_first_message()  # `initialize` answered before the SDK loads (first_answer.py)
    from cmdop_tui.acp.agent import serve

    try:
        asyncio.run(serve(settings, first))
    except KeyboardInterrupt:
        return 130
    return 0
