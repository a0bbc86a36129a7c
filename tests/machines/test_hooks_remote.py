"""A hook scoped to a tag (`machines = "tag:prod"`) on real machines over ssh (real sshd): a call
on a machine without the tag runs untouched, a fan-out that reaches one tagged host is blocked
whole with the hook's reason, and the hook reads every host of the placement with its tags."""

from __future__ import annotations

import json
import sys

import pytest
from agent_helpers import Recorder
from fake_anthropic import text_reply, tool_reply
from remote_side import make_home, remove_home

from cmdop_tui.agent.events import HookRan
from cmdop_tui.config.settings import RunOptions, Settings
from cmdop_tui.hooks.shape import from_settings
from cmdop_tui.machines.spec import MachineSpec
from cmdop_tui.session.session import Session


@pytest.fixture
def hosts(ssh_hosts):
    homes = {name: make_home() for name in ("alpha", "bravo")}
    yield ssh_hosts(2, host_env=lambda alias: {"HOME": str(homes[alias])})
    for home in homes.values():
        remove_home(home)


async def test_a_tag_scoped_hook_blocks_a_fan_out_that_reaches_a_tagged_host(fake_api, anthropic_env, hosts, tmp_path):
    seen = tmp_path / "seen.jsonl"
    script = tmp_path / "frozen.py"
    script.write_text(
        "import sys\n"
        f"open({str(seen)!r}, 'a').write(sys.stdin.read() + '\\n')\n"
        "sys.stderr.write('prod is frozen until Monday')\nsys.exit(2)\n"
    )
    hooks = from_settings({"PreToolUse": [{"machines": "tag:prod", "command": f"{sys.executable} {script}"}]}, "test")
    settings = Settings(
        ssh_config=hosts.config,
        machines=(MachineSpec("db1", "alpha", tags=("prod",)), MachineSpec("web1", "bravo", tags=("staging",))),
        hooks=hooks,
        run=RunOptions(auto_approve=True),
    )
    fake_api.enqueue(
        tool_reply("execute_command", {"command": "echo on-web1", "machine": "web1"}),
        tool_reply("run_on_machines", {"command": "echo everywhere", "machines": ["tag:staging", "db1"]}),
        text_reply("done"),
    )
    events = Recorder()
    async with Session(settings, platform="headless", cwd=tmp_path, record=False) as session:
        assert (await session.run("check the hosts", events)).status == "final"
    first = fake_api.requests[1].body["messages"][-1]["content"][0]
    assert "on-web1" in first["content"] and not first.get("is_error")  # not a prod machine: no hook
    second = fake_api.requests[2].body["messages"][-1]["content"][0]
    assert second["is_error"] and "prod is frozen until Monday" in second["content"]
    assert "everywhere" not in second["content"]
    [event] = [json.loads(line) for line in seen.read_text().splitlines()]  # it ran once: for the fan-out
    assert event["tool_name"] == "run_on_machines" and event["fans_out"] is True
    assert {(p["machine"], p["host"], tuple(p["tags"])) for p in event["placement"]} == {
        ("web1", "bravo", ("staging",)),
        ("db1", "alpha", ("prod",)),
    }
    [ran] = events.of(HookRan)
    assert ran.decision == "blocked" and ran.machine == "2 machines"
