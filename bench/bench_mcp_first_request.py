"""The time to the first model request of `cmdop-tui -p`, with five MCP servers configured (50
tools in all) against none (target: +1 s at most). Run: .venv/bin/python bench/bench_mcp_first_request.py

From starting `cmdop-tui -p` to the fake Messages API (tests/support/fake_anthropic.py) receiving
its first request, cold (`CMDOP_TUI_NO_WARM=1`: a first start, the MCP SDK imported on the way)
and warm (a run forked from the warm agent, which has the SDK imported). A headless run waits for
its servers before that request, so the figure holds their start, handshakes and tool lists.
Cases, taken in turn in alternating order (so the machine's drift hits all alike), medians of
ROUNDS:

1. no MCP server;
2. five minimal servers (tests/support/mcp_servers/tiny_server.py --tools 10: 50 tools): the
   client's own cost;
3. the five official servers the issue names (`server-everything`, `-filesystem`, `-memory`,
   `mcp-server-git`, `-time`, from .tools/): their tool count as listed; each server's own start
   (node, Python) is in it.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "support"))

from bench_remote_agent import stop_agent, wait_for_agent  # noqa: E402
from fake_anthropic import FakeAnthropic, text_reply  # noqa: E402
from mcp_servers.harness import TINY  # noqa: E402
from real_tools import PLACES  # noqa: E402

ROUNDS = 7
SERVERS = 5
TOOLS_EACH = 10
LIMIT_S = 1.0
SCRATCH = Path(tempfile.mkdtemp(prefix="bench-mcp-first-"))
RUNTIME = SCRATCH / "runtime"


def table(name: str, command: str, *args: str, env: dict[str, str] | None = None) -> str:
    lines = [f"[mcp.{name}]", f"command = {json.dumps(command)}", f"args = {json.dumps(list(args))}", "timeout = 60"]
    if env:
        lines.append("env = { " + ", ".join(f"{key} = {json.dumps(value)}" for key, value in env.items()) + " }")
    return "\n".join(lines) + "\n"


def minimal() -> str:
    return "".join(table(f"s{n}", sys.executable, "-S", str(TINY), "--tools", str(TOOLS_EACH)) for n in range(SERVERS))


def official() -> str | None:
    if not all(PLACES[name].exists() for name in ("mcp-server-everything", "mcp-server-git")):
        return None
    repo = SCRATCH / "repo"
    if not repo.exists():
        repo.mkdir()
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
    return "".join(
        [
            table("everything", str(PLACES["mcp-server-everything"])),
            table("filesystem", str(PLACES["mcp-server-filesystem"]), str(repo)),
            table("memory", str(PLACES["mcp-server-memory"]), env={"MEMORY_FILE_PATH": str(SCRATCH / "memory.jsonl")}),
            table("git", str(PLACES["mcp-server-git"]), "--repository", str(repo)),
            table("time", str(PLACES["mcp-server-time"])),
        ]
    )


def first_request_s(api: FakeAnthropic, config: str, warm: bool = False) -> tuple[float, int]:
    """One `cmdop-tui -p`: seconds from its start to the first request, and the MCP tools that
    request offered."""
    (SCRATCH / "config.toml").write_text(config)
    received: list[float] = []

    def answer(body: dict) -> object:
        received.append(time.monotonic())  # CLOCK_MONOTONIC: the same clock in every process
        return text_reply("ok")

    api.enqueue(answer)
    env = {
        **os.environ,
        "HOME": str(SCRATCH / "home"),
        "XDG_CONFIG_HOME": str(SCRATCH / "config"),
        "XDG_DATA_HOME": str(SCRATCH / "data"),
        "XDG_STATE_HOME": str(SCRATCH / "state"),
        "XDG_CACHE_HOME": str(SCRATCH / "cache"),
        "CMDOP_TUI_CONFIG": str(SCRATCH / "config.toml"),
        "CMDOP_TUI_RUNTIME_DIR": str(RUNTIME),
        "CMDOP_TUI_NO_WARM": "0" if warm else "1",
        "ANTHROPIC_API_KEY": api.api_key,
        "ANTHROPIC_BASE_URL": api.url,
    }
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "cmdop_tui", "-p", "hi", "--yes"],
        cwd=SCRATCH,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and received, (done.returncode, done.stderr[-2000:])
    tools = [tool["name"] for tool in api.requests[-1].body.get("tools", [])]
    return received[0] - started, sum(name.startswith("mcp__") for name in tools)


def measure(api: FakeAnthropic, cases: dict[str, str], warm: bool) -> None:
    times: dict[str, list[float]] = {name: [] for name in cases}
    tools: dict[str, int] = {}
    for round_ in range(ROUNDS):
        order = list(cases.items())
        for name, config in order if round_ % 2 else reversed(order):
            seconds, tools[name] = first_request_s(api, config, warm)
            times[name].append(seconds)
    base = statistics.median(times["no MCP server"])
    print(f"time to the first model request of a {'warm' if warm else 'cold'} `cmdop-tui -p` (median of {ROUNDS}):")
    for name, taken in times.items():
        median = statistics.median(taken)
        extra = "" if name == "no MCP server" else f" ({median - base:+.2f} s; limit +{LIMIT_S:g} s)"
        print(f"  {name}, {tools[name]} MCP tools offered: {median:.2f} s{extra}")


def main() -> None:
    cases = {"no MCP server": "", f"{SERVERS} minimal servers": minimal()}
    if (five := official()) is not None:
        cases["the 5 official servers"] = five
    else:
        print("the official servers are not installed (bash .ci/tools): their case is left out")
    with FakeAnthropic() as api:
        first_request_s(api, "")  # warms the file cache: no case pays for it
        measure(api, cases, warm=False)
        first_request_s(api, "", warm=True)  # cold, and it starts the warm agent
        wait_for_agent(RUNTIME)
        try:
            measure(api, cases, warm=True)
        finally:
            stop_agent(RUNTIME)


if __name__ == "__main__":
    try:
        main()
    finally:
        shutil.rmtree(SCRATCH, ignore_errors=True)
