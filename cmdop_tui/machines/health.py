"""Health probes: is a machine reachable, how fast, what runs there and how busy it is.

A probe is one short ssh command (over the control master when warm). A machine is online when it
answers, degraded when it answers slowly or is heavily loaded, offline when it does not answer.
It also learns what the sandbox there needs (machines/remote_sandbox.py): no command runs on a
machine before a probe has said what sandbox it has.
"""

from __future__ import annotations

import time

from cmdop_tui.machines.agent import agent_probe, parse_agent
from cmdop_tui.machines.local_load import judge
from cmdop_tui.machines.remote_sandbox import FACT_PREFIXES, REMOTE_PROBE, RemoteFacts
from cmdop_tui.machines.spec import Health, MachineError
from cmdop_tui.machines.ssh import SshTransport

PROBE_SCRIPT = (
    "uname -sr; cat /proc/loadavg 2>/dev/null || uptime; cat /proc/uptime 2>/dev/null; nproc 2>/dev/null; "
    + REMOTE_PROBE
)
PROBE_TIMEOUT_S = 8.0


def format_uptime(seconds: float) -> str:
    days, rest = divmod(int(seconds), 86_400)
    hours, rest = divmod(rest, 3_600)
    return f"{days}d{hours}h" if days else f"{hours}h{rest // 60:02d}m"


def parse_probe(output: str, latency_ms: float) -> Health:
    return parse_probe_facts(output, latency_ms)[0]


def parse_probe_facts(output: str, latency_ms: float) -> tuple[Health, RemoteFacts | None]:
    """The machine's health, and what its sandbox needs (None: the probe did not say: unknown)."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    facts = RemoteFacts.parse(lines)
    agent = next((parse_agent(line) for line in lines if line.startswith("agent:")), "")
    lines = [line for line in lines if not line.startswith((*FACT_PREFIXES, "agent:"))]
    os_name = lines[0] if lines else ""
    load_words = lines[1].split() if len(lines) > 1 else []
    load1 = _float(load_words[0]) if load_words else None
    uptime = _float(lines[2].split()[0]) if len(lines) > 2 and lines[2].split() else None
    cpus = int(lines[3]) if len(lines) > 3 and lines[3].isdigit() else None
    health = Health(
        state=judge(latency_ms, load1, cpus),  # type: ignore[arg-type]
        latency_ms=round(latency_ms, 1),
        os_name=os_name,
        load=" ".join(load_words[:3]),
        uptime=format_uptime(uptime) if uptime is not None else "",
        sandbox=facts.kind if facts is not None else "unknown",
        agent=agent,
    )
    return health, facts


def _float(text: str) -> float | None:
    try:
        return float(text.rstrip(","))
    except ValueError:
        return None


async def probe(transport: SshTransport, timeout_s: float = PROBE_TIMEOUT_S) -> Health:
    return (await probe_facts(transport, timeout_s))[0]


async def probe_facts(transport: SshTransport, timeout_s: float = PROBE_TIMEOUT_S) -> tuple[Health, RemoteFacts | None]:
    """The machine's health and its sandbox's facts (None: offline, or the probe did not say)."""
    started = time.perf_counter()
    try:
        # The agent's line is told by its prefix, like the sandbox's (the others by position).
        result = await transport.run(f"{PROBE_SCRIPT}; {agent_probe(transport.spec.cmdop)}", timeout_s=timeout_s)
    except MachineError as exc:
        return Health(state="offline", error=str(exc)), None
    return parse_probe_facts(result.stdout.decode("utf-8", "replace"), (time.perf_counter() - started) * 1000)
