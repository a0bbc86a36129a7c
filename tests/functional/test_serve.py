"""`cmdop-tui serve` end to end: the real server, the real app, and headless Chromium.

The browser is Debian's `chromium`, driven over the Chrome DevTools Protocol (CDP) by the small
client below (aiohttp's websocket client; aiohttp comes with textual-serve). The page renders the
terminal into a canvas (xterm.js with its WebGL/canvas renderers), so the screen text is read from
xterm.js's own buffer: a script injected before the page's scripts catches the `Terminal` object
textual-serve's page creates (it is assigned to a `.terminal` property) and exposes it as
`window.__cmdopTerm`. Keys are typed as real key events (CDP `Input.dispatchKeyEvent`).

The browser test is skipped when chromium is not installed (CI installs it: see .ci/run);
CMDOP_TEST_CHROMIUM names another binary. The other tests use a websocket client in its place.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from fake_anthropic import FakeAnthropic, text_reply
from processes import descendants

CHROMIUM = os.environ.get("CMDOP_TEST_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
HAVE_CHROMIUM = os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)
PLACEHOLDER = "Ask the operator"
# The serve entry point, as the lead wires it into the CLI: `cmdop-tui serve` runs serve_main too.
SERVE_ARGV = [sys.executable, "-m", "cmdop_tui", "serve"]

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-dev-shm-usage",
    "--mute-audio",
    # The page asks fonts.googleapis.com for a font; the machine is offline. Failing every name
    # but loopback at once keeps the page's load event (which opens the terminal) from waiting.
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
    "--window-size=1280,800",
    "--remote-debugging-port=0",
]

# Runs before the page's own scripts: catch xterm.js's Terminal when textual.js stores it as
# `this.terminal`, and note (in page time: ms since navigation start) when watched text first
# appears in the terminal's buffer, and when keys go down (for bench/bench_serve.py).
PAGE_HOOK = r"""
(() => {
  const seen = {};
  window.__cmdopSeen = seen;
  const screenText = (t) => {
    const b = t.buffer.active, lines = [];
    for (let y = 0; y < t.rows; y++) {
      const line = b.getLine(b.viewportY + y);
      lines.push(line ? line.translateToString(true) : "");
    }
    return lines.join("\n");
  };
  const check = () => {
    const t = window.__cmdopTerm;
    const pending = Object.keys(seen).filter((k) => seen[k] === null);
    if (!t || !pending.length) return;
    const text = screenText(t);
    for (const k of pending) if (text.includes(k)) seen[k] = performance.now();
  };
  window.__cmdopScreen = () => (window.__cmdopTerm ? screenText(window.__cmdopTerm) : null);
  window.__cmdopWatch = (needle) => { if (!(needle in seen)) seen[needle] = null; check(); };
  for (const needle of WATCH) window.__cmdopWatch(needle);
  window.__cmdopKeys = [];  // page time of each keydown
  document.addEventListener("keydown", () => window.__cmdopKeys.push(performance.now()), true);
  Object.defineProperty(Object.prototype, "terminal", {
    configurable: true,
    set(value) {
      Object.defineProperty(this, "terminal", { value, writable: true, configurable: true, enumerable: true });
      if (value && value.buffer && typeof value.onWriteParsed === "function" && !window.__cmdopTerm) {
        window.__cmdopTerm = value;
        delete Object.prototype.terminal;
        value.onWriteParsed(check);
      }
    },
  });
})();
"""


# --- processes ----------------------------------------------------------------------------------


def alive(pid: int) -> bool:
    """Running (a zombie waiting for a reaper counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def wait_gone(pids: set[int], timeout: float) -> set[int]:
    """Wait until none of `pids` runs; return those still running at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        left = {pid for pid in pids if alive(pid)}
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.02)


def describe(pids: set[int]) -> str:
    lines = []
    for pid in sorted(pids):
        try:
            lines.append(f"{pid}: " + Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:200])
        except OSError:
            lines.append(f"{pid}: (gone)")
    return "\n".join(lines)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def kill_group(pid: int, sig: int = signal.SIGKILL) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


class Serve:
    """`cmdop-tui serve --port N` in a child process (its own process group)."""

    def __init__(self, env: dict[str, str], log_path: Path, *extra: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log_path
        self._log = open(log_path, "wb")
        self.proc = subprocess.Popen(
            [*SERVE_ARGV, "--port", str(self.port), *extra],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.seen: set[int] = set()  # every process ever seen below serve (for the leak check)

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_ready(self, timeout: float = 10.0) -> None:
        """Until serve prints where to open it (it listens by then)."""
        deadline = time.monotonic() + timeout
        while self.url not in self.output():
            if self.proc.poll() is not None:
                raise AssertionError(f"serve exited with {self.proc.returncode}:\n{self.output()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"serve did not start in {timeout} s:\n{self.output()}")
            time.sleep(0.02)

    def note_children(self) -> set[int]:
        self.seen |= descendants(self.proc.pid)
        return self.seen

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 10.0) -> int | None:
        """Signal serve as a user would (Ctrl+C is SIGINT) and wait; SIGKILL the group if it hangs."""
        self.note_children()
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                kill_group(self.proc.pid)
                self.proc.wait()
                self._log.close()
                return None
        self._log.close()
        return self.proc.returncode


# --- a small CDP client -------------------------------------------------------------------------


class CdpError(RuntimeError):
    pass


class Browser:
    """Headless Chromium and one page, driven over the DevTools protocol."""

    def __init__(self, proc: subprocess.Popen[bytes], profile: Path) -> None:
        self.proc = proc
        self.profile = profile
        self.seen: set[int] = set()
        self._http: Any = None
        self._ws: Any = None
        self._reader: asyncio.Task[None] | None = None
        self._next_id = 0
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.session_id: str | None = None
        self.console: list[str] = []  # the page's console errors and uncaught exceptions

    @classmethod
    async def launch(cls, profile: Path, *, watch: tuple[str, ...] = ()) -> Browser:
        import aiohttp

        profile.mkdir(parents=True, exist_ok=True)
        log = open(profile.parent / f"{profile.name}.log", "wb")
        proc = subprocess.Popen(
            [CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "about:blank"],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        browser = cls(proc, profile)
        try:
            ws_url = await browser._devtools_url(timeout=15.0)
            browser._http = aiohttp.ClientSession()
            browser._ws = await browser._http.ws_connect(ws_url, max_msg_size=0)
            browser._reader = asyncio.create_task(browser._read())
            target = await browser.send("Target.createTarget", url="about:blank")
            attached = await browser.send("Target.attachToTarget", targetId=target["targetId"], flatten=True)
            browser.session_id = attached["sessionId"]
            await browser.send("Page.enable")
            await browser.send("Runtime.enable")
            hook = PAGE_HOOK.replace("WATCH", json.dumps(list(watch)))
            await browser.send("Page.addScriptToEvaluateOnNewDocument", source=hook)
        except BaseException:
            await browser.close()
            raise
        return browser

    async def _devtools_url(self, timeout: float) -> str:
        """Chromium writes its port and browser path to DevToolsActivePort once it listens."""
        path = self.profile / "DevToolsActivePort"
        deadline = time.monotonic() + timeout
        while True:
            try:
                port, browser_path = path.read_text().split("\n")[:2]
                if port and browser_path:
                    return f"ws://127.0.0.1:{port}{browser_path}"
            except (OSError, ValueError):
                pass
            if self.proc.poll() is not None:
                raise AssertionError(f"chromium exited with {self.proc.returncode}: {self._log_text()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"chromium did not open DevTools in {timeout} s: {self._log_text()}")
            await asyncio.sleep(0.02)

    def _log_text(self) -> str:
        try:
            return (self.profile.parent / f"{self.profile.name}.log").read_text(errors="replace")[-2000:]
        except OSError:
            return ""

    async def _read(self) -> None:
        import aiohttp

        try:
            async for message in self._ws:
                if message.type != aiohttp.WSMsgType.TEXT:
                    continue
                data = json.loads(message.data)
                if "id" in data:
                    future = self._pending.pop(data["id"], None)
                    if future is not None and not future.done():
                        future.set_result(data)
                elif data.get("method") == "Runtime.exceptionThrown":
                    self.console.append(json.dumps(data["params"]["exceptionDetails"])[:500])
                elif data.get("method") == "Runtime.consoleAPICalled" and data["params"]["type"] == "error":
                    self.console.append(json.dumps(data["params"]["args"])[:500])
        finally:
            for future in self._pending.values():
                if not future.done():
                    future.set_exception(CdpError("the DevTools connection closed"))

    async def send(self, method: str, *, timeout: float = 10.0, **params: Any) -> dict[str, Any]:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if self.session_id and not method.startswith(("Target.", "Browser.")):
            message["sessionId"] = self.session_id
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[self._next_id] = future
        try:
            await self._ws.send_str(json.dumps(message))
            reply = await asyncio.wait_for(future, timeout)
        finally:
            self._pending.pop(message["id"], None)
        if "error" in reply:
            raise CdpError(f"{method}: {reply['error']}")
        return reply.get("result", {})

    async def evaluate(self, expression: str) -> Any:
        result = await self.send("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in result:
            raise CdpError(f"{expression!r}: {result['exceptionDetails']}")
        return result["result"].get("value")

    async def navigate(self, url: str) -> None:
        result = await self.send("Page.navigate", url=url)
        if result.get("errorText"):
            raise CdpError(f"navigating to {url}: {result['errorText']}")

    async def screen(self) -> str:
        """The terminal's visible text ('' until the page's terminal exists)."""
        try:
            return await self.evaluate("window.__cmdopScreen ? window.__cmdopScreen() : null") or ""
        except CdpError:  # between documents while navigating
            return ""

    async def wait_for_text(self, needle: str, timeout: float, what: str = "") -> str:
        """Poll the screen (every 50 ms; nothing signals it) until `needle` is on it."""
        deadline = time.monotonic() + timeout
        while True:
            text = await self.screen()
            if needle in text:
                return text
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"{what or repr(needle)} not on the page's terminal within {timeout} s.\n"
                    f"screen:\n{text}\npage errors: {self.console}"
                )
            await asyncio.sleep(0.05)

    async def focus_terminal(self) -> None:
        await self.evaluate("window.__cmdopTerm.focus()")
        focused = await self.evaluate("document.activeElement && document.activeElement.className")
        assert "xterm-helper-textarea" in (focused or ""), f"the terminal did not take focus: {focused!r}"

    async def type_text(self, text: str) -> None:
        for char in text:
            await self.send("Input.dispatchKeyEvent", type="keyDown", key=char, text=char, unmodifiedText=char)
            await self.send("Input.dispatchKeyEvent", type="keyUp", key=char)

    async def press_enter(self) -> None:
        enter = {"key": "Enter", "code": "Enter", "windowsVirtualKeyCode": 13, "nativeVirtualKeyCode": 13}
        await self.send("Input.dispatchKeyEvent", type="keyDown", text="\r", unmodifiedText="\r", **enter)
        await self.send("Input.dispatchKeyEvent", type="keyUp", **enter)

    async def screenshot(self, path: Path) -> Path:
        shot = await self.send("Page.captureScreenshot", format="png", timeout=20.0)
        path.write_bytes(base64.b64decode(shot["data"]))
        return path

    def note_children(self) -> set[int]:
        if self.proc.poll() is None:
            self.seen |= {self.proc.pid} | descendants(self.proc.pid)
        return self.seen

    async def close(self) -> None:
        """Close the browser (politely, then its whole process group)."""
        self.note_children()
        if self._ws is not None and not self._ws.closed and self.proc.poll() is None:
            try:
                await self.send("Browser.close", timeout=3.0)
            except (TimeoutError, CdpError, ConnectionError):
                pass
        if self._ws is not None:
            await self._ws.close()
        if self._reader is not None:
            await asyncio.wait({self._reader}, timeout=2.0)
        if self._http is not None:
            await self._http.close()
        try:
            await asyncio.to_thread(self.proc.wait, 5.0)
        except subprocess.TimeoutExpired:
            pass
        kill_group(self.proc.pid)  # helpers (zygote, renderers) share chromium's group
        await asyncio.to_thread(self.proc.wait)


# --- fixtures -----------------------------------------------------------------------------------


@pytest.fixture
def serve_env(anthropic_env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """The environment a user's shell would give `cmdop-tui serve`: the fake API's key and URL
    and a config file of its own."""
    return {**os.environ, **anthropic_env, "CMDOP_TUI_CONFIG": str(tmp_path / "config.toml")}


needs_chromium = pytest.mark.skipif(not HAVE_CHROMIUM, reason=f"chromium is not installed ({CHROMIUM}); CI installs it")


# --- the end-to-end test ------------------------------------------------------------------------


@needs_chromium
@pytest.mark.timeout(60)
async def test_served_app_answers_in_the_browser(
    fake_api: FakeAnthropic, serve_env: dict[str, str], tmp_path: Path
) -> None:
    reply = "Served hello from the operator."
    prompt = "say hello from the browser"
    fake_api.enqueue(text_reply(reply))
    serve = Serve(serve_env, tmp_path / "serve.log")
    browser: Browser | None = None
    try:
        serve.wait_ready()
        browser = await Browser.launch(tmp_path / "chromium-profile")
        await browser.navigate(serve.url)
        await browser.wait_for_text(PLACEHOLDER, timeout=15, what="the app's prompt")
        serve.note_children()
        browser.note_children()

        await browser.focus_terminal()
        await browser.type_text(prompt)
        await browser.wait_for_text(prompt, timeout=5, what="the typed prompt")
        await browser.press_enter()
        screen = await browser.wait_for_text(reply, timeout=15, what="the operator's reply")
        shot = await browser.screenshot(tmp_path / "serve.png")
        print(f"\nscreenshot of the served app: {shot}")
        assert shot.stat().st_size > 10_000, "the screenshot is (nearly) empty"

        # The app got serve's environment: its request reached the fake API with the fake key.
        assert fake_api.requests, "the served app never called the API"
        assert prompt in json.dumps(fake_api.requests[-1].body)
        assert browser.console == [], f"the page reported errors: {browser.console}"
        assert "Traceback" not in screen
    finally:
        # Ctrl+C on serve while the tab is still open: serve must end its app, then itself.
        apps = serve.note_children()
        started = time.monotonic()
        code = await asyncio.to_thread(serve.stop, signal.SIGINT)
        stop_s = time.monotonic() - started
        if browser is not None:
            await browser.close()
    assert apps, "serve started no app process"
    assert code == 0, f"serve did not stop cleanly on SIGINT ({code}):\n{serve.output()}"
    print(f"serve stopped in {stop_s:.2f} s")
    assert not (left := wait_gone(apps, 5.0)), f"app processes left after serve stopped:\n{describe(left)}"
    if browser is not None:
        assert not (left := wait_gone(browser.seen, 5.0)), f"chromium processes left:\n{describe(left)}"
    assert "Traceback" not in serve.output(), serve.output()


# --- process lifetime, without a browser: a websocket client speaking the page's protocol -------


async def connect_app(url: str, origin: str | None = None, width: int = 100, height: int = 30) -> tuple[Any, Any]:
    """Open a session as the page does (from `origin`, default the page's own); return
    (http session, websocket) once the app's prompt has been drawn."""
    import aiohttp

    http = aiohttp.ClientSession()
    try:
        ws = await http.ws_connect(
            f"{url.replace('http', 'ws', 1)}/ws?width={width}&height={height}", origin=origin or url
        )
        received = b""
        deadline = time.monotonic() + 15
        while PLACEHOLDER.encode() not in received:
            message = await asyncio.wait_for(ws.receive(), max(0.1, deadline - time.monotonic()))
            if message.type != aiohttp.WSMsgType.BINARY and message.type != aiohttp.WSMsgType.TEXT:
                raise AssertionError(f"the session closed before the prompt showed: {message}")
            if message.type == aiohttp.WSMsgType.BINARY:
                received += message.data
    except BaseException:
        await http.close()
        raise
    return http, ws


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
async def test_no_app_outlives_serve(serve_env: dict[str, str], tmp_path: Path, sig: signal.Signals) -> None:
    """With two tabs open, stopping serve ends both apps: on SIGTERM (and Ctrl+C) serve asks
    them to quit and waits; even after a SIGKILL of serve the kernel ends them (parent-death
    signal), so no shell-capable operator is left running without its server."""
    serve = Serve(serve_env, tmp_path / "serve.log")
    sessions = []
    try:
        serve.wait_ready()
        sessions = [await connect_app(serve.url) for _ in range(2)]
        apps = serve.note_children()
        assert len(apps) >= 2, describe(apps)
        code = await asyncio.to_thread(serve.stop, sig, 10.0)
        if sig == signal.SIGTERM:
            assert code == 0, serve.output()
        left = wait_gone(apps, 5.0)
        assert not left, f"app processes left after serve got {sig.name}:\n{describe(left)}"
    finally:
        for http, ws in sessions:
            await ws.close()
            await http.close()
        kill_group(serve.proc.pid)
        for pid in serve.seen:
            kill_group(pid)


# --- the command line ---------------------------------------------------------------------------


def test_app_command_runs_this_interpreter_with_the_flags_quoted() -> None:
    import shlex

    from cmdop_tui.serve import app_command

    command = app_command(["--theme", "cmdop-light", "--machine", "web 1; rm -rf /"])
    argv = shlex.split(command)
    assert argv[0] == "exec" and argv[1] == sys.executable
    assert argv[-4:] == ["--theme", "cmdop-light", "--machine", "web 1; rm -rf /"]


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.0.1.1", True),
        ("localhost", True),
        ("::1", True),
        ("[::1]", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.168.1.20", False),
        ("myhost.example", False),
    ],
)
def test_only_loopback_binds_go_without_a_warning(host: str, loopback: bool) -> None:
    from cmdop_tui.serve import exposure_warning

    warning = exposure_warning(host, 8000)
    assert (warning is None) == loopback
    if warning:
        assert "no authentication" in warning.lower() and "runs commands" in warning


