"""Command line: arguments -> Settings -> the TUI, or headless mode with `-p`."""

from __future__ import annotations

import argparse
import asyncio
import os
import shlex
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from cmdop_tui import __version__
from cmdop_tui.config.settings import Settings, SettingsError, config_path, ensure_config_file, load_settings

EXIT_USAGE = 2


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="cmdop-tui",
        description="Chat with an LLM operator that does real work on your machines.",
    )
    p.add_argument("--version", action="version", version=f"cmdop-tui {__version__}")
    p.add_argument("-p", "--prompt", help="run one prompt headless and exit ('-' reads stdin)")
    p.add_argument(
        "--output-format",
        choices=["text", "stream-json", "json"],
        default="text",
        help="headless output: the final text, one JSON event per line, or one JSON summary",
    )
    p.add_argument("--agent", metavar="NAME", help="agent profile: default, autonomous, or one of yours")
    p.add_argument("--model", help="model id or alias (@fast, @balanced, @smart)")
    p.add_argument("--max-budget-usd", type=_positive_float, metavar="USD", help="stop before the session costs more")
    p.add_argument("--local", action="store_true", help="use a local model (llama.cpp), no API key needed")
    p.add_argument("--local-model", metavar="PATH.gguf", help="the local model file (implies --local)")
    p.add_argument("--max-turns", type=_positive_int, help="turn limit per prompt")
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
        choices=["default", "strict", "auto"],
        help="default asks before changes; strict refuses them",
    )
    p.add_argument("--theme", help="TUI theme name")
    p.add_argument("--machine", metavar="NAME", help="scope the session to this machine (tools work there)")
    p.add_argument("-c", "--continue", dest="continue_latest", action="store_true", help="continue the latest session")
    p.add_argument("--resume", metavar="ID", help="continue the session with this id (or id prefix)")
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
    settings = replace(settings, agent=agent, auto_approve=settings.auto_approve or args.yes)
    if args.permission_mode:
        settings = replace(settings, permission_mode=args.permission_mode)
    if args.max_budget_usd:
        settings = replace(settings, max_budget_usd=args.max_budget_usd)
    if args.local or args.local_model:
        settings = replace(settings, local=True)
    if args.local_model:
        settings = replace(settings, local_model=Path(args.local_model).expanduser())
    if args.no_stream:
        settings = replace(settings, stream=False)
    if args.theme:
        settings = replace(settings, theme=args.theme)
    if args.machine:
        settings = replace(settings, target_machine=args.machine)
    if args.continue_latest or args.resume:
        settings = replace(settings, continue_latest=args.continue_latest, resume=args.resume)
    return settings


def fail(message: str, code: int = 1) -> int:
    sys.stderr.write(f"cmdop-tui: {message}\n")
    return code


def entry() -> None:
    """The console script. After a stop or a failure, leave at once: interpreter teardown after
    a cancel can take hundreds of milliseconds, and a stopped command should feel instant."""
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    if code != 0:
        os._exit(code)
    sys.exit(code)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["permissions"]:
        return permissions_command(argv[1:])
    if argv[:1] == ["config"]:
        return config_command(argv[1:])
    if argv[:1] == ["serve"]:
        from cmdop_tui.serve import serve_main

        return serve_main(argv[1:])
    args = parser().parse_args(argv)
    ensure_config_file()
    try:
        settings = apply_flags(load_settings(), args)
        settings.resolve_model(settings.agent.model)
    except SettingsError as exc:
        return fail(str(exc))
    if args.prompt is None:
        return run_tui(settings)
    prompt = sys.stdin.read() if args.prompt == "-" else args.prompt
    if not prompt.strip():
        return fail("the prompt is empty", EXIT_USAGE)
    return run_headless_cli(settings, prompt, args.output_format)


def config_command(argv: list[str]) -> int:
    """`cmdop-tui config path` prints where the settings live; `config edit` opens $EDITOR."""
    path = config_path()
    if argv == ["path"]:
        print(path)
        return 0
    if argv == ["edit"]:
        ensure_config_file(path)
        editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
        try:
            return subprocess.call([*shlex.split(editor), str(path)])
        except OSError as exc:
            return fail(f"cannot start the editor {editor!r}: {exc.strerror}; set $EDITOR")
    return fail("usage: cmdop-tui config path | config edit", EXIT_USAGE)


def permissions_command(argv: list[str]) -> int:
    """`cmdop-tui permissions list`: the rules and where they come from."""
    if argv != ["list"]:
        return fail("usage: cmdop-tui permissions list", EXIT_USAGE)
    from cmdop_tui.permissions import PermissionsError, list_rules_text

    try:
        print(list_rules_text())
    except PermissionsError as exc:
        return fail(str(exc))
    return 0


def run_headless_cli(settings: Settings, prompt: str, output_format: str) -> int:
    from cmdop_tui.headless import HeadlessOptions, run_headless
    from cmdop_tui.machines.spec import MachineError
    from cmdop_tui.permissions import PermissionsError
    from cmdop_tui.session.engine import MissingKeyError
    from cmdop_tui.session.local_model import LocalModelError
    from cmdop_tui.transcripts import SessionError

    options = HeadlessOptions(prompt=prompt, output_format=output_format)  # type: ignore[arg-type]
    try:
        code = asyncio.run(run_headless(settings, options))
    except (MissingKeyError, MachineError, SessionError, PermissionsError, LocalModelError) as exc:
        return fail(str(exc))
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): nothing more to say to anyone.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return code


# A lone Esc is told from the start of a key sequence by waiting; 100 ms (Textual's default)
# would make Stop feel slow. Sequences from a terminal arrive in one read, even over SSH.
ESCAPE_DELAY_MS = "25"


def run_tui(settings: Settings) -> int:
    os.environ.setdefault("ESCDELAY", ESCAPE_DELAY_MS)
    from cmdop_tui.tui.app import CmdopApp

    CmdopApp(settings).run()
    return 0
