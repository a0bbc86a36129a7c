"""The user's skills: folders holding a `SKILL.md`, in the config dir's `skills/` and in the
working directory's `.cmdop/skills/` (a project's skill wins over the user's of the same name).

A `SKILL.md` starts with YAML front matter naming the skill and saying when it applies, then the
instructions:

    ---
    name: nginx-reload
    description: Check and reload nginx safely after a config change.
    ---
    1. Run `nginx -t` ...

A file that cannot be read or has no name or description is skipped with a note, never fatal.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from cmdop_tui.config.settings import config_path
from cmdop_tui.tools.skill import Skill, SkillSource

SKILL_FILE = "SKILL.md"
PROJECT_DIR = Path(".cmdop") / "skills"
MAX_DESCRIPTION = 300  # characters of a description in the system prompt
MAX_BODY = 40_000

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class FoundSkills:
    skills: tuple[Skill, ...] = ()
    notes: tuple[str, ...] = field(default=())  # what was skipped, and why


def user_skills_dir() -> Path:
    return config_path().parent / "skills"


def find_skills(cwd: Path) -> FoundSkills:
    """The user's and the project's skills, sorted by name."""
    found: dict[str, Skill] = {}
    notes: list[str] = []
    places: list[tuple[Path, SkillSource]] = [(user_skills_dir(), "user"), (cwd / PROJECT_DIR, "project")]
    for folder, source in places:
        for skill_file in sorted(folder.glob(f"*/{SKILL_FILE}")) if folder.is_dir() else []:
            skill = _read_skill(skill_file, source, notes)
            if skill is not None:
                found[skill.name] = skill
    return FoundSkills(tuple(sorted(found.values(), key=lambda s: s.name)), tuple(notes))


def _read_skill(path: Path, source: SkillSource, notes: list[str]) -> Skill | None:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        notes.append(f"{path}: cannot be read ({exc.strerror}); skipped")
        return None
    front, body = split_front_matter(text)
    import yaml  # here, not at the top: a headless start without skills need not load it

    try:
        meta = yaml.safe_load(front) if front is not None else None
    except yaml.YAMLError as exc:
        notes.append(f"{path}: its front matter is not valid YAML ({str(exc).splitlines()[0]}); skipped")
        return None
    if not isinstance(meta, dict) or not str(meta.get("name") or "").strip() or not meta.get("description"):
        notes.append(f"{path}: needs front matter with a name and a description; skipped")
        return None
    description = " ".join(str(meta["description"]).split())
    if len(description) > MAX_DESCRIPTION:
        description = description[: MAX_DESCRIPTION - 1] + "…"
    return Skill(
        name=" ".join(str(meta["name"]).split()),
        description=description,
        body=body.strip()[:MAX_BODY],
        folder=str(path.parent),
        source=source,
    )


def split_front_matter(text: str) -> tuple[str | None, str]:
    """(front matter, body); None when the file does not start with a `---` line."""
    lines = text.lstrip("\ufeff").splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        return None, text
    for index, line in enumerate(lines[1:], start=1):
        if line.strip() in ("---", "..."):
            return "".join(lines[1:index]), "".join(lines[index + 1 :])
    return None, text