def test_a_public_bind_warns_before_anything_else(serve_env: dict[str, str], tmp_path: Path) -> None:
    """Bound to all interfaces, serve warns first. (The port is taken here, so nothing is ever
    exposed: serve reports that it cannot listen and exits 1.)"""
    with socket.socket() as taken:
        taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 0)
        taken.bind(("0.0.0.0", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [*SERVE_ARGV, "--host", "0.0.0.0", "--port", str(port)],
            env=serve_env,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    assert done.returncode == 1, done
    assert done.stderr.startswith("WARNING: serving on 0.0.0.0"), done.stderr
    assert "NO authentication" in done.stderr
    assert f"cannot listen on 0.0.0.0:{port}" in done.stderr


@pytest.mark.parametrize(
    ("argv", "message"),
    [(["-p", "hello"], "cannot be served"), (["--no-such-flag"], "invalid app flags"), (["--port", "0"], None)],
)
def test_serve_main_refuses_what_cannot_be_served(
    argv: list[str], message: str | None, capsys: pytest.CaptureFixture[str]
) -> None:
    from cmdop_tui.serve import serve_main

    try:
        code = serve_main(argv)
    except SystemExit as exc:  # argparse's own errors (a bad --port)
        code = exc.code
    assert code == 2
    if message:
        assert message in capsys.readouterr().err


async def test_pages_from_elsewhere_cannot_open_a_session(serve_env: dict[str, str], tmp_path: Path) -> None:
    """Any web page the user visits could open ws://127.0.0.1:PORT/ws (websockets ignore the
    same-origin policy), and a DNS-rebinding page even looks same-host: the page's Origin must
    be the server's own, or no app is started."""
    import aiohttp

    serve = Serve(serve_env, tmp_path / "serve.log")
    try:
        serve.wait_ready()
        for origin in (
            "http://evil.example",
            f"http://rebound.example:{serve.port}",
            f"https://127.0.0.1:{serve.port}",
        ):
            async with aiohttp.ClientSession() as http:
                with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                    await http.ws_connect(f"ws://127.0.0.1:{serve.port}/ws", origin=origin)
            assert refused.value.status == 403, origin
        assert not serve.note_children(), "an app was started for a foreign page"
        http, ws = await connect_app(serve.url, origin=f"http://localhost:{serve.port}")
        await ws.close()
        await http.close()
    finally:
        code = serve.stop()
    assert code == 0, serve.output()
    assert "refused a session for a page from http://evil.example" in serve.output()


def test_allowed_origins_are_the_public_url_and_loopback_on_the_port() -> None:
    from cmdop_tui.serve import allowed_origins

    assert allowed_origins("http://127.0.0.1:8000", 8000) == {
        "http://127.0.0.1:8000",
        "http://localhost:8000",
        "http://[::1]:8000",
    }
    behind_proxy = allowed_origins("https://Ops.Example.com:443/cmdop/", 8000)
    assert "https://ops.example.com" in behind_proxy and "http://ops.example.com" not in behind_proxy
