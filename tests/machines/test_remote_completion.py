"""`@alpha:path` over a real sshd: the machine's workspace files listed for completion, and the
file attached to a prompt from there, with what the sandbox there hides kept hidden."""

from __future__ import annotations

from pathlib import Path

import pytest
from remote_side import make_home, remove_home, workspace

from cmdop_tui.machines.fleet import Fleet
from cmdop_tui.machines.inventory import Inventory
from cmdop_tui.machines.path_index import RemoteIndex
from cmdop_tui.machines.remote import RemoteMachine
from cmdop_tui.machines.ssh import SshOptions
from cmdop_tui.session.references import attach_files


@pytest.fixture
def home():
    home = make_home()
    there = workspace(home)
    for relative, text in {
        "notes/todo.txt": "remote todo: rotate logs\n",
        "app/main.py": "",
        ".env": "TOKEN=s3cr3t\n",
    }.items():
        (there / relative).parent.mkdir(parents=True, exist_ok=True)
        (there / relative).write_text(text)
    (there / "node_modules" / "pkg").mkdir(parents=True)
    (there / "node_modules" / "pkg" / "index.js").write_text("")
    yield home
    remove_home(home)


@pytest.fixture
async def fleet(ssh_hosts, home):
    lab = ssh_hosts(1, env={"HOME": str(home)})
    fleet = Fleet(Inventory.load([], lab.config), SshOptions(config_file=lab.config))
    yield fleet
    await fleet.close()


async def test_a_machine_s_workspace_files_are_listed_for_completion(fleet):
    machine = fleet.remote("alpha")
    assert isinstance(machine, RemoteMachine)
    index = RemoteIndex(machine)
    await index.fetch()
    assert index.error is None and index.answers("todo")
    assert index.search("todo") == ["notes/todo.txt"]
    assert set(index.search("", limit=100)) == {"notes/todo.txt", "app/main.py"}  # no .env, no node_modules


async def test_a_file_there_is_attached_and_a_secret_there_is_not(fleet, tmp_path: Path):
    prompt = "compare @alpha:notes/todo.txt with @alpha:.env"
    sent = await attach_files(prompt, fleet, None, tmp_path)
    assert sent.startswith(prompt + "\n\n")
    assert '<attached path="alpha:notes/todo.txt">' in sent and "remote todo: rotate logs" in sent
    assert "s3cr3t" not in sent and "@alpha:.env: not attached (" in sent


async def test_the_prompt_completes_a_machine_s_files_after_its_name(fake_api, ssh_hosts, home):
    from tui_helpers import make_app, wait_until

    from cmdop_tui.config.settings import Settings
    from cmdop_tui.tui.widgets.prompt_input import PromptInput

    lab = ssh_hosts(1, env={"HOME": str(home)})
    app = make_app(fake_api, settings=Settings(ssh_config=Path(lab.config)))  # the user's hosts: alpha
    async with app.run_test(size=(80, 24)) as pilot:
        await app.session_ready.wait()
        prompt = app.query_one(PromptInput)
        menu = prompt.completion.menu

        def labels() -> list[str]:
            return [choice.label for choice in menu.choices]

        await pilot.press("@", *"alpha:")
        await wait_until(pilot, lambda: set(labels()) == {"notes/todo.txt", "app/main.py"}, what="alpha files")
        await pilot.press("t", "o", "d")
        await wait_until(pilot, lambda: labels() == ["notes/todo.txt"], what="the file filtered")
        await pilot.press("enter")
        assert prompt.text == "@alpha:notes/todo.txt " and not menu.display
