"""Where the floor looks on this machine: homes from the password database (not `/home/NAME`),
the home and the credential stores this process's environment names, and block devices by
what a path resolves to (a symlink to a disk, a device node under another name).

These tests read the real password database and make files under tmp_path; nothing runs.
"""

from __future__ import annotations

import os
import pwd
import stat
from pathlib import Path

import pytest

from cmdop_tui.permissions import check_command, floor_violation


def _home_outside_home() -> pwd.struct_passwd:
    """A user of this machine whose home is not /home/NAME (postgres, man, sshd, www-data...)."""
    for entry in pwd.getpwall():
        home = os.path.normpath(entry.pw_dir)
        if home.count("/") >= 3 and not home.startswith(("/home/", "/usr/", "/nonexistent")):
            return entry  # /var/lib/postgresql, /var/cache/man, /srv/www/alice
    pytest.skip("no user of this machine has a home outside /home")


def test_a_home_the_password_database_names_is_a_home() -> None:
    home = os.path.normpath(_home_outside_home().pw_dir)
    for command in (f"rm -rf {home}", f"rm -rf {home}/", f"cd {home} && rm -rf *", f"rm -rf {home}/*"):
        reason = check_command(command)
        assert reason is not None and "home directory" in reason, command
    assert check_command(f"cat {home}/.aws/credentials") is not None
    assert check_command(f"echo x >> {home}/.bashrc") is not None
    assert check_command(f"rm -rf {home}/cache/tmp") is None  # inside it, not all of it


def test_tilde_user_is_the_database_home_and_an_unknown_user_is_still_a_home() -> None:
    entry = _home_outside_home()
    reason = check_command(f"rm -rf ~{entry.pw_name}")
    assert reason is not None and os.path.normpath(entry.pw_dir) in reason
    assert check_command(f"cat ~{entry.pw_name}/.ssh/id_rsa") is not None
    assert check_command("rm -rf ~no-such-user-here") is not None  # a home elsewhere: still protected
    assert check_command("rm -rf /root") is not None


def test_the_environments_home_is_a_home(isolated_home: Path) -> None:
    home = str(isolated_home)
    assert "home directory" in (check_command(f"rm -rf {home}") or "")
    assert check_command(f"cat {home}/.config/gh/hosts.yml") is not None
    assert check_command(f"rm -rf {home}/projects/app/build") is None


def test_stores_the_environment_relocates_are_secrets(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("KUBECONFIG", "/srv/k8s/admin.conf")
    monkeypatch.setenv("RCLONE_CONFIG", str(tmp_path / "rc.conf"))
    monkeypatch.setenv("XDG_CONFIG_HOME", "/data/cfg")
    for path in ("/srv/k8s/admin.conf", str(tmp_path / "rc.conf"), "/data/cfg/gh/hosts.yml"):
        assert check_command(f"cat {path}") is not None, path
        assert floor_violation("read_file", {"path": path}) is not None, path
    assert check_command("cat /srv/k8s/README.md") is None


@pytest.mark.parametrize("target", ["/dev/sda", "/dev/nvme0n1p2", "/dev/mapper/vg-root"])
def test_a_symlink_to_a_block_device_is_the_block_device(tmp_path: Path, target: str) -> None:
    link = tmp_path / "disk.img"
    link.symlink_to(target)
    chained = tmp_path / "again.img"
    chained.symlink_to(link)
    for path in (link, chained):
        assert check_command(f"dd if=/dev/zero of={path}") is not None
        assert check_command(f"echo x > {path}") is not None
        assert floor_violation("write_file", {"path": str(path), "content": "x"}) is not None
    plain = tmp_path / "plain.img"
    plain.write_bytes(b"")
    assert check_command(f"dd if=/dev/zero of={plain} bs=1M count=1") is None


def test_a_device_node_under_another_name_is_a_block_device(tmp_path: Path) -> None:
    node = tmp_path / "innocent"
    try:
        os.mknod(node, stat.S_IFBLK | 0o600, os.makedev(7, 250))
    except (PermissionError, OSError):
        pytest.skip("this process may not make a device node")
    assert check_command(f"dd if=/dev/zero of={node}") is not None
    assert floor_violation("write_file", {"path": str(node), "content": "x"}) is not None


def test_paths_through_proc_root_are_the_paths_themselves() -> None:
    for command in (
        "cat /proc/self/root/etc/shadow",
        "cat /proc/1/root/home/u/.ssh/id_rsa",
        "dd if=/dev/zero of=/proc/self/root/dev/vda",
        "rm -rf /proc/self/root/",
        "cat /proc/self/cwd/.env",
    ):
        assert check_command(command) is not None, command
