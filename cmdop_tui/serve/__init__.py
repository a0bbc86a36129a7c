"""`cmdop-tui serve`: the TUI in a web browser, through textual-serve.

How textual-serve runs the app (textual-serve 1.1): an aiohttp server serves a page with xterm.js
at `/`; every browser tab that connects to `/ws` gets a **new app process**, started with
`asyncio.create_subprocess_shell(command)`: the command *string* goes through `/bin/sh -c`, so
each part of it must be shell-quoted. The process inherits the server's working directory and a
copy of its environment taken at connect time (so ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL,
CMDOP_TUI_CONFIG... reach it), plus TEXTUAL_DRIVER=textual.drivers.web_driver:WebDriver,
TEXTUAL_COLOR_SYSTEM=truecolor, TEXTUAL_FPS=60 and COLUMNS/ROWS of the browser's terminal. The
app speaks Textual's web-driver protocol over its stdin/stdout pipes (a `__GANGLION__` line, then
packets: a type byte, a 4-byte length, the payload); its stderr is collected and printed by the
server when it ends. Closing the tab sends the app a "quit" packet. Two tabs are two independent
sessions (two operators, two transcripts). textual-serve itself has no authentication.

What this module adds around `textual_serve.server.Server`:
- the command: this interpreter (same install, same venv) running the app with the forwarded
  flags, shell-quoted, behind `exec` so that the process the server holds is the app, not a shell;
- each app in a session (process group) of its own: Ctrl+C in serve's terminal reaches serve
  only, which then stops the apps in order; and on Linux a parent-death signal, so that even a
  `kill -9` of serve takes its apps down (plain textual-serve leaves them running);
- a bounded stop: on Ctrl+C / SIGTERM, and when a tab closes, each app is asked to quit, then
  gets SIGTERM, then SIGKILL, and is reaped; serve returns only when all are gone;
- an Origin check on the websocket: a browser sends the page's origin, so a web page from
  elsewhere (or a DNS-rebinding one) cannot open an operator session on this server, which on
  loopback would otherwise be one click away for any site the user visits;
- a warning when the bind address is not loopback: anyone who can reach the port gets an
  operator that runs commands as this user.
"""

from __future__ import annotations

import argparse
import ipaddress
import shlex
import sys
from collections.abc import Sequence

from cmdop_tui.serve.origins import origin_of

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
EXIT_USAGE = 2
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def serve(
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    *,
    command: str | None = None,
    public_url: str | None = None,
    app_args: Sequence[str] = (),
) -> int:
    """Serve the TUI on http://host:port until Ctrl+C / SIGTERM; return the exit status (0 after
    a stop, 1 when it cannot listen).

    `app_args` are the app's own flags (`--theme`, `--machine`...), passed to every app started.
    `command` replaces the whole app command (a shell command line; default `app_command(app_args)`).
    `public_url` is the address browsers open (default http://host:port); set it behind a proxy
    or when the name people use differs: only pages from it (or from loopback) may connect.
    """
    from cmdop_tui.serve.server import CmdopServer  # textual-serve and aiohttp: only when serving

    command = command or app_command(app_args)
    url = (public_url or f"http://{_url_host(host)}:{port}").rstrip("/")
    server = CmdopServer(
        command,
        host=host,
        port=port,
        title="cmdop-tui",
        public_url=url,
    )
    server.allowed_origins = allowed_origins(url, port)
    if warning := exposure_warning(host, port):
        print(warning, file=sys.stderr, flush=True)
    try:
        server.serve()
    except OSError as exc:
        print(f"cmdop-tui serve: cannot listen on {host}:{port}: {exc.strerror or exc}", file=sys.stderr, flush=True)
        return 1
    finally:
        server.kill_all()
    return 0


def serve_main(argv: Sequence[str]) -> int:
    """`cmdop-tui serve [--host H] [--port N] [--public-url URL] [app flags...]`.

    Other flags are the app's own (`--theme`, `--machine`, `--model`, `--yes`...): they are
    checked here, once, and passed to every app the server starts."""
    p = argparse.ArgumentParser(
        prog="cmdop-tui serve",
        description="Serve the TUI in a web browser (textual-serve). There is no authentication: keep "
        "the default loopback bind unless you know who can reach the port.",
        epilog="Other flags are passed to the app, e.g. --theme NAME, --machine NAME, --model ID.",
    )
    p.add_argument("--host", default=DEFAULT_HOST, help=f"address to bind (default {DEFAULT_HOST})")
    p.add_argument("--port", type=_port, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    p.add_argument("--public-url", help="the URL browsers open, when it is not http://HOST:PORT")
    args, rest = p.parse_known_args(list(argv))
    if problem := _check_app_args(rest):
        print(f"cmdop-tui serve: {problem}", file=sys.stderr)
        return EXIT_USAGE
    return serve(args.host, args.port, public_url=args.public_url, app_args=rest)


def app_command(app_args: Sequence[str] = ()) -> str:
    """The shell command textual-serve runs for each browser connection: `cmdop-tui APP_ARGS`
    with this interpreter (exec, so the process serve tracks is the app itself)."""
    return "exec " + shlex.join([sys.executable, "-m", "cmdop_tui", *app_args])


def is_loopback(host: str) -> bool:
    """True when `host` only accepts connections from this machine."""
    if host.lower() in ("localhost", "localhost.localdomain", "ip6-localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def exposure_warning(host: str, port: int) -> str | None:
    """The warning printed before serving on `host`, or None for a loopback address."""
    if is_loopback(host):
        return None
    return (
        f"WARNING: serving on {host}:{port}, which is not a loopback address. textual-serve has NO "
        "authentication: anyone who can reach this port gets the operator, which runs commands and "
        "reads and writes files as this user, with this process's API key. Bind 127.0.0.1 and reach "
        "it through an SSH tunnel (ssh -L) or an authenticating reverse proxy instead."
    )


def allowed_origins(public_url: str, port: int) -> frozenset[str]:
    """The page origins whose websockets are accepted: the public URL's, and loopback's on
    this port (only a page this server served can have those)."""
    urls = [public_url, *(f"http://{name}:{port}" for name in LOOPBACK_NAMES)]
    return frozenset(origin_of(url) for url in urls)


def _url_host(host: str) -> str:
    if host in ("0.0.0.0", "::", ""):
        import socket

        host = socket.gethostname()
    host = host.strip("[]")
    return f"[{host}]" if ":" in host else host


def _port(text: str) -> int:
    value = int(text)
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError("must be 1..65535")
    return value


def _check_app_args(app_args: list[str]) -> str | None:
    """A bad flag would otherwise fail in every browser tab, after the page loaded."""
    from cmdop_tui.config.flags import apply_flags, parser
    from cmdop_tui.config.settings import SettingsError, load_settings
    from cmdop_tui.mcp.server_tables import settings_servers

    app_parser = parser()
    app_parser.prog = "cmdop-tui serve"
    try:
        args = app_parser.parse_args(app_args)
    except SystemExit as exc:  # argparse printed why (or the help)
        if not exc.code:
            raise
        return f"invalid app flags: {shlex.join(app_args)}"
    if args.prompt is not None:
        return "-p (headless mode) cannot be served; serve runs the full-screen app"
    try:
        settings = apply_flags(load_settings(), args)
        settings.resolve_model(settings.agent.model)
        settings_servers(settings)  # a bad [mcp.NAME] table, said here rather than in every tab
    except SettingsError as exc:
        return str(exc)
    return None


if __name__ == "__main__":
    sys.exit(serve_main(sys.argv[1:]))
