"""The built-in Ansible inventory reader (no Ansible installed): what users' inventories hold, read
as Ansible reads it, and every host it cannot read left out with a notice, never an error."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from cmdop_tui.machines.ansible import read_ansible_inventory
from cmdop_tui.machines.ansible_hosts import InventoryError, expand, host_and_port, split_port
from cmdop_tui.machines.spec import MachineError, MachineSpec
from cmdop_tui.machines.ssh import SshTransport


def read(path: Path, timeout_s: float = 10.0):
    return read_ansible_inventory(path, None, timeout_s)


def machines(path: Path) -> dict[str, MachineSpec]:
    return {spec.name: spec for spec in read(path).machines}


def write(path: Path, text: str, executable: bool = False) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    if executable:
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_ranges_take_a_stride_letters_and_keep_their_padding():
    assert expand("www[01:09:4].x") == ["www01.x", "www05.x", "www09.x"]
    assert expand("db-[a:c]") == ["db-a", "db-b", "db-c"]
    assert expand("n[8:10]-[a:b]") == ["n8-a", "n8-b", "n9-a", "n9-b", "n10-a", "n10-b"]
    assert expand("r[:2]") == ["r0", "r1", "r2"]
    for bad in ("w[1:2:3:4]", "w[01:100]", "w[1:]", "w[c:a]", "w[1:x]"):
        with pytest.raises(InventoryError):
            expand(bad)


def test_ports_split_off_as_ansible_reads_them_and_ipv6_stays_whole():
    assert split_port("web1:2222") == ("web1", 2222)
    assert split_port("[2001:db8::1]:2200") == ("2001:db8::1", 2200)
    assert split_port("2001:db8::1") == ("2001:db8::1", None)
    assert split_port("192.0.2.1:22") == ("192.0.2.1", 22)
    assert host_and_port("web[1:2]:22") == (["web1", "web2"], 22)
    assert host_and_port("not a host") == (["not a host"], None)  # kept as written, as Ansible does


def test_one_host_it_cannot_read_is_left_out_with_a_notice_and_the_rest_are_read(tmp_path):
    inventory = write(
        tmp_path / "hosts.yml",
        "all:\n  hosts:\n    good:\n      ansible_host: 192.0.2.1\n"
        "    bad:\n      ansible_port: '{{ base_port }}'\n    worse:\n      ansible_port: many\n",
    )
    found = read(inventory)
    assert [spec.name for spec in found.machines] == ["good"]
    assert found.notices == (
        "Ansible host bad is left out: ansible_port uses the undefined variable 'base_port'",
        "Ansible host worse is left out: ansible_port 'many' is not a port number",
    )


def test_an_inventory_ansible_would_refuse_is_one_notice_not_an_error(tmp_path):
    broken = write(tmp_path / "hosts", "[web]\nweb1 ansible_port=22 ; a comment\n")
    found = read(broken)
    assert found.machines == ()
    assert found.notices == (
        f"the Ansible inventory {broken} is not read: line 2: Expected key=value host variable assignment, got: ;",
    )
    assert read(tmp_path / "missing").notices == (
        f"the Ansible inventory {tmp_path / 'missing'} is not read: no such file or folder",
    )


def test_a_comment_after_a_group_var_is_part_of_its_value_as_in_ansible(tmp_path):
    inventory = write(tmp_path / "hosts", "[web]\nweb1\n[db]\ndb1\n[web:vars]\nansible_port=22 ; the default\n")
    found = read(inventory)
    assert [spec.name for spec in found.machines] == ["db1"]
    assert found.notices == ("Ansible host web1 is left out: ansible_port '22 ; the default' is not a port number",)


def test_a_plain_variable_in_a_connection_var_is_rendered_and_other_jinja_is_not_guessed(tmp_path):
    inventory = write(
        tmp_path / "hosts.yml",
        "all:\n  vars:\n    base_port: 2200\n    domain: example.net\n  hosts:\n"
        "    app1:\n      ansible_port: '{{ base_port }}'\n"
        "    app2:\n      ansible_host: '{{ inventory_hostname }}.{{domain}}'\n"
        "    app3:\n      ansible_port: '{{ base_port | int + 1 }}'\n",
    )
    found = machines(inventory)
    assert found["app1"].port == 2200
    assert found["app2"].host == "app2.example.net"
    assert "app3" not in found


def test_the_old_ansible_ssh_names_are_read_and_win_as_in_ansible(tmp_path):
    inventory = write(
        tmp_path / "hosts",
        "old ansible_ssh_host=192.0.2.9 ansible_host=192.0.2.1 ansible_ssh_user=root ansible_ssh_port=2201\n",
    )
    old = machines(inventory)["old"]
    assert (old.host, old.user, old.port) == ("192.0.2.9", "root", 2201)


def test_keys_and_ssh_args_reach_the_ssh_command_line_as_options(tmp_path):
    inventory = write(
        tmp_path / "hosts",
        "[app]\napp1 ansible_host=10.0.0.1 ansible_ssh_private_key_file=~/.ssh/app_key\n"
        "[app:vars]\nansible_ssh_common_args='-o ProxyCommand=\"ssh -W %h:%p -q jump@bastion\" -J ops@hop'\n"
        "ansible_ssh_extra_args=-oServerAliveInterval=30\n",
    )
    app1 = machines(inventory)["app1"]
    assert app1.identity_file == "~/.ssh/app_key"
    assert app1.ssh_options == (
        "ProxyCommand=ssh -W %h:%p -q jump@bastion",
        "ProxyJump=ops@hop",
        "ServerAliveInterval=30",
    )
    argv = SshTransport(app1).argv("true")
    assert argv[-3:] == ["10.0.0.1", "--", "true"]  # the host is still the one and only host
    tail = argv[argv.index("-i") : -3]
    assert tail == ["-i", "~/.ssh/app_key", *(x for o in app1.ssh_options for x in ("-o", o))]
    assert argv.index("BatchMode=yes") < argv.index("-i")  # ours first: ssh keeps the first value
    other = SshTransport(MachineSpec("app2", "10.0.0.1"))
    assert other._route != SshTransport(app1)._route  # a proxied host never shares a direct one's master


@pytest.mark.parametrize(
    ("args", "why"),
    [
        ("other-host", "'other-host', which is not an ssh option"),
        ("-o RemoteCommand=bash", "sets RemoteCommand"),
        ("-F /tmp/config", "'-F', which is not an ssh option"),
        ("-o", "not Key=Value"),
        ("-o 'ProxyCommand=a\nb'", "not an ssh option"),
    ],
)
def test_ssh_args_that_could_become_a_host_or_change_the_command_leave_the_host_out(tmp_path, args, why):
    inventory = write(tmp_path / "hosts.yml", f"all:\n  hosts:\n    h1:\n      ansible_ssh_extra_args: {args!r}\n")
    found = read(inventory)
    assert found.machines == ()
    assert (
        len(found.notices) == 1
        and found.notices[0].startswith("Ansible host h1 is left out")
        and why in found.notices[0]
    )


def test_a_spec_takes_no_ssh_option_that_is_not_one_option():
    for option in ("ProxyCommand", "=x", "-oX=y", "ProxyCommand=a\nb"):
        with pytest.raises(MachineError, match="not an ssh option"):
            MachineSpec("h", "h", ssh_options=(option,))


def test_connection_local_is_this_machine_and_other_connections_are_left_out(tmp_path):
    inventory = write(
        tmp_path / "hosts",
        "[lab]\nnode1 ansible_connection=local\nwin1 ansible_connection=winrm\nnode2 ansible_connection=ssh\n",
    )
    found = read(inventory)
    specs = {spec.name: spec for spec in found.machines}
    assert specs["node1"].is_local and specs["node1"].tags == ("lab",)
    assert not specs["node2"].is_local
    assert found.notices == (
        "Ansible host win1 is left out: ansible_connection is 'winrm'; machines are reached over ssh only",
    )


def test_ipv6_hosts_are_read_whole(tmp_path):
    inventory = write(tmp_path / "hosts", "2001:db8::5\n[2001:db8::6]:2200\nv6 ansible_host=2001:db8::7\n")
    found = machines(inventory)
    assert (found["2001:db8::5"].host, found["2001:db8::5"].port) == ("2001:db8::5", None)
    assert (found["2001:db8::6"].host, found["2001:db8::6"].port) == ("2001:db8::6", 2200)
    assert found["v6"].host == "2001:db8::7"


def test_a_yaml_inventory_without_a_yaml_suffix_is_read_as_yaml(tmp_path):
    inventory = write(
        tmp_path / "inventory",
        "all:\n  children:\n    web:\n      hosts:\n        web1:\n          ansible_user: deploy\n",
    )
    assert machines(inventory)["web1"].user == "deploy"
    assert machines(write(tmp_path / "ini", "web1 ansible_user=deploy\n"))["web1"].user == "deploy"


def test_the_deeper_groups_vars_win_then_priority_then_name(tmp_path):
    inventory = write(
        tmp_path / "hosts",
        "[region:children]\nsite\n[site]\nh1\n[aaa]\nh1\nh2\n[zzz]\nh2\n"
        "[region:vars]\nansible_user=region\n[site:vars]\nansible_user=site\n[aaa:vars]\nansible_user=aaa\n"
        "[zzz:vars]\nansible_user=zzz\nansible_group_priority=0\n",
    )
    found = machines(inventory)
    assert found["h1"].user == "site"  # depth 2 over aaa at depth 1, though aaa sorts first
    assert found["h2"].user == "aaa"  # one depth: the lower priority (zzz's 0) goes first


def test_group_vars_and_host_vars_beside_the_inventory_are_read_in_ansibles_order(tmp_path):
    inventory = write(tmp_path / "hosts", "[web]\nweb1 ansible_port=2001\nweb2\n[web:vars]\nansible_user=inline\n")
    write(tmp_path / "group_vars" / "all.yml", "ansible_user: everyone\nansible_port: 22\n")
    write(tmp_path / "group_vars" / "web" / "a.yml", "ansible_user: from-a\n")
    write(tmp_path / "group_vars" / "web" / "b.yaml", "ansible_user: from-b\n")
    write(tmp_path / "host_vars" / "web2", "ansible_host: 10.1.1.2\n")
    found = machines(inventory)
    assert (found["web1"].user, found["web1"].port) == ("from-b", 2001)  # the folder's files in order; own var last
    assert (found["web2"].host, found["web2"].port) == ("10.1.1.2", 22)


def test_a_vaulted_vars_file_leaves_its_hosts_out_rather_than_read_without_it(tmp_path):
    inventory = write(tmp_path / "hosts", "[web]\nweb1\n[db]\ndb1\n")
    write(tmp_path / "group_vars" / "web.yml", "$ANSIBLE_VAULT;1.1;AES256\n6231336539\n")
    found = read(inventory)
    assert [spec.name for spec in found.machines] == ["db1"]
    assert found.notices == (
        f"Ansible host web1 is left out: {tmp_path / 'group_vars' / 'web.yml'} is encrypted with Ansible Vault",
    )


def test_an_inventory_folder_reads_each_file_and_a_bad_one_is_a_notice(tmp_path):
    write(tmp_path / "a.ini", "[web]\nweb1\n")
    write(tmp_path / "b.yml", "all:\n  hosts:\n    web2:\n")
    write(tmp_path / "c.ini", "[web\n")
    write(tmp_path / "README.md", "not-a-host\n")
    write(tmp_path / "group_vars" / "web.yml", "ansible_user: www\n")
    found = read(tmp_path)
    assert {spec.name: spec.user for spec in found.machines} == {"web1": "www", "web2": None}
    assert len(found.notices) == 1 and found.notices[0].startswith(
        f"Ansible inventory {tmp_path / 'c.ini'} is not read"
    )


def test_a_dynamic_inventory_script_is_run_with_list_and_host(tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-never-handed-to-the-script")
    script = write(
        tmp_path / "inventory.sh",
        "#!/bin/sh\n"
        'if [ "$1" = --list ]; then echo \'{"web": {"hosts": ["w1"], "vars": {"ansible_port": 2022}}}\'; '
        'else echo "{\\"ansible_user\\": \\"${ANTHROPIC_API_KEY:-none}\\"}"; fi\n',
        executable=True,
    )
    w1 = machines(script)["w1"]
    assert (w1.port, w1.user, w1.tags) == (2022, "none", ("web",))


def test_a_hung_script_is_stopped_at_its_deadline_and_is_a_notice(tmp_path):
    pid_file = tmp_path / "pid"
    script = write(tmp_path / "inventory", f"#!/bin/sh\nsleep 600 &\necho $! > {pid_file}\nwait\n", executable=True)
    found = read(script, timeout_s=1.0)
    assert found.machines == ()
    assert found.notices == (f"the Ansible inventory {script} is not read: inventory did not finish within 1 s",)
    assert not alive(int(pid_file.read_text()))  # the script's child went with it


def test_one_time_budget_holds_for_a_scripts_list_and_all_its_host_calls(tmp_path):
    calls = tmp_path / "calls"
    script = write(
        tmp_path / "inventory",
        f'#!/bin/sh\necho "$1" >> {calls}\n'
        'if [ "$1" = --list ]; then echo \'{"g": ["h1", "h2", "h3"]}\'; else exec sleep 600; fi\n',
        executable=True,
    )
    found = read(script, timeout_s=1.0)
    assert found.notices == (f"the Ansible inventory {script} is not read: inventory did not finish within 1 s",)
    assert calls.read_text() == "--list\n--host\n"  # the first --host used the budget up: no second one


def alive(pid: int) -> bool:
    """Running on: not gone, not a zombie (killed, not yet reaped by init), no SIGKILL pending."""
    try:
        status = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
    except FileNotFoundError:
        return False
    pending = int(status["ShdPnd"], 16) | int(status["SigPnd"], 16)
    return not status["State"].strip().startswith("Z") and not pending & (1 << (9 - 1))


def test_a_failing_script_says_its_last_words(tmp_path):
    script = write(
        tmp_path / "inventory", "#!/bin/sh\necho 'no credentials for the cloud' >&2\nexit 3\n", executable=True
    )
    assert read(script).notices == (
        f"the Ansible inventory {script} is not read: {script} --list failed: no credentials for the cloud",
    )


@pytest.mark.parametrize(
    ("name", "text", "why"),
    [
        ("loop.yml", "a:\n  children:\n    b:\n      children:\n        a:\n", "makes a loop of groups"),
        ("huge", "web[0:999999999]\n", "more than 100000 hosts"),
        ("list.yml", "all:\n  hosts:\n    h1: [1, 2]\n", "must be a mapping"),
        (
            "deep.yml",
            "a:\n" + "".join(f"{'  ' * (2 * i + 1)}children:\n{'  ' * (2 * i + 2)}g{i}:\n" for i in range(400)),
            "",
        ),
    ],
)
def test_hostile_inventories_are_a_notice_not_a_crash_nor_a_hang(tmp_path, name, text, why):
    found = read(write(tmp_path / name, text))
    assert found.machines == ()
    assert len(found.notices) <= 1 and all(why in notice for notice in found.notices)


def test_an_inventory_path_is_a_path_even_when_it_looks_like_an_option_or_a_command(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "-hosts", "web1 ansible_host=192.0.2.1\n")
    write(tmp_path / "inv", '#!/bin/sh\necho \'{"g": ["h1"]}\'\n', executable=True)
    assert [spec.host for spec in read(Path("-hosts")).machines] == ["192.0.2.1"]
    assert [spec.name for spec in read(Path("inv")).machines] == ["h1"]  # ./inv, not an `inv` on the PATH
