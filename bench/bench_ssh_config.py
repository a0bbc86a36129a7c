"""Figure: aliases whose reading differs from `ssh -G`, over the configs of tests/data/ssh_config/.

Run: .venv/bin/python bench/bench_ssh_config.py   (needs the OpenSSH client, `ssh`)

For every config ssh accepts, each alias we list must be one ssh applies that Host line to, with
the HostName, User, Port and ProxyJump ssh prints, and no name ssh applies a Host line to may be
missing (tests/support/ssh_oracle.py). Target: 0. Configs ssh itself refuses are counted apart.

Beside it: the time to read a generated config of 1,000 Host blocks (2,000 aliases, a negated
pattern and `Host *`), which the inventory does before the first paint.
"""

from __future__ import annotations

import asyncio
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))

from ssh_oracle import case_names, compare

from cmdop_tui.machines.ssh_config import read_ssh_config

BLOCKS = 1_000


def large_config_seconds(directory: Path) -> tuple[int, float]:
    lines = []
    for i in range(BLOCKS):
        lines += [f"Host h{i:04d} h{i:04d}.example", f"  HostName 10.1.{i // 250}.{i % 250}", "  User ops"]
    lines += ["Host *.example !h0001.example", "  ProxyJump bastion", "Host *", "  ServerAliveInterval 30"]
    config = directory / "config"
    config.write_text("\n".join(lines) + "\n")
    started = time.perf_counter()
    aliases = len(read_ssh_config(config, home=directory).hosts)
    return aliases, time.perf_counter() - started


async def main() -> int:
    if shutil.which("ssh") is None:
        print("ssh is not installed: no figure")
        return 1
    started = time.perf_counter()
    aliases = differing = 0
    refused: list[str] = []
    for name in case_names():
        with tempfile.TemporaryDirectory() as home:
            comparison = await compare(name, Path(home))
        if comparison.refused:
            refused.append(name)
            continue
        aliases += len(comparison.ours.hosts)
        differing += len(comparison.differences)
        for line in comparison.differences:
            print(f"  {line}")
    cases = len(case_names())
    print(
        f"configs: {cases} ({cases - len(refused)} read by ssh; refused by ssh itself: {', '.join(refused) or 'none'})"
    )
    print(f"aliases compared: {aliases}")
    print(f"aliases that differ from ssh -G: {differing}   (target 0)")
    print(f"time: {time.perf_counter() - started:.1f} s")
    with tempfile.TemporaryDirectory() as directory:
        count, seconds = large_config_seconds(Path(directory))
    print(f"reading a config of {BLOCKS} Host blocks ({count} aliases): {seconds * 1000:.0f} ms")
    return 0 if differing == 0 else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
