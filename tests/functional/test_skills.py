"""Skills: names and descriptions in the static prefix, the body only through the `skill` tool."""

from __future__ import annotations

from pathlib import Path

from fake_anthropic import text_reply, tool_reply
from tui_helpers import make_app, notices, submit, wait_until

from cmdop_tui import Operator, Settings
from cmdop_tui.config.settings import config_path
from cmdop_tui.session.skills import find_skills, user_skills_dir

NGINX = """---
name: nginx-reload
description: Check and reload nginx safely after a config change.
---
1. Run `nginx -t` first; stop if it fails.
2. Then `systemctl reload nginx`, never restart.
"""


def write_skill(folder: Path, name: str, text: str) -> Path:
    path = folder / name / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def system_text(body: dict) -> str:
    return "".join(block["text"] for block in body["system"])


def test_skills_come_from_the_user_and_the_project_and_bad_ones_are_skipped(tmp_path):
    write_skill(user_skills_dir(), "nginx", NGINX)
    write_skill(user_skills_dir(), "broken", "no front matter here\n")
    write_skill(user_skills_dir(), "bad-yaml", "---\nname: [unclosed\n---\nbody\n")
    project = tmp_path / ".cmdop" / "skills"
    write_skill(
        project,
        "deploy",
        "---\nname: deploy\ndescription: >\n  Deploy the site\n  with the script.\n---\nRun ./deploy.sh\n",
    )
    write_skill(project, "nginx", NGINX.replace("safely", "the project's way"))  # the project's wins
    found = find_skills(tmp_path)
    assert [(s.name, s.source) for s in found.skills] == [("deploy", "project"), ("nginx-reload", "project")]
    assert found.skills[0].description == "Deploy the site with the script."
    assert "the project's way" in found.skills[1].description
    assert len(found.notes) == 2 and all("skipped" in note for note in found.notes)


def test_the_model_sees_names_first_and_reads_a_body_when_it_asks(fake_api, anthropic_env, tmp_path):
    write_skill(user_skills_dir(), "nginx", NGINX)
    fake_api.enqueue(tool_reply("skill", {"name": "nginx-reload"}), text_reply("I will run nginx -t first."))
    with Operator(settings=Settings(), cwd=tmp_path, record=False) as operator:
        assert operator.chat("reload nginx") == "I will run nginx -t first."
    first, second = (request.body for request in fake_api.requests)
    system = system_text(first)
    assert "- nginx-reload: Check and reload nginx safely after a config change." in system
    assert "never restart" not in system  # the body is not in the prompt
    assert "skill" in [tool["name"] for tool in first["tools"]]
    result = second["messages"][-1]["content"][0]
    assert result["type"] == "tool_result" and "never restart" in result["content"]


def test_no_skills_no_skill_tool(fake_api, anthropic_env, tmp_path):
    fake_api.enqueue(text_reply("hi"))
    with Operator(settings=Settings(), cwd=tmp_path, record=False) as operator:
        operator.chat("hello")
    body = fake_api.requests[0].body
    assert "skill" not in [tool["name"] for tool in body.get("tools", [])] and "## Skills" not in system_text(body)


async def test_slash_skills_lists_them(fake_api, tmp_path):
    assert user_skills_dir().parent == config_path().parent
    write_skill(user_skills_dir(), "nginx", NGINX)
    app = make_app(fake_api)
    async with app.run_test() as pilot:
        await submit(pilot, "/skills")
        await wait_until(pilot, lambda: any("nginx-reload (user)" in text for text in notices(app)))
        assert any("Check and reload nginx safely" in text for text in notices(app))
