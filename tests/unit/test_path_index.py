"""The working tree as `@` completes it: git's list (or a walk honouring .gitignore), fuzzy ranked."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from cmdop_tui.machines.path_index import PathIndex, list_tree
from cmdop_tui.support.fuzzy import FuzzyPaths

TREE = {
    "README.md": "readme",
    "src/app.py": "",
    "src/widgets/prompt.py": "",
    "build/out.bin": "",
    "logs/today.log": "",
    "docs/keep.log": "",
    "node_modules/pkg/index.js": "",
    "notes/.env": "SECRET=1",
    "deep/a/b/c/app.py": "",
}
GITIGNORE = "build/\n*.log\n!docs/keep.log\n/deep/a/b\n"


def make_tree(root: Path) -> None:
    for relative, text in TREE.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)
    (root / ".gitignore").write_text(GITIGNORE)


EXPECTED = {".gitignore", "README.md", "src/app.py", "src/widgets/prompt.py", "docs/keep.log"}


@pytest.mark.parametrize("git", [True, False], ids=["git", "walk"])
def test_the_list_holds_what_git_shows_and_no_secret(tmp_path, git):
    make_tree(tmp_path)
    if git:
        subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
        subprocess.run(["git", "add", "src/app.py"], cwd=tmp_path, check=True)  # tracked and untracked alike
    listed = set(list_tree(tmp_path))
    heavy = {"node_modules/pkg/index.js"} if git else set()  # git lists it (not ignored); the walk skips it
    assert listed == EXPECTED | heavy
    assert "notes/.env" not in listed


def test_the_walk_sees_nested_gitignore_files(tmp_path):
    make_tree(tmp_path)
    (tmp_path / "src" / ".gitignore").write_text("widgets/\n")
    assert "src/widgets/prompt.py" not in list_tree(tmp_path)
    assert "src/app.py" in list_tree(tmp_path)


def test_the_index_lists_in_the_background_and_searches(tmp_path):
    make_tree(tmp_path)
    index = PathIndex(tmp_path)
    assert index.search("app") == []  # nothing before the first listing
    index.start()
    assert index.ready.wait(10)
    assert index.search("app") == ["src/app.py"]  # deep/a/b is ignored
    assert len(index) == len(EXPECTED)


PATHS = [
    "src/cmdop_tui/tui/widgets/prompt_input.py",
    "src/cmdop_tui/tui/app.py",
    "tests/functional/test_tui.py",
    "docs/ARCHITECTURE.md",
    "README.md",
    "src/cmdop_tui/support/apply_patch.py",
    "a/p/p/x.txt",
]


def test_the_file_name_and_runs_rank_first():
    paths = FuzzyPaths(PATHS)
    assert paths.search("app")[0] == "src/cmdop_tui/tui/app.py"  # the whole name beats a spread one
    assert paths.search("prompt")[0] == "src/cmdop_tui/tui/widgets/prompt_input.py"
    assert paths.search("pin")[0] == "src/cmdop_tui/tui/widgets/prompt_input.py"
    assert paths.search("arch") == ["docs/ARCHITECTURE.md"]  # lowercase matches any case
    assert paths.search("ARCH") == ["docs/ARCHITECTURE.md"]
    assert paths.search("Arch") == []  # a capital letter: case matters
    assert paths.search("zzz") == []
    assert "a/p/p/x.txt" in paths.search("app")  # spread over folders still matches, lower
    assert paths.search("")[0] == "README.md"  # no query: the shallowest first


def test_many_paths_stay_exact_when_narrowed():
    many = [f"pkg{i}/module{i}.py" for i in range(20_000)] + ["special/needle_file.txt"]
    paths = FuzzyPaths(many)
    assert paths.search("needle") == ["special/needle_file.txt"]
    assert paths.search("ndlfl") == ["special/needle_file.txt"]
    assert paths.search("module19999")[0] == "pkg19999/module19999.py"
    assert len(paths.search("py", limit=50)) == 50


def test_a_refresh_sees_a_new_file(tmp_path):
    make_tree(tmp_path)
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    index = PathIndex(tmp_path, refresh_after_s=0.0)
    index.start()
    index.wait()
    assert index.search("fresh") == []
    (tmp_path / "src" / "fresh_module.py").write_text("")
    index.refresh()
    index.wait()
    assert index.search("fresh") == ["src/fresh_module.py"]
