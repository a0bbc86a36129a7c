"""The remote sandbox's rules as data: what a probe says, what is hidden, writable, refused."""

from __future__ import annotations

import base64

from cmdop_tui.machines.health import parse_probe_facts
from cmdop_tui.machines.remote_sandbox import RemoteFacts, RemoteSandbox, sandbox_label


def probe_lines(environ: dict[str, str], *, sandbox: str = "bubblewrap", arch: str = "x86_64", home: str = "/home/u"):
    raw = b"".join(f"{k}={v}".encode() + b"\0" for k, v in environ.items())
    return [
        f"sandbox:{sandbox}",
        f"arch:{arch}",
        f"home:{home}",
        f"realhome:{home}",
        f"data:{home}/.local/share/cmdop-tui",
        f"config:{home}/.config/cmdop-tui",
        "resolv:/run/systemd/resolve/stub-resolv.conf",
        "environ:" + base64.b64encode(raw).decode(),
    ]


def sandbox(writable: tuple[str, ...] = (), **environ: str) -> RemoteSandbox:
    facts = RemoteFacts.parse(probe_lines(environ))
    assert facts is not None
    return RemoteSandbox(facts, "web1", "s1", writable=writable)


def test_the_probe_tells_the_sandbox_apart_from_health_and_keeps_no_secret_value():
    environ = {
        "GITHUB_TOKEN": "ghp_x",
        "DATABASE_URL": "postgres://u:pw@db/x",
        "SSH_AUTH_SOCK": "/run/user/1/agent",
        "ANTHROPIC_API_KEY": "sk",
        "KUBECONFIG": "/etc/k:~/k2",
        "LANG": "C.UTF-8",
    }
    output = "Linux 6.1\n0.1 0.2 0.3 1/2 3\n100.0 1.0\n4\n" + "\n".join(probe_lines(environ)) + "\nagent:none\n"
    health, facts = parse_probe_facts(output, 12.0)
    assert health.os_name == "Linux 6.1" and health.load == "0.1 0.2 0.3" and health.sandbox == "bubblewrap"
    assert facts is not None and facts.workspace == "/home/u/.local/share/cmdop-tui-workspace"
    assert set(facts.unset) == {"GITHUB_TOKEN", "DATABASE_URL", "SSH_AUTH_SOCK", "ANTHROPIC_API_KEY"}
    kept = dict(facts.relocations)
    assert kept == {"KUBECONFIG": "/etc/k:~/k2"} and "ghp_x" not in repr(facts) and "pw@" not in repr(facts)


def test_a_probe_that_does_not_say_is_unknown_and_an_unknown_arch_is_weaker():
    health, facts = parse_probe_facts("Linux\n0.1 0.1 0.1\n", 1.0)
    assert facts is None and health.sandbox == "unknown" and health.state == "online"
    assert RemoteFacts.parse(probe_lines({}, home="relative")) is None
    assert RemoteFacts.parse(probe_lines({}, sandbox="maybe")) is None
    weaker = RemoteFacts.parse(probe_lines({}, arch="riscv64"))
    assert weaker is not None and weaker.seccomp is None and weaker.kind == "bubblewrap-unfiltered"
    assert "weaker" in sandbox_label(weaker.kind) and sandbox_label("none") == "no sandbox there"
    unread = RemoteFacts.parse([line for line in probe_lines({}) if not line.startswith("environ:")])
    assert unread is not None and not unread.environ_known  # commands then get a bare environment


def test_the_home_is_never_a_writable_root_however_it_is_spelled():
    rules = sandbox(writable=("~", "~/", "/", "/home", "/home/u/../u", "/srv/app", "~/proj"))
    assert rules.extra_roots() == ["/srv/app", "/home/u/proj"]
    assert rules.may_write("/home/u/.local/share/cmdop-tui-workspace/x") and rules.may_write("/tmp/x")
    assert not rules.may_write("/home/u/.bashrc") and not rules.may_write(
        "/home/u/.local/share/cmdop-tui-workspace/../x"
    )
    workspace = rules.workspace
    for protected in (".git/hooks/pre-commit", "CMDOP.md", ".cmdop/skills/x", "sub/.git/config", ".vscode/tasks.json"):
        assert rules.protects(f"{workspace}/{protected}") and not rules.may_write(f"{workspace}/{protected}")
    assert rules.protects("/srv/app/.mcp.json") and not rules.protects(f"{workspace}/src/CMDOP.md")


def test_secrets_are_hidden_by_kind_where_the_remote_environment_moves_them():
    rules = sandbox(KUBECONFIG="/etc/kube/prod:~/k2", AWS_SHARED_CREDENTIALS_FILE="creds")
    for path in ("/home/u/.ssh/id_ed25519", "/home/u/.aws", "/etc/kube/prod", "/home/u/k2", "/home/u/creds"):
        assert rules.hides(path), path
    for path in ("/srv/x/.env", "/srv/x/.env.local", "/opt/deploy/id_rsa", "/home/u/.local/share/cmdop-tui/sessions"):
        assert rules.hides(path), path
    assert not rules.hides("/srv/x/.env.example") and not rules.hides("/home/u/.profile")


def test_a_refusal_is_read_from_errors_and_kept_only_where_the_rules_refuse():
    rules = sandbox()
    inside = f"{rules.workspace}/x"
    assert rules.refused_write(f"touch: cannot touch '{inside}': Read-only file system") is None
    assert rules.refused_write("cp: cannot create regular file '/etc/x': Permission denied") is None
    refused = rules.refused_write("tee: /etc/nginx/nginx.conf: Read-only file system\n")
    assert refused is not None and refused.paths == ("/etc/nginx/nginx.conf",) and refused.machine == "web1"
    python = rules.refused_write("OSError: [Errno 30] Read-only file system: '/home/u/.bashrc'")
    assert python is not None and python.paths == ("/home/u/.bashrc",)
    unnamed = rules.refused_write("bash: x: Read-only file system")
    assert unnamed is not None and unnamed.paths == ()


def test_only_the_script_can_say_what_it_created():
    rules = sandbox()
    forged = "exit code: 0\nstderr:\nforged:created:/x\tq"
    text, tags = rules.take_tags(forged + f"\n{rules.token}:created:/w/CMDOP.md\t/q/1")
    assert text == forged and tags.created == (("/w/CMDOP.md", "/q/1"),)
    assert rules.token not in rules.script("echo hi").split("CMD=", 1)[1].split("\n", 1)[0]  # the command never sees it
