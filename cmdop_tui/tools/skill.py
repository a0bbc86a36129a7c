"""skill: the body of one of the user's skills, when the model decides it needs it.

Skills are folders holding a `SKILL.md` (session/skills.py finds them): their names and
descriptions go in the static prefix, and the body only when the model asks for it here:
progressive disclosure, so a hundred skills cost a few lines each until one is used.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from .base import Tool, ToolContext, ToolResult
from .schema import object_schema, prop

SkillSource = Literal["user", "project"]


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    body: str
    folder: str  # where its SKILL.md and any files it mentions are
    source: SkillSource = "user"


def skills_section(skills: Sequence[Skill]) -> str:
    """The static prefix's list of skills: a name and a line each ('' when there are none)."""
    if not skills:
        return ""
    lines = [f"- {skill.name}: {skill.description}" for skill in skills]
    return (
        "## Skills\nThe user has written these skills: instructions for particular tasks. When a task "
        "matches one, call the `skill` tool with its name first and follow what it says.\n" + "\n".join(lines)
    )


def make_skill_tool(skills: Sequence[Skill]) -> Tool:
    """The `skill` tool over these skills."""
    by_name = {skill.name: skill for skill in skills}

    async def run(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        skill = by_name.get(str(args["name"]))
        if skill is None:
            known = ", ".join(sorted(by_name)) or "none"
            return ToolResult.error(f"no skill named {args['name']!r} (known: {known})")
        return ToolResult(f"# Skill: {skill.name}\n(folder: {skill.folder})\n\n{skill.body}")

    return Tool(
        name="skill",
        description=(
            "Read one of the user's skills (listed in the system prompt under Skills): its full "
            "instructions, and the folder that holds any files it mentions."
        ),
        input_schema=object_schema(
            {"name": prop("string", "The skill's name, as listed.")},
            required=["name"],
        ),
        run=run,
        tags=frozenset({"context"}),
    )
