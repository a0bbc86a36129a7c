"""The ssh_config reader on its own (no ssh needed): OpenSSH's word splitting, Include's rules,
and a reading that never fails."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from cmdop_tui.machines.ssh_config import SshConfig, read_ssh_config
from cmdop_tui.machines.ssh_config_files import MAX_FILES_READ, SYSTEM_DIR
from cmdop_tui.machines.ssh_config_syntax import (
    SyntaxProblem,
    argv_split,
    match_pattern,
    match_pattern_list,
    parse_line,
)


@pytest.mark.parametrize(
    ("raw", "keyword", "args"),
    [
        ("Host web1", "host", ("web1",)),
        ("Host=web1", "host", ("web1",)),
        ("  host = web1 web2", "host", ("web1", "web2")),
        ("HOST\t=\tweb1", "host", ("web1",)),
        ("Host \"web1\" 'db 2' # the rest is a comment", "host", ("web1", "db 2")),
        ('"HostName" example.com', "hostname", ("example.com",)),
        ('Host web\\ 1 x\\"y', "host", ("web 1", 'x"y')),
        ("Host web1#not-a-comment", "host", ("web1#not-a-comment",)),
        ("Port 22\r", "port", ("22",)),
    ],
)
def test_a_line_splits_as_openssh_splits_it(raw, keyword, args):
    line = parse_line(raw)
    assert line is not None and (line.keyword, line.args) == (keyword, args)


@pytest.mark.parametrize("raw", ["", "   ", "# Host web1", "   # indented comment", '"Host web1'])
def test_blank_comment_and_unreadable_keyword_lines_are_nothing(raw):
    assert parse_line(raw) is None


def test_a_line_ssh_refuses_is_a_problem_not_a_crash():
    with pytest.raises(SyntaxProblem, match="no argument"):
        parse_line("Host")
    with pytest.raises(SyntaxProblem, match="quotes"):
        argv_split('"web1')


def test_patterns_know_only_star_and_question_mark():
    assert match_pattern("web1.example.com", "web?.*.com")
    assert match_pattern("[box]", "[box]") and not match_pattern("b", "[box]")
    assert not match_pattern("Web1", "web1")  # Host patterns keep case
    assert match_pattern_list("db.test.example.com", "*.example.com,!*.test.example.com") == -1
    assert match_pattern_list("DB.example.com", "db.*", fold_case=True) == 1


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_include_globs_relative_paths_home_and_several_arguments(tmp_path):
    ssh = tmp_path / ".ssh"
    config = write(ssh / "config", "Include hosts/*.conf ~/extra/one /nowhere/*\nHost top\n")
    write(ssh / "hosts" / "b.conf", "Host b1\n")
    write(ssh / "hosts" / "a.conf", "Host a1\n")
    write(tmp_path / "extra" / "one", "Host extra1\n")
    read = read_ssh_config(config, home=tmp_path)
    assert read.aliases == ["a1", "b1", "extra1", "top"]  # glob results in order, then the next argument
    assert read.problems == ()


def test_the_system_config_includes_from_etc_ssh_and_refuses_a_tilde(tmp_path):
    system = write(tmp_path / "ssh_config", "Include ~/mine\nInclude no-such-file-here\nHost sys1\n")
    read = read_ssh_config([(system, False)], home=tmp_path)
    assert read.aliases == ["sys1"]
    assert any("bad include path ~/mine" in problem for problem in read.problems)
    assert str(SYSTEM_DIR) == "/etc/ssh"


def test_a_host_of_an_include_inside_a_host_block_applies_only_where_that_block_does(tmp_path):
    ssh = tmp_path / ".ssh"
    config = write(ssh / "config", "Host prod-*\n  Include prod\nHost dev\n  Include dev\n")
    write(ssh / "prod", "Host prod-web other\n  User deploy\n")
    write(ssh / "dev", "Host dev\n  Port 2222\n")
    read = read_ssh_config(config, home=tmp_path)
    assert read.aliases == ["prod-web", "dev"]  # `other` is read but never applies: no alias
    assert {h.alias: (h.connection.user, h.connection.port) for h in read.hosts}["prod-web"][0] == "deploy"


def test_an_include_of_itself_stops_at_openssh_depth(tmp_path):
    config = write(tmp_path / ".ssh" / "config", "Include config\nHost loop\n")
    read = read_ssh_config(config, home=tmp_path)
    assert read.aliases == ["loop"]
    assert len(read.problems) == 1 and "too many nested Includes" in read.problems[0]


def test_negation_and_match_lines_make_no_alias(tmp_path):
    config = write(
        tmp_path / "config",
        "Host web1 !web1\nHost db1 !db*\nHost !bastion bastion\nMatch host m1,m2 originalhost m3\n"
        "Host ok1 *.example.com\n",
    )
    read = read_ssh_config(config, home=tmp_path)
    assert read.aliases == ["ok1"]


def test_a_match_exec_leaves_the_reading_uncertain(tmp_path):
    config = write(tmp_path / "config", 'Host box\n  HostName box.lan\nMatch exec "test -e /x"\n  User other\n')
    (host,) = read_ssh_config(config, home=tmp_path, user="me").hosts
    assert (host.connection.user, host.certain) == ("me", False)  # ssh -G says what applies


def test_what_cannot_be_read_is_left_out(tmp_path):
    assert read_ssh_config(tmp_path / "missing").hosts == ()
    config = write(tmp_path / "config", 'Host web1\nHost "broken\nPort\nHost web2\n')
    read = read_ssh_config(config, home=tmp_path)
    assert read.aliases == ["web1", "web2"] and len(read.problems) == 2
    binary = tmp_path / "binary"
    binary.write_bytes(b"Host bin1\n\xff\xfe\x00junk\n")
    assert read_ssh_config(binary, home=tmp_path).aliases == ["bin1"]


def test_forges_are_told_apart(tmp_path):
    config = write(
        tmp_path / "config",
        "Host github.com gitlab.com\nHost gh-work\n  HostName ssh.github.com\n  Port 443\n"
        "Host git.corp\n  User git\nHost box\n  HostName box.lan\n",
    )
    read = read_ssh_config(config, home=tmp_path, user="me")
    assert [h.alias for h in read.forges] == ["github.com", "gitlab.com", "gh-work", "git.corp"]
    assert [h.alias for h in read.machines] == ["box"]
    # Logged in here as `git` (a forge's own server), the machines stay machines.
    assert [h.alias for h in read_ssh_config(config, home=tmp_path, user="git").machines] == ["box"]


def test_an_included_file_others_can_write_is_one_ssh_refuses(tmp_path):
    ssh = tmp_path / ".ssh"
    config = write(ssh / "config", "Include shared\n")
    shared = write(ssh / "shared", "Host shared1\n")
    shared.chmod(0o666)
    read = read_ssh_config(config, home=tmp_path)
    assert read.aliases == ["shared1"]
    assert read.problems == (f"{shared}: ssh refuses it: bad owner or permissions (writable by others)",)


def test_a_forge_is_not_a_machine_and_naming_it_says_why(tmp_path):
    from cmdop_tui.machines.inventory import Inventory
    from cmdop_tui.machines.spec import MachineError

    config = write(tmp_path / "config", "Host gh\n  HostName github.com\nHost box\n  HostName box.lan\n")
    inventory = Inventory.load([], config)
    assert inventory.names() == ["local", "box"]
    assert [forge.alias for forge in inventory.forges] == ["gh"]
    with pytest.raises(MachineError, match="'gh' is a code forge in ssh_config"):
        inventory.resolve("gh")
    assert inventory.ssh_host(inventory.resolve("box")).connection.hostname == "box.lan"


def test_by_default_the_users_config_is_read_with_its_includes(isolated_home):
    from cmdop_tui.config.settings import Settings
    from cmdop_tui.session.inventory import inventory_of

    write(isolated_home / ".ssh" / "config", "Include config.d/*\nHost=web1\n  User ops\n")
    write(isolated_home / ".ssh" / "config.d" / "work", 'Host "db1" github.com\n')
    machines = inventory_of(Settings())
    inventory, options = machines.inventory, machines.options
    assert options.config_file is None  # ssh reads ~/.ssh/config (and /etc/ssh/ssh_config) itself
    assert inventory.names()[:3] == ["local", "db1", "web1"]
    assert [forge.alias for forge in inventory.forges] == ["github.com"]
    assert inventory.ssh_host(inventory.resolve("web1")).connection.user == "ops"
    assert machines.notices == ()  # nothing ssh would refuse


def test_what_ssh_would_refuse_in_the_users_config_is_a_notice_of_the_session(isolated_home):
    from cmdop_tui.config.settings import Settings
    from cmdop_tui.session.inventory import inventory_of

    write(isolated_home / ".ssh" / "config", "Include config.d/*\nHost web1\n")
    write(isolated_home / ".ssh" / "config.d" / "shared", "Host db1\n")
    (isolated_home / ".ssh" / "config.d" / "shared").chmod(0o666)  # ssh refuses a file others can write
    machines = inventory_of(Settings())
    assert [n for n in machines.notices if n.startswith("ssh_config: ") and "shared" in n], machines.notices


# --- what a hostile config (from a dotfiles repository, say) cannot do to the reading --------------


def _read_in_thread(config: Path, home: Path, seconds: float = 20.0) -> object:
    """read_ssh_config(config), or None if it did not end within `seconds`."""
    found: list[object] = []
    reading = threading.Thread(target=lambda: found.append(read_ssh_config(config, home=home)), daemon=True)
    reading.start()
    reading.join(seconds)
    return found[0] if found else None


def test_an_include_of_a_fifo_or_a_device_is_not_read_and_never_blocks(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    config = tmp_path / "config"
    config.write_text(f"Include {fifo} /dev/zero\nHost web1\n  HostName 10.0.0.1\n")
    read = _read_in_thread(config, tmp_path)
    if read is None:  # it blocked on the FIFO: let the reading end, then fail
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    assert isinstance(read, SshConfig), "reading an included FIFO blocked"
    assert read.aliases == ["web1"]
    assert any(f"{fifo}: not a regular file" in problem for problem in read.problems)
    assert any("/dev/zero: not a regular file" in problem for problem in read.problems)


def test_includes_that_multiply_or_match_thousands_of_files_are_read_to_a_bound(tmp_path):
    loop = tmp_path / ".ssh" / "loop"
    loop.mkdir(parents=True)
    for index in range(12):  # each includes all twelve: 12**16 readings, were there no bound
        (loop / f"{index:02}").write_text(f"Include loop/*\nHost loop{index}\n")
    many = tmp_path / ".ssh" / "many"
    many.mkdir()
    for index in range(MAX_FILES_READ + 50):
        (many / f"{index:05}").write_text(f"Host many{index}\n")
    config = tmp_path / ".ssh" / "config"
    config.write_text("Include many/*\nInclude loop/*\n")
    read = _read_in_thread(config, tmp_path, seconds=60)
    assert isinstance(read, SshConfig), "the reading did not end"
    assert len(read.files) <= MAX_FILES_READ + 1
    assert any(f"more than {MAX_FILES_READ} files" in problem for problem in read.problems)
    assert "many0" in read.aliases


def test_a_host_line_of_twenty_thousand_names_is_read_without_matching_each_against_each(tmp_path):
    # Each alias was matched against every name of its line (a pattern compiled anew each time,
    # past the cache): minutes for one line of a dotfiles repository.
    names = [f"h{index}" for index in range(20_000)]
    config = tmp_path / "config"
    config.write_text("Host " + " ".join(names) + "\n  HostName 10.0.0.1\nHost h1?\n  User other\n")
    read = _read_in_thread(config, tmp_path, seconds=60)
    assert isinstance(read, SshConfig), "the reading did not end"
    assert read.aliases == names
    users = {host.alias: host.connection.user for host in read.hosts}
    assert users["h12"] == "other" and users["h123"] != "other"  # the pattern block still applies


def test_a_pattern_of_many_stars_is_matched_without_backtracking_for_ever(tmp_path):
    config = tmp_path / "config"
    config.write_text(f"Host {'a' * 60}\n  HostName 10.0.0.1\nHost {'*a' * 25}b\n  User other\n")
    read = _read_in_thread(config, tmp_path, seconds=60)
    assert isinstance(read, SshConfig), "the reading did not end"
    assert [host.connection.user != "other" for host in read.hosts] == [True]


@pytest.mark.parametrize(
    ("name", "pattern", "matches"),
    [
        ("web1", "*", True),
        ("web1", "**", True),
        ("web1", "w*1", True),
        ("web1", "*e*", True),
        ("web1", "*b*b*", False),
        ("abab", "*ab", True),
        ("aXbXb", "a*b", True),
        ("ab", "a*?*b", False),
        ("axb", "a*?*b", True),
        ("web.example.com", "*.example.com", True),
        ("example.com", "*.example.com", False),
        ("web1", "web?", True),
        ("web", "web?", False),
        ("a" * 40, "*a" * 20, True),
    ],
)
def test_a_pattern_of_stars_and_marks_matches_as_openssh_matches_it(name, pattern, matches):
    assert match_pattern(name, pattern) is matches
