"""read_file, list_dir, write_file, grep and glob against real temporary files."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import Any

import pytest

from cmdop_tui.machines.local import resolve_path
from cmdop_tui.tools.base import Tool, ToolContext, ToolResult
from cmdop_tui.tools.files import GLOB, GREP, LIST_DIR, READ_FILE, WRITE_FILE

UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
HOSTILE = "\x1b]52;c;aGVsbG8=\x07\x1b[31mred\x1b[0m\x07"


async def call(tool: Tool, session_dir: Path, **args: Any) -> ToolResult:
    """Run `tool` with `args` in a session whose working directory is `session_dir`."""
    return await tool.run(args, ToolContext(call_id="t", cwd=session_dir))


def write_lines(path: Path, count: int, width: int = 0) -> None:
    path.write_text("".join(f"line {n}{'x' * width}\n" for n in range(1, count + 1)))


# --- resolve_path ------------------------------------------------------------------------------


def test_resolve_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert resolve_path("a/b", tmp_path) == tmp_path / "a/b"
    assert resolve_path("/etc", tmp_path) == Path("/etc")
    assert resolve_path("~/notes", tmp_path) == tmp_path / "home/notes"


# --- read_file ---------------------------------------------------------------------------------


async def test_read_file_numbers_lines_like_cat_n(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("first\nsecond\n")
    result = await call(READ_FILE, tmp_path, path="a.txt")
    assert not result.is_error
    assert result.content == "     1\tfirst\n     2\tsecond"


async def test_read_file_range(tmp_path: Path) -> None:
    write_lines(tmp_path / "a.txt", 10)
    result = await call(READ_FILE, tmp_path, path="a.txt", start=3, end=4)
    assert result.content == "     3\tline 3\n     4\tline 4"
    result = await call(READ_FILE, tmp_path, path="a.txt", start=9, end=50)
    assert result.content == "     9\tline 9\n    10\tline 10"


async def test_read_file_expands_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "n.txt").write_text("home\n")
    assert (await call(READ_FILE, Path("/"), path="~/n.txt")).content == "     1\thome"


async def test_read_file_caps_lines_and_says_how_to_continue(tmp_path: Path) -> None:
    write_lines(tmp_path / "big.txt", 2_500)
    result = await call(READ_FILE, tmp_path, path="big.txt")
    lines = result.content.split("\n")
    assert len(lines) == 2_001
    assert lines[-2] == "  2000\tline 2000"
    assert lines[-1] == ("[showing lines 1-2,000 of 2,500; call read_file with start=2001 to read more]")


async def test_read_file_caps_characters(tmp_path: Path) -> None:
    write_lines(tmp_path / "wide.txt", 500, width=990)
    result = await call(READ_FILE, tmp_path, path="wide.txt", start=11)
    assert len(result.content) <= 100_200
    last_shown = int(result.content.split("\n")[-2].split("\t")[0])
    note = f"showing lines 11-{last_shown} of 500; call read_file with start={last_shown + 1}"
    assert note in result.content


async def test_read_file_single_huge_line_is_cut(tmp_path: Path) -> None:
    (tmp_path / "min.js").write_text("x" * 300_000 + "\nsecond\n")
    result = await call(READ_FILE, tmp_path, path="min.js")
    first = result.content.split("\n")[0]
    assert first.endswith("x [line cut]") and len(first) < 100_100
    assert "call read_file with start=2" in result.content


async def test_read_file_errors(tmp_path: Path) -> None:
    (tmp_path / "bin").write_bytes(b"\x7fELF\x00\x01" + b"\x00" * 5_000)
    (tmp_path / "two.txt").write_text("a\nb\n")
    (tmp_path / "d").mkdir()
    os.mkfifo(tmp_path / "fifo")
    cases = {
        "missing.txt": "no such file or directory",
        "bin": "binary file (5,006 bytes)",
        "d": "is a directory",
        "fifo": "not a regular file",
    }
    for name, message in cases.items():
        result = await call(READ_FILE, tmp_path, path=name)
        assert result.is_error and message in result.content, (name, result.content)
    past_end = await call(READ_FILE, tmp_path, path="two.txt", start=5)
    assert past_end.is_error and "past the end of the file (2 lines)" in past_end.content
    backwards = await call(READ_FILE, tmp_path, path="two.txt", start=2, end=1)
    assert backwards.is_error


async def test_read_file_empty(tmp_path: Path) -> None:
    (tmp_path / "empty").write_text("")
    result = await call(READ_FILE, tmp_path, path="empty")
    assert not result.is_error and result.content == "(empty file)"


async def test_read_file_is_inert_and_handles_line_endings(tmp_path: Path) -> None:
    (tmp_path / "evil.txt").write_bytes(f"{HOSTILE}\r\nbar\rbaz\n".encode() + b"\xff")
    result = await call(READ_FILE, tmp_path, path="evil.txt")
    assert result.content == "     1\tred^G\n     2\tbar^Mbaz\n     3\t\ufffd"


# --- list_dir ----------------------------------------------------------------------------------


async def test_list_dir(tmp_path: Path) -> None:
    (tmp_path / "b.txt").write_text("12345")
    (tmp_path / "a_dir").mkdir()
    (tmp_path / "link").symlink_to("b.txt")
    (tmp_path / "dangling").symlink_to("nowhere")
    (tmp_path / f"evil{HOSTILE}\nname").write_text("")
    result = await call(LIST_DIR, tmp_path, path=".")
    assert not result.is_error
    assert result.content.split("\n") == [
        f"{tmp_path}: 5 entries",
        "a_dir/",
        "b.txt  (5 bytes)",
        "dangling -> nowhere  (broken symlink)",
        "evilred^G^Jname  (0 bytes)",
        "link -> b.txt  (symlink)",
    ]


async def test_list_dir_defaults_to_cwd_and_caps_entries(tmp_path: Path) -> None:
    for n in range(1_005):
        (tmp_path / f"f{n:04}").touch()
    lines = (await call(LIST_DIR, tmp_path)).content.split("\n")
    assert lines[0] == f"{tmp_path}: 1,005 entries"
    assert lines[1] == "f0000  (0 bytes)" and lines[1_000] == "f0999  (0 bytes)"
    assert lines[-1].startswith("[... 5 more entries not shown")


async def test_list_dir_errors_and_empty(tmp_path: Path) -> None:
    (tmp_path / "file").touch()
    (tmp_path / "empty").mkdir()
    assert (await call(LIST_DIR, tmp_path, path="missing")).is_error
    assert "not a directory" in (await call(LIST_DIR, tmp_path, path="file")).content
    assert (await call(LIST_DIR, tmp_path, path="empty")).content.endswith("(empty directory)")


# --- write_file --------------------------------------------------------------------------------


async def test_write_file_creates_parents_and_reports_bytes(tmp_path: Path) -> None:
    result = await call(WRITE_FILE, tmp_path, path="new/deep/f.txt", content="héllo\n")
    assert not result.is_error
    assert result.content == f"wrote 7 bytes to {tmp_path / 'new/deep/f.txt'} (created)"
    assert (tmp_path / "new/deep/f.txt").read_text() == "héllo\n"
    assert os.listdir(tmp_path / "new/deep") == ["f.txt"]  # no temp file left behind


async def test_write_file_new_file_mode_follows_umask(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        await call(WRITE_FILE, tmp_path, path="f", content="x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "f").stat().st_mode) == 0o640


async def test_write_file_replaces_atomically_and_keeps_mode(tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    script.write_text("old")
    script.chmod(0o754)
    inode = script.stat().st_ino
    result = await call(WRITE_FILE, tmp_path, path="run.sh", content="new")
    assert result.content.endswith("(replaced)")
    assert script.read_text() == "new"
    assert stat.S_IMODE(script.stat().st_mode) == 0o754
    assert script.stat().st_ino != inode  # a new file was renamed into place


async def test_write_file_writes_through_a_symlink(tmp_path: Path) -> None:
    (tmp_path / "real").write_text("old")
    (tmp_path / "alias").symlink_to("real")
    await call(WRITE_FILE, tmp_path, path="alias", content="new")
    assert (tmp_path / "alias").is_symlink()
    assert (tmp_path / "real").read_text() == "new"


async def test_write_file_to_a_directory_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    result = await call(WRITE_FILE, tmp_path, path="d", content="x")
    assert result.is_error and "is a directory" in result.content


# --- grep --------------------------------------------------------------------------------------


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "src/pkg").mkdir(parents=True)
    (tmp_path / "src/pkg/mod.py").write_text("import os\nTODO: fix\n")
    (tmp_path / "src/main.py").write_text("# TODO later\nprint()\n")
    (tmp_path / "src/notes.md").write_text("TODO in markdown\n")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git/config").write_text("TODO in git\n")
    (tmp_path / "blob.bin").write_bytes(b"TODO\x00binary")
    with open(tmp_path / "huge.log", "wb") as huge:
        huge.truncate(11 * 1024 * 1024)  # sparse: over the 10 MB limit at no cost
    return tmp_path


async def test_grep_recursive(tree: Path) -> None:
    result = await call(GREP, tree, pattern="TODO", path=".")
    assert result.content.split("\n") == [
        "src/main.py:1:# TODO later",
        "src/notes.md:1:TODO in markdown",
        "src/pkg/mod.py:2:TODO: fix",
        "[skipped 1 binary file, 1 file over 10 MB]",
    ]


async def test_grep_glob_and_single_file(tree: Path) -> None:
    result = await call(GREP, tree, pattern=r"TODO\b", path="src", glob="*.py")
    assert result.content.split("\n") == ["main.py:1:# TODO later", "pkg/mod.py:2:TODO: fix"]
    result = await call(GREP, tree, pattern="^import", path="src/pkg/mod.py")
    assert result.content == "mod.py:1:import os"


async def test_grep_no_match_and_invalid_regex(tree: Path) -> None:
    result = await call(GREP, tree, pattern="NOPE", path="src")
    assert not result.is_error and result.content.startswith("no matches")
    result = await call(GREP, tree, pattern="(unclosed", path="src")
    assert result.is_error and "invalid regex" in result.content
    assert (await call(GREP, tree, pattern="x", path="missing")).is_error


async def test_grep_caps_matches_and_trims_lines(tmp_path: Path) -> None:
    (tmp_path / "many.txt").write_text("hit\n" * 600)
    (tmp_path / "wide.txt").write_text("hit" + "y" * 1_000 + "\n")
    result = await call(GREP, tmp_path, pattern="hit", path=".")
    lines = result.content.split("\n")
    assert len(lines) == 501
    assert lines[-1].startswith("[stopped after 500 matches")
    result = await call(GREP, tmp_path, pattern="hit", path="wide.txt")
    assert result.content == "wide.txt:1:hit" + "y" * 497 + "…"


async def test_grep_output_is_inert(tmp_path: Path) -> None:
    (tmp_path / "evil.txt").write_text(f"match {HOSTILE}\n")
    result = await call(GREP, tmp_path, pattern="match", path=".")
    assert result.content == "evil.txt:1:match red^G"


# --- glob --------------------------------------------------------------------------------------


async def test_glob_recursive_sorted_relative(tree: Path) -> None:
    result = await call(GLOB, tree, pattern="**/*.py")
    assert result.content == "src/main.py\nsrc/pkg/mod.py"
    result = await call(GLOB, tree, pattern="*", cwd="src")
    assert result.content == "main.py\nnotes.md\npkg/"


async def test_glob_caps_results(tmp_path: Path) -> None:
    for n in range(1_010):
        (tmp_path / f"f{n:04}.txt").touch()
    lines = (await call(GLOB, tmp_path, pattern="*.txt")).content.split("\n")
    assert len(lines) == 1_001 and lines[0] == "f0000.txt"
    assert lines[-1] == "[... 10 more matches not shown; narrow the pattern]"


@pytest.mark.fault
async def test_glob_is_exact_over_a_huge_folder(tmp_path: Path) -> None:
    """120,000 entries found before the folder that sorts first: that folder's match is still
    listed first, and the count of the rest is exact."""
    for n in range(120_000):
        os.close(os.open(tmp_path / f"b{n:06}.txt", os.O_CREAT | os.O_WRONLY, 0o600))
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.txt").touch()
    lines = (await call(GLOB, tmp_path, pattern="**/*.txt")).content.split("\n")
    assert lines[0] == "a/x.txt" and lines[1] == "b000000.txt" and len(lines) == 1_001
    assert lines[-1] == f"[... {120_001 - 1_000:,} more matches not shown; narrow the pattern]"


async def test_glob_counts_a_path_reached_twice_once(tmp_path: Path) -> None:
    (tmp_path / "a" / "a").mkdir(parents=True)
    (tmp_path / "a" / "a" / "f").touch()
    result = (await call(GLOB, tmp_path, pattern="**/a/**")).content.split("\n")
    assert result == ["a/", "a/a/"]  # `a/a/` is reached through either `**`: listed once


async def test_glob_errors_and_no_match(tmp_path: Path) -> None:
    assert (await call(GLOB, tmp_path, pattern="/etc/*")).is_error
    assert (await call(GLOB, tmp_path, pattern="*", cwd="missing")).is_error
    assert (await call(GLOB, tmp_path, pattern="")).is_error
    assert (await call(GLOB, tmp_path, pattern="*.nope")).content.startswith("no paths match")


# --- all tools ---------------------------------------------------------------------------------


def test_metadata() -> None:
    for tool in (READ_FILE, LIST_DIR, GREP, GLOB):
        assert tool.tags == {"files", "local"} and not tool.mutating
    assert READ_FILE.core and LIST_DIR.core
    assert WRITE_FILE.tags == {"files", "local"} and WRITE_FILE.mutating


async def test_outputs_never_contain_control_characters(tmp_path: Path) -> None:
    (tmp_path / f"{HOSTILE}.txt").write_text(f"{HOSTILE}\n")
    results = [
        await call(READ_FILE, tmp_path, path=f"{HOSTILE}.txt"),
        await call(LIST_DIR, tmp_path),
        await call(GREP, tmp_path, pattern="red"),
        await call(GLOB, tmp_path, pattern="*"),
        await call(WRITE_FILE, tmp_path, path=f"w{HOSTILE}", content="x"),
    ]
    for result in results:
        assert not UNSAFE.search(result.content), result.content
