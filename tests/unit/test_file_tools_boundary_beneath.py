"""machines/beneath.py on its own: openat2 and the walk that stands in for it agree, spelling by
spelling, on what a path names and on what they refuse."""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from cmdop_tui.machines.beneath import open_path, real_path, reopen


@pytest.fixture
def root(tmp_path: Path, opener: str) -> Iterator[tuple[Path, int]]:
    """A folder (and a descriptor of it) with links inside it and out of it."""
    (tmp_path / "root" / "dir" / "inner").mkdir(parents=True)
    (tmp_path / "root" / "dir" / "file").write_text("inside\n")
    (tmp_path / "outside.txt").write_text("outside\n")
    links = {
        "rel": "dir/file",
        "up-and-back": "dir/../dir/file",
        "absolute": str(tmp_path / "root" / "dir" / "file"),
        "escape": "../outside.txt",
        "loop-a": "loop-b",
        "loop-b": "loop-a",
        "dir-link": "dir",
        "dangling": "nowhere",
        "magic": "/proc/self/cwd",
    }
    for name, target in links.items():
        (tmp_path / "root" / name).symlink_to(target)
    fd = os.open(tmp_path / "root", os.O_RDONLY | os.O_DIRECTORY)
    try:
        yield tmp_path / "root", fd
    finally:
        os.close(fd)


def where(fd: int) -> Path:
    try:
        return real_path(fd)
    finally:
        os.close(fd)


@pytest.mark.parametrize(
    "path", ["rel", "up-and-back", "dir/file", "dir/inner/../file", "./dir//file", "dir-link/file"]
)
def test_paths_beneath_the_root_are_opened(root: tuple[Path, int], path: str) -> None:
    folder, fd = root
    assert where(open_path(path, dir_fd=fd, beneath=True)) == folder / "dir" / "file"


@pytest.mark.parametrize(
    ("path", "code"),
    [
        ("escape", errno.EXDEV),
        ("..", errno.EXDEV),
        ("dir/../../outside.txt", errno.EXDEV),
        ("absolute", errno.EXDEV),  # an absolute link leaves the root even when it points back in
        ("/etc/passwd", errno.EXDEV),
        ("magic/etc", errno.EXDEV),
        ("loop-a", errno.ELOOP),
        ("dangling", errno.ENOENT),
        ("dir/file/x", errno.ENOTDIR),
    ],
)
def test_what_would_leave_the_root_is_refused(root: tuple[Path, int], path: str, code: int) -> None:
    _, fd = root
    with pytest.raises(OSError) as refused:
        os.close(open_path(path, dir_fd=fd, beneath=True))
    assert refused.value.errno == code


def test_from_slash_links_are_followed_but_never_magic_ones(root: tuple[Path, int], tmp_path: Path) -> None:
    folder, _ = root
    assert where(open_path(folder / "escape")) == tmp_path / "outside.txt"
    assert where(open_path(folder / "absolute")) == folder / "dir" / "file"
    assert where(open_path("/proc/self/status")) == Path(f"/proc/{os.getpid()}/status")  # a plain link
    for magic in (folder / "magic" / "etc", Path(f"/proc/self/root{tmp_path}"), Path("/proc/self/exe")):
        with pytest.raises(OSError) as refused:
            os.close(open_path(magic))
        assert refused.value.errno == errno.ELOOP, magic


def test_a_final_link_can_be_opened_itself_and_a_folder_asked_for(root: tuple[Path, int]) -> None:
    folder, fd = root
    link = open_path("rel", dir_fd=fd, follow=False)
    try:
        assert os.path.islink(f"/proc/self/fd/{link}") and os.readlink("", dir_fd=link) == "dir/file"
    finally:
        os.close(link)
    with pytest.raises(NotADirectoryError):
        open_path("rel", dir_fd=fd, directory=True)
    assert where(open_path("dir-link/", dir_fd=fd, beneath=True, follow=False)) == folder / "dir"


def test_what_was_opened_is_read_whatever_the_name_says_later(root: tuple[Path, int]) -> None:
    folder, fd = root
    opened = open_path("rel", dir_fd=fd)
    try:
        (folder / "rel").unlink()
        (folder / "rel").symlink_to("../outside.txt")
        with os.fdopen(reopen(opened, os.O_RDONLY), "rb") as stream:
            assert stream.read() == b"inside\n"
        (folder / "dir" / "file").unlink()
        assert real_path(opened) == folder / "dir" / "file"  # deleted: the path it had, without the note
    finally:
        os.close(opened)
