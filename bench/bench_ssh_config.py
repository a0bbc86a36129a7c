"""Figure: aliases whose reading differs from `ssh -G`, over the real configs of tests/data/ssh_config/.

Run: .venv/bin/python bench/bench_ssh_config.py   (needs the OpenSSH client, `ssh`)

For every config ssh accepts, each alias we list must be one ssh applies that Host line to, with
the HostName, User, Port and ProxyJump ssh prints, and no name ssh applies a Host line to may be
missing (tests/support/ssh_oracle.py). Target: 0. Configs ssh itself refuses are counted apart.
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
    return 0 if differing == 0 else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
