"""The command line's flags, and how they override the settings (flags beat environment beat file).

Shared by `cmdop-tui` itself and by `cmdop-tui serve`, which forwards the same flags to the app
it starts for each browser tab.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from cmdop_tui.config.model import PERMISSION_MODES
from cmdop_tui.config.settings import Settings
from cmdop_tui.support.version import VERSION

DESCRIPTION = "Chat with an LLM operator that does real work on your machines."
RAW = argparse.RawDescriptionHelpFormatter  # the list of commands below, as it is laid out
COMMANDS = """commands:
  cmdop-tui rewind [--session ID] [--turn N]   a session's turns; go back to before one
  cmdop-tui machines list | install NAME...    the machines of the settings
  cmdop-tui mcp list | trust                   MCP servers and their tools
  cmdop-tui hooks trust                        let ./.cmdop/hooks.json's hooks run
  cmdop-tui permissions list                   the permission rules
  cmdop-tui config path | edit | keys          the settings file
  cmdop-tui serve                              the app in a browser
  cmdop-tui acp                                the agent editors drive (Agent Client Protocol)"""

INPUT_FORMAT_HELP = (
    "headless input: with stream-json, each line on stdin while the prompt runs is a user message "
    '({"type": "user", "message": {"role": "user", "content": ...}}) that steers it'
)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="cmdop-tui", description=DESCRIPTION, epilog=COMMANDS, formatter_class=RAW)
    p.add_argument("--version", action="version", version=f"cmdop-tui {VERSION}")
    p.add_argument("-p", "--prompt", help="run one prompt headless and exit ('-' reads stdin)")
    p.add_argument(
        "--output-format",
        choices=["text", "stream-json", "json"],
        default="text",
        help="headless output: the final text, one JSON event per line, or one JSON summary",
    )
    p.add_argument("--input-format", choices=["text", "stream-json"], default="text", help=INPUT_FORMAT_HELP)
    p.add_argument("--agent", metavar="NAME", help="agent profile: default, autonomous, or one of yours")
    p.add_argument("--model", help="model id or alias (@fast, @balanced, @smart)")
    p.add_argument("--max-budget-usd", type=_positive_float, metavar="USD", help="stop before the session costs more")
    p.add_argument("--local", action="store_true", help="use a local model (llama.cpp), no API key needed")
    p.add_argument("--local-model", metavar="PATH.gguf", help="the local model file (implies --local)")
    p.add_argument("--max-turns", type=_positive_int, help="turn limit per prompt")
    p.add_argument(
        "--max-context-tokens", type=_positive_int, metavar="N", help="the model's context window (overrides)"
    )
    p.add_argument("--loop", action="store_true", default=None, help="loop mode: keep going until a breaker phrase")
    p.add_argument("--loop-message", help="the message that re-prompts the model in loop mode")
    p.add_argument(
        "--loop-breaker", action="append", dest="loop_breakers", metavar="PHRASE", help="ends loop mode (repeatable)"
    )
    p.add_argument("--max-loops", type=_positive_int, help="loop mode's limit (default 20)")
    p.add_argument("--allow-tags", metavar="TAGS", help="turn-1 tool allowlist, comma-separated tags")
    p.add_argument("--no-stream", action="store_true", help="do not stream model replies")
    p.add_argument(
        "--yes", action="store_true", help="auto mode: run tools without asking (the safety floor still applies)"
    )
    p.add_argument(
        "--permission-mode",
        choices=PERMISSION_MODES,
        help="default asks before changes; accept_edits lets file edits in the working directory through; "
        "plan changes nothing (the model proposes a plan); auto is --yes; strict refuses changes",
    )
    p.add_argument(
        "--sandbox",
        choices=["off", "workspace", "strict"],
        help="what commands may touch: workspace (default: write here and in /tmp, secrets hidden), "
        "strict (and no network), off",
    )
    p.add_argument(
        "--low-bandwidth",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="fewer frames and no animations, for slow links (default: on when over SSH)",
    )
    p.add_argument("--theme", help="TUI theme name")
    p.add_argument("--machine", metavar="NAME", help="scope the session to this machine (tools work there)")
    p.add_argument("-c", "--continue", dest="continue_latest", action="store_true", help="continue the latest session")
    p.add_argument("--resume", metavar="ID", help="continue the session with this id (or id prefix)")
    p.add_argument(
        "--no-warm",
        action="store_true",
        help="run -p in this process, not in the warm agent (also CMDOP_TUI_NO_WARM=1)",
    )
    return p


def _positive_float(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError("must be more than 0")
    return value


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def apply_flags(settings: Settings, args: argparse.Namespace) -> Settings:
    """Flags win over environment and file (which `load_settings` already merged)."""
    if args.agent:
        settings = settings.with_agent(args.agent)
    agent = settings.agent
    if args.model:
        agent = replace(agent, model=args.model)
    if args.max_turns:
        agent = replace(agent, max_turns=args.max_turns)
    if args.loop:
        agent = replace(agent, loop=True)
    if args.loop_message:
        agent = replace(agent, loop_message=args.loop_message)
    if args.loop_breakers:
        agent = replace(agent, loop_breakers=tuple(args.loop_breakers))
    if args.max_loops:
        agent = replace(agent, max_loops=args.max_loops)
    if args.allow_tags:
        agent = replace(agent, allow_tags=tuple(t.strip() for t in args.allow_tags.split(",") if t.strip()))
    settings = replace(settings, agent=agent).with_run(auto_approve=settings.run.auto_approve or args.yes)
    if args.permission_mode:
        settings = replace(settings, permission_mode=args.permission_mode)
    if args.sandbox:
        settings = settings.with_run(sandbox_mode=args.sandbox)
    if args.max_budget_usd:
        settings = replace(settings, max_budget_usd=args.max_budget_usd)
    if args.local or args.local_model:
        settings = settings.with_run(local=True)
    if args.local_model:
        settings = replace(settings, local_model=Path(args.local_model).expanduser())
    if args.max_context_tokens:
        settings = settings.with_run(max_context_tokens=args.max_context_tokens)
    if args.no_stream:
        settings = replace(settings, stream=False)
    if args.theme:
        settings = replace(settings, theme=args.theme)
    if args.low_bandwidth is not None:
        settings = replace(settings, low_bandwidth=args.low_bandwidth)
    if args.machine:
        settings = settings.with_run(target_machine=args.machine)
    if args.continue_latest or args.resume:
        settings = settings.with_run(continue_latest=args.continue_latest, resume=args.resume)
    return settings
