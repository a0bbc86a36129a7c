"""The scripted session of bench_checkpoints.py's rewind figure: 20 turns on three machines
(this one and two real sshd hosts), then a rewind to each turn, last to first, checked file by
file (bytes and mode) against the trees as they were when that turn began."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from fake_anthropic import FakeAnthropic, Reply, text_reply, tool_reply
from sshd import SshLab

TURNS = 20
MACHINES = ("local", "alpha", "bravo")
Tree = dict[str, tuple[bytes, int]]


def seed(tree: Path) -> None:
    (tree / "bin").mkdir(parents=True, exist_ok=True)
    (tree / "app.conf").write_text("port = 0\n")
    (tree / "words.txt").write_text("".join(f"alpha {i}\n" for i in range(50)))
    (tree / "data.txt").write_text("rows\n")


def state(tree: Path) -> Tree:
    return {
        str(p.relative_to(tree)): (p.read_bytes(), stat.S_IMODE(p.stat().st_mode))
        for p in sorted(tree.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def calls(turn: int, machine: str, port: dict[str, int]) -> list[tuple[str, dict[str, Any]]]:
    """The turn's tool calls on `machine`: each turn a different kind of change."""
    where = {} if machine == "local" else {"machine": machine}
    kind = turn % 5
    if kind == 0:
        return [("write_file", {"path": f"notes/t{turn}.md", "content": f"# turn {turn}\n", **where})]
    if kind == 1:
        old, port[machine] = port[machine], port[machine] + 1
        edit = {"path": "app.conf", "old_string": f"port = {old}", "new_string": f"port = {port[machine]}"}
        return [("edit_file", {**edit, **where})]
    if kind == 2:
        return [("execute_command", {"command": f"sed -i 's/alpha {turn}/beta {turn}/' words.txt", **where})]
    if kind == 3:
        command = f'rm -f notes/t{turn - 3}.md; for f in data*.txt; do mv "$f" data-{turn}.txt; done'
        return [("execute_command", {"command": command, **where})]
    made = f"printf '#!/bin/sh\\necho {turn}\\n' > bin/tool{turn}.sh && chmod +x bin/tool{turn}.sh"
    return [
        ("execute_command", {"command": f"{made}; chmod -x bin/tool{turn - 5}.sh 2>/dev/null; true", **where}),
        ("run_on_machines", {"command": f"echo {turn} >> fleet.log", "machines": ["alpha", "bravo"]}),
    ]


def replies(turn: int, machine: str, port: dict[str, int]) -> list[Reply]:
    return [tool_reply(name, args) for name, args in calls(turn, machine, port)] + [text_reply(f"turn {turn} done")]


async def rewind_correctness(lab: SshLab, remote_trees: dict[str, Path], home: Path) -> tuple[int, int]:
    """(states exact, states checked)."""
    from agent_helpers import Recorder

    from cmdop_tui.config.settings import RunOptions, Settings
    from cmdop_tui.session.session import Session

    local = home / "project"
    trees = {"local": local, **remote_trees}
    for tree in trees.values():
        seed(tree)
    port = dict.fromkeys(MACHINES, 0)
    before: list[dict[str, Tree]] = []
    with FakeAnthropic() as server:
        env = {"ANTHROPIC_API_KEY": server.api_key, "ANTHROPIC_BASE_URL": server.url}
        settings = Settings(ssh_config=lab.config, run=RunOptions(auto_approve=True))
        os.environ.update(env)
        async with Session(settings, platform="headless", cwd=local, record=False) as session:
            for turn in range(1, TURNS + 1):
                before.append({name: state(tree) for name, tree in trees.items()})
                server.enqueue(*replies(turn, MACHINES[turn % 3], port))
                result = await session.run(f"turn {turn}", Recorder())
                assert result.status == "final", result
            after_all = {name: state(tree) for name, tree in trees.items()}
            right = total = 0
            for turn in range(TURNS, 0, -1):
                plan = await session.rewind_plan(turn)
                done = await session.rewind(plan, conversation=False)
                assert done.files is not None and not done.files.failed, done
                total += 1
                right += {name: state(tree) for name, tree in trees.items()} == before[turn - 1]
            # The first rewind's own turn holds the trees as the 20 turns left them: back there.
            await session.rewind(await session.rewind_plan(TURNS + 1), conversation=False)
            total += 1
            right += {name: state(tree) for name, tree in trees.items()} == after_all
    return right, total
