"""`cmdop-tui serve` in headless Chromium: from page load to a usable prompt.

Run: .venv/bin/python bench/bench_serve.py [RUNS]   (needs Debian's chromium)

Each run opens the page in a fresh browser (empty profile, so nothing cached: a first visit)
and measures, on the page's own clock (ms since navigation start, `performance.now()`):
1. navigation start -> the app's prompt placeholder ("Ask the operator") in xterm.js's buffer;
2. navigation start -> a character typed as soon as the placeholder showed is echoed in the
   prompt: the prompt is usable. This includes the app's start-up in its new process (textual-serve
   starts one per connection) and the page's own loading;
3. that keypress -> its echo.
The marks are taken in the page when xterm.js parses the app's output (its `onWriteParsed`
event), so they do not depend on how often this script looks.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))

from fake_anthropic import FakeAnthropic
from test_serve import CHROMIUM, HAVE_CHROMIUM, PLACEHOLDER, Browser, Serve

KEY = "λ"  # on screen nowhere else, so its echo is unambiguous
RUNS = 5


async def mark(browser: Browser, needle: str, timeout: float = 20.0) -> float:
    """The page time (ms) at which `needle` first showed in the terminal."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            seen = await browser.evaluate(f"window.__cmdopSeen ? window.__cmdopSeen[{needle!r}] : null")
        except Exception:
            seen = None
        if seen is not None:
            return float(seen)
        if time.monotonic() > deadline:
            raise AssertionError(f"{needle!r} not shown within {timeout} s; screen:\n{await browser.screen()}")
        await asyncio.sleep(0.01)


async def one_run(url: str, profile: Path) -> tuple[float, float, float]:
    browser = await Browser.launch(profile, watch=(PLACEHOLDER,))
    try:
        await browser.navigate(url)
        placeholder = await mark(browser, PLACEHOLDER)
        await browser.focus_terminal()
        await browser.evaluate(f"window.__cmdopWatch({KEY!r})")
        await browser.type_text(KEY)
        echoed = await mark(browser, KEY)
        pressed = await browser.evaluate("window.__cmdopKeys[0]")
        return placeholder, echoed, echoed - pressed
    finally:
        await browser.close()


def describe(samples: list[float]) -> str:
    return (
        f"median {statistics.median(samples):.0f} ms, min {min(samples):.0f}, max {max(samples):.0f} (n={len(samples)})"
    )


async def main(runs: int) -> None:
    if not HAVE_CHROMIUM:
        sys.exit(f"chromium not found at {CHROMIUM}: apt-get install chromium")
    work = Path(tempfile.mkdtemp(prefix="bench-serve-"))
    with FakeAnthropic() as server:
        env = {
            **os.environ,
            "HOME": str(work / "home"),
            "ANTHROPIC_API_KEY": server.api_key,
            "ANTHROPIC_BASE_URL": server.url,
            "CMDOP_TUI_CONFIG": str(work / "config.toml"),
        }
        serve = Serve(env, work / "serve.log")
        try:
            serve.wait_ready()
            results = [await one_run(serve.url, work / f"profile-{i}") for i in range(runs)]
        finally:
            serve.stop()
    shutil.rmtree(work, ignore_errors=True)
    placeholders, echoes, keys = (list(column) for column in zip(*results, strict=False))
    print(f"page load -> prompt placeholder shown:        {describe(placeholders)}")
    print(f"page load -> typed character echoed (usable): {describe(echoes)}")
    print(f"keypress -> echo in the browser:               {describe(keys)}")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else RUNS))
