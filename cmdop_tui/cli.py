"""Command line: arguments -> Settings -> the TUI, or headless mode with `-p`."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
from collections.abc import Callable, MutableMapping, Sequence

from cmdop_tui.config.flags import apply_flags, parser
from cmdop_tui.config.settings import (
    Settings,
    SettingsError,
    config_path,
    ensure_config_file,
    keys_help,
    load_settings,
)
from cmdop_tui.support.editor import editor_argv
from cmdop_tui.support.heap import hold_collections

EXIT_USAGE = 2


def fail(message: str, code: int = 1) -> int:
    sys.stderr.write(f"cmdop-tui: {message}\n")
    return code


def entry() -> None:
    """The console script. After a stop or a failure, leave at once: interpreter teardown after
    a cancel can take hundreds of milliseconds, and a stopped command should feel instant.

    A headless `-p` run goes first to the warm agent (`warm_agent/`), which has the model SDK
    imported already; when none answers, it runs here and starts one for next time."""
    from cmdop_tui.support.warm import run_warm, wants_warm

    if wants_warm(sys.argv[1:], os.environ):
        warm_code = run_warm(sys.argv[1:])
        if warm_code is not None:
            os._exit(warm_code)
    code = main()
    for stream in (sys.stdout, sys.stderr):
        # None: that fd was closed from the start; closed: by its owner (`acp`'s connection)
        if stream is not None and not stream.closed:
            stream.flush()
    if code != 0:
        os._exit(code)
    sys.exit(code)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] and argv[0] in SUBCOMMANDS:
        return SUBCOMMANDS[argv[0]](argv[1:])
    args = parser().parse_args(argv)
    if args.prompt is None and (missing := missing_terminal()) is not None:
        return fail(missing, EXIT_USAGE)
    ensure_config_file()
    try:
        settings = apply_flags(load_settings(), args)
        settings.resolve_model(settings.agent.model)
        check_mcp_tables(settings)
    except SettingsError as exc:
        return fail(str(exc))
    if args.prompt is None:
        return run_tui(settings)
    if args.prompt == "-" and args.input_format == "stream-json":
        return fail("--input-format stream-json reads standard input: give the prompt with -p TEXT", EXIT_USAGE)
    prompt = _stdin_prompt() if args.prompt == "-" else args.prompt
    if prompt is None:
        return fail("-p - reads the prompt from standard input, which is closed or unreadable", EXIT_USAGE)
    if not prompt.strip():
        return fail("the prompt is empty", EXIT_USAGE)
    return run_headless_cli(settings, prompt, args.output_format, args.input_format)


def _stdin_prompt() -> str | None:
    """The prompt piped in (`-p -`); None when there is no standard input to read."""
    if sys.stdin is None:
        return None
    try:
        return sys.stdin.read()
    except (OSError, ValueError, UnicodeDecodeError):  # closed, a directory, not text
        return None


def check_mcp_tables(settings: Settings) -> None:
    """Read the settings' `[mcp.NAME]` tables now, so a bad one stops the command before anything
    starts, as every other bad setting does (config/ keeps them raw; cmdop_tui/mcp/ reads them).
    Raises SettingsError."""
    from cmdop_tui.mcp.server_tables import settings_servers

    settings_servers(settings)


CONFIG_USAGE = "usage: cmdop-tui config path | config edit | config keys"


def config_command(argv: list[str]) -> int:
    """`cmdop-tui config path` prints where the settings live; `config edit` opens $EDITOR;
    `config keys` lists every key of the file: its default (or an example), good values, help."""
    path = config_path()
    if argv == ["path"]:
        print(path)
        return 0
    if argv == ["keys"]:
        print(keys_help())
        return 0
    if argv == ["edit"]:
        ensure_config_file(path)
        command = editor_argv(path)
        try:
            return subprocess.call(command)
        except OSError as exc:
            return fail(f"cannot start the editor {command[0]!r}: {exc.strerror}; set $EDITOR")
    return fail(CONFIG_USAGE, EXIT_USAGE)


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


MCP_USAGE = "usage: cmdop-tui mcp list [--timeout SECONDS] | cmdop-tui mcp trust"


def mcp_command(argv: list[str]) -> int:
    """`cmdop-tui mcp list`: each MCP server (settings and ./.mcp.json), its source, transport,
    state after trying to connect, and its tools. `cmdop-tui mcp trust`: let ./.mcp.json's
    servers start (as the file is now)."""
    if argv == ["trust"]:
        return mcp_trust()
    if argv[:1] != ["list"] or len(argv) not in (1, 3) or (len(argv) == 3 and argv[1] != "--timeout"):
        return fail(MCP_USAGE, EXIT_USAGE)
    try:
        timeout = float(argv[2]) if len(argv) == 3 else None
    except ValueError:
        return fail(MCP_USAGE, EXIT_USAGE)
    if timeout is not None and timeout <= 0:
        return fail(MCP_USAGE, EXIT_USAGE)
    from pathlib import Path

    from cmdop_tui.mcp.listing import LIST_TIMEOUT_S, list_servers_text

    try:
        settings = load_settings()
        check_mcp_tables(settings)
    except SettingsError as exc:
        return fail(str(exc))
    print(asyncio.run(list_servers_text(settings, Path.cwd(), timeout or LIST_TIMEOUT_S)))
    return 0


def mcp_trust() -> int:
    from pathlib import Path

    from cmdop_tui.mcp.specs import PROJECT_FILE, project_servers
    from cmdop_tui.mcp.trust import trust
    from cmdop_tui.support.text import inert_line

    servers, notes = project_servers(Path.cwd())
    if not servers:
        return fail(notes[0] if notes else f"there is no {PROJECT_FILE} with MCP servers here")
    try:
        trust(Path.cwd() / PROJECT_FILE)
    except OSError as exc:
        return fail(f"cannot record the trust: {exc}")
    print(inert_line(f"trusted {Path.cwd() / PROJECT_FILE}: " + ", ".join(spec.name for spec in servers)))
    return 0


def hooks_command(argv: list[str]) -> int:
    """`cmdop-tui hooks trust`: let ./.cmdop/hooks.json's hooks run, as it and the project
    scripts it names are now (a change asks again)."""
    if argv != ["trust"]:
        return fail("usage: cmdop-tui hooks trust", EXIT_USAGE)
    from pathlib import Path

    from cmdop_tui.hooks import PROJECT_FILE, HookShapeError
    from cmdop_tui.hooks.shape import from_json
    from cmdop_tui.hooks.trust import trust
    from cmdop_tui.session.hook_setup import trust_store
    from cmdop_tui.support.text import inert_line

    try:
        table = from_json((Path.cwd() / PROJECT_FILE).read_text(encoding="utf-8"), PROJECT_FILE)
        path = trust(trust_store(), Path.cwd())
    except (OSError, UnicodeDecodeError, HookShapeError) as exc:
        return fail(f"cannot trust {PROJECT_FILE}: {exc}")
    events = ", ".join(event for event, groups in table.groups.items() if groups)
    print(inert_line(f"trusted {path}: hooks for {events or 'no event'}"))
    return 0


def _machines(argv: list[str]) -> int:
    from cmdop_tui.machines_cli import machines_main

    return machines_main(argv)


def _rewind(argv: list[str]) -> int:
    from cmdop_tui.rewind_cli import rewind_main

    return rewind_main(argv)


def _acp(argv: list[str]) -> int:
    from cmdop_tui.acp import acp_main

    return acp_main(argv)


def _serve(argv: list[str]) -> int:
    from cmdop_tui.serve import serve_main

    return serve_main(argv)


# Every subcommand, by its first word; `-h` lists each (config/flags.py COMMANDS, held by a test).
SUBCOMMANDS: dict[str, Callable[[list[str]], int]] = {
    "rewind": _rewind,
    "machines": _machines,
    "mcp": mcp_command,
    "hooks": hooks_command,
    "permissions": permissions_command,
    "config": config_command,
    "serve": _serve,
    "acp": _acp,
}


def run_headless_cli(settings: Settings, prompt: str, output_format: str, input_format: str = "text") -> int:
    from cmdop_tui.headless import HeadlessOptions, OutputError, run_headless
    from cmdop_tui.machines.spec import MachineError
    from cmdop_tui.permissions import PermissionsError
    from cmdop_tui.session.errors import MissingKeyError
    from cmdop_tui.session.local_model import LocalModelError
    from cmdop_tui.transcripts import SessionError

    options = HeadlessOptions(prompt=prompt, output_format=output_format, input_format=input_format)  # type: ignore[arg-type]
    try:
        code = asyncio.run(run_headless(settings, options))
    except (MissingKeyError, MachineError, SessionError, PermissionsError, LocalModelError, SettingsError) as exc:
        if output_format == "stream-json":  # a reader of the events gets the reason as one, too
            _error_event(SETUP_ERROR_CODES[type(exc).__name__], str(exc))
        return fail(str(exc))
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): nothing more to say to anyone.
        _stdout_to_nowhere()
        return 1
    except OutputError as exc:  # said once on stderr; what is still buffered goes nowhere
        _stdout_to_nowhere()
        return fail(str(exc))
    return code


# The `code` of the `error` event a run that could not start ends with (stream-json).
SETUP_ERROR_CODES = {
    "MissingKeyError": "no_api_key",
    "MachineError": "machine",
    "SessionError": "session",
    "PermissionsError": "permissions",
    "LocalModelError": "local_model",
    "SettingsError": "settings",
}


def _error_event(code: str, message: str) -> None:
    from cmdop_tui.agent.events import Error
    from cmdop_tui.headless import OutputError, write_json_line

    with contextlib.suppress(OutputError, BrokenPipeError):  # stderr says it anyway
        write_json_line(sys.stdout, Error(code=code, message=message).to_json())


def _stdout_to_nowhere() -> None:
    """What is still buffered for standard output is dropped at exit, not written (and failed) again."""
    if sys.stdout is not None:  # None: fd 1 was closed from the start
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


# A lone Esc is told from the start of a key sequence by waiting; 100 ms (Textual's default)
# would make Stop feel slow. Sequences from a terminal arrive in one read, even over SSH.
ESCAPE_DELAY_MS = "25"


LOW_BANDWIDTH_FPS = "12"  # frames a second at most on a slow link (Textual's default is 60)


def prepare_terminal(settings: Settings, environ: MutableMapping[str, str] = os.environ) -> None:
    """What Textual reads from the environment when it is imported: the Escape key's delay, and
    on a slow link (low-bandwidth mode) fewer frames a second and no animations."""
    environ.setdefault("ESCDELAY", ESCAPE_DELAY_MS)
    if settings.low_bandwidth_mode(environ):
        environ.setdefault("TEXTUAL_FPS", LOW_BANDWIDTH_FPS)
        environ.setdefault("TEXTUAL_ANIMATIONS", "none")


# The UI thread waits at most this for threads busy in Python (5 ms by default). A key's echo
# takes some 30 hand-overs of the GIL while the session's thread imports the SDK (the first
# second after the first frame): at 1 ms they added 30 ms to the echo of a key typed then.
GIL_SWITCH_S = 0.00025
# Textual paints on a grid of 1/FPS: a key typed just after a frame (a streaming reply paints 25
# a second) waited up to 17 ms at 60 to be echoed. Frames come only when something changed, and a
# streaming reply paces its own, so a finer grid adds few frames.
ECHO_FPS = "200"


def missing_terminal() -> str | None:
    """Why the full-screen app cannot run here (None when it can): it reads keys from standard
    input and draws on standard error, as Textual does, so both must be a terminal. Not asked
    of `serve`'s apps, whose driver (TEXTUAL_DRIVER) talks to a browser over pipes."""
    if os.environ.get("TEXTUAL_DRIVER"):
        return None
    not_terminals = [
        name for name, stream in (("input", sys.stdin), ("error", sys.stderr)) if stream is None or not stream.isatty()
    ]
    if not not_terminals:
        return None
    which = " and ".join(f"standard {name}" for name in not_terminals)
    verb = "are" if len(not_terminals) > 1 else "is"
    return f"the app needs a terminal, and {which} {verb} not one; for a script, run one prompt with -p PROMPT"


def run_tui(settings: Settings) -> int:
    prepare_terminal(settings)
    os.environ.setdefault("TEXTUAL_FPS", ECHO_FPS)  # after prepare_terminal: a slow link keeps its 12
    # A key's echo passes from the input thread to the event loop to the writer thread; while the
    # SDK imports in a thread (or a stream is parsed), each hand-over waited up to 5 ms for the GIL.
    sys.setswitchinterval(GIL_SWITCH_S)
    hold_collections()  # until the first frame is out (tui/frames.py)
    from cmdop_tui.tui.app import CmdopApp
    from cmdop_tui.tui.exit_signals import SignalExit

    app = CmdopApp(settings)
    with SignalExit(app) as exits:
        app.run()
    return exits.code or 0
