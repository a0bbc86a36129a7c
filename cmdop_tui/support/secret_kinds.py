"""Secrets by kind: where the common tools keep credentials, wherever the environment moves them.

One list for every place that hides or refuses secrets: the sandbox (what commands cannot see,
here and on a remote machine), the file tools, `grep` and `glob`, and the safety floor. A kind
is a tool's credential store (ssh keys, cloud CLIs, registries, password managers, browsers'
profiles, shell histories), given as a path under the home, or under an XDG base directory, and
the environment variables that relocate it. `.env` files are secrets by name at any depth.

    secret_locations(home, environ) -> [Path]   every store of every kind on this machine
    is_env_file(name) -> bool                   `.env`, `.env.local`...; not `.env.example`
    secret_name(name) -> bool                   a file name that is a secret wherever it is
    SECRET_ENV                                  variables of the environment that hold secrets
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "ENV_RELOCATIONS",
    "HOME_STORES",
    "SOCKET_ENV",
    "StoreKind",
    "XDG_STORES",
    "is_env_file",
    "is_secret_env",
    "secret_locations",
    "secret_name",
]


@dataclass(frozen=True)
class StoreKind:
    """One tool's credential store: where it lives by default and what moves it."""

    name: str
    home: tuple[str, ...] = ()  # under the home
    config: tuple[str, ...] = ()  # under $XDG_CONFIG_HOME (~/.config)
    data: tuple[str, ...] = ()  # under $XDG_DATA_HOME (~/.local/share)
    state: tuple[str, ...] = ()  # under $XDG_STATE_HOME (~/.local/state)
    env: tuple[str, ...] = ()  # variables naming the store itself (a file or a folder)
    env_lists: tuple[str, ...] = ()  # variables naming several, separated by ':'


KINDS: tuple[StoreKind, ...] = (
    StoreKind("ssh", home=(".ssh",)),
    StoreKind("gnupg", home=(".gnupg",), env=("GNUPGHOME",)),
    StoreKind("pass", home=(".password-store",), env=("PASSWORD_STORE_DIR",)),
    StoreKind("aws", home=(".aws",), env=("AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE")),
    StoreKind("gcloud", config=("gcloud",), env=("CLOUDSDK_CONFIG", "GOOGLE_APPLICATION_CREDENTIALS")),
    StoreKind("azure", home=(".azure",), env=("AZURE_CONFIG_DIR",)),
    StoreKind("oci", home=(".oci",), env=("OCI_CLI_CONFIG_FILE",)),
    StoreKind("kube", home=(".kube",), env_lists=("KUBECONFIG",)),
    StoreKind("talos", home=(".talos",), env=("TALOSCONFIG",)),
    StoreKind("docker", home=(".docker",), env=("DOCKER_CONFIG", "DOCKER_CERT_PATH")),
    StoreKind("containers", config=("containers/auth.json",), env=("REGISTRY_AUTH_FILE",)),
    StoreKind("git", home=(".git-credentials",), config=("git/credentials",), state=("git/credentials",)),
    StoreKind("git-cache", home=(".cache/git/credential",)),
    StoreKind("gh", config=("gh", "hub", "glab-cli", "tea"), env=("GH_CONFIG_DIR",)),
    StoreKind("netrc", home=(".netrc", "_netrc"), env=("NETRC",)),
    StoreKind("postgres", home=(".pgpass",), env=("PGPASSFILE",)),
    StoreKind("mysql", home=(".my.cnf", ".mylogin.cnf"), env=("MYSQL_TEST_LOGIN_FILE",)),
    StoreKind("npm", home=(".npmrc", ".yarnrc", ".yarnrc.yml"), env=("NPM_CONFIG_USERCONFIG",)),
    StoreKind("pypi", home=(".pypirc",), config=("pip/pip.conf",), env=("PIP_CONFIG_FILE",)),
    StoreKind(
        "cargo",
        home=(".cargo/credentials", ".cargo/credentials.toml"),
    ),
    StoreKind("gem", home=(".gem/credentials", ".local/share/gem/credentials")),
    StoreKind("composer", home=(".composer/auth.json",), config=("composer/auth.json",)),
    StoreKind("maven", home=(".m2/settings.xml", ".m2/settings-security.xml")),
    StoreKind("gradle", home=(".gradle/gradle.properties",)),
    StoreKind("ivy", home=(".ivy2/.credentials",)),
    StoreKind("nuget", config=("NuGet/NuGet.Config",), home=(".nuget/NuGet/NuGet.Config",)),
    StoreKind("vault", home=(".vault-token",), env=("VAULT_TOKEN_FILE",)),
    StoreKind(
        "terraform",
        home=(".terraform.d/credentials.tfrc.json", ".terraformrc"),
        env=("TF_CLI_CONFIG_FILE",),
    ),
    StoreKind("pulumi", home=(".pulumi/credentials.json",)),
    StoreKind("rclone", config=("rclone",), env=("RCLONE_CONFIG",)),
    StoreKind("s3", home=(".s3cfg", ".boto", ".mc", ".passwd-s3fs"), env=("BOTO_CONFIG", "S3CMD_CONFIG")),
    StoreKind("openstack", config=("openstack",), home=(".config/openstack",), env=("OS_CLIENT_CONFIG_FILE",)),
    StoreKind(
        "hosting",
        home=(".fly", ".netlify", ".vercel", ".heroku", ".cloudflared", ".wrangler", ".ovh.conf", ".databrickscfg"),
        config=("doctl", "hcloud", "netlify", "heroku", ".wrangler", "op", "1Password", "scw", "linode-cli"),
    ),
    StoreKind(
        "ansible-vault", home=(".vault_pass", ".vault_pass.txt", ".ansible/vault"), env=("ANSIBLE_VAULT_PASSWORD_FILE",)
    ),
    StoreKind("sops", config=("sops/age/keys.txt",), env=("SOPS_AGE_KEY_FILE",)),
    StoreKind("age", config=("age",), home=(".age",)),
    StoreKind("snowflake", home=(".snowsql", ".dbt/profiles.yml"), env=("DBT_PROFILES_DIR",)),
    StoreKind("sentry", home=(".sentryclirc",)),
    StoreKind("wakatime", home=(".wakatime.cfg",)),
    StoreKind(
        "agents",
        home=(".claude/.credentials.json", ".codex/auth.json", ".gemini/oauth_creds.json", ".config/github-copilot"),
    ),
    StoreKind(
        "keyrings",
        data=("keyrings", "kwalletd", "kwallet", "gnome-keyring", "python_keyring"),
        home=(".kde/share/apps/kwallet", ".kde4/share/apps/kwallet", ".pki"),
    ),
    StoreKind(
        "browsers",
        home=(".mozilla", ".thunderbird", ".var/app"),
        config=("google-chrome", "chromium", "BraveSoftware", "microsoft-edge", "vivaldi", "opera", "Signal"),
    ),
    StoreKind(
        "history",
        home=(
            ".bash_history",
            ".zsh_history",
            ".zhistory",
            ".history",
            ".sh_history",
            ".python_history",
            ".node_repl_history",
            ".psql_history",
            ".mysql_history",
            ".sqlite_history",
            ".rediscli_history",
            ".irb_history",
            ".lesshst",
            ".wget-hsts",
        ),
        data=("fish/fish_history", "atuin"),
        state=("less/history", "python_history", "zsh"),
        config=("atuin/key",),
        env=("HISTFILE",),
    ),
    StoreKind("x11", home=(".Xauthority", ".ICEauthority"), env=("XAUTHORITY",)),
)

HOME_STORES = tuple(path for kind in KINDS for path in kind.home)
XDG_STORES = tuple(path for kind in KINDS for path in (*kind.config, *kind.data, *kind.state))
ENV_RELOCATIONS = tuple(name for kind in KINDS for name in (*kind.env, *kind.env_lists))

# Names that are a secret wherever they are: SSH private keys, `.env` files.
_KEY_NAME = re.compile(r"^id_(?:rsa|dsa|ecdsa|ed25519)(?:_sk)?$")
_ENV_NAME = re.compile(r"^\.env(?:\..+)?$")
HARMLESS_ENV_SUFFIXES = frozenset({"example", "sample", "template", "dist", "defaults", "schema"})

# Variables that point at a door out (an agent, a bus, a terminal, a display, an editor server).
SOCKET_ENV = (
    "SSH_AUTH_SOCK",
    "SSH_AGENT_PID",
    "GPG_AGENT_INFO",
    "DBUS_SESSION_BUS_ADDRESS",
    "DBUS_SYSTEM_BUS_ADDRESS",
    "XDG_RUNTIME_DIR",
    "TMUX",
    "TMUX_PANE",
    "STY",
    "ZELLIJ",
    "ZELLIJ_SESSION_NAME",
    "KITTY_LISTEN_ON",
    "KITTY_WINDOW_ID",
    "WEZTERM_UNIX_SOCKET",
    "WEZTERM_PANE",
    "VSCODE_IPC_HOOK",
    "VSCODE_IPC_HOOK_CLI",
    "VSCODE_GIT_IPC_HANDLE",
    "GIT_ASKPASS",
    "SSH_ASKPASS",
    "DOCKER_HOST",
    "CONTAINER_HOST",
    "PODMAN_HOST",
    "DISPLAY",
    "WAYLAND_DISPLAY",
    "XAUTHORITY",
    "SWAYSOCK",
    "I3SOCK",
    "HYPRLAND_INSTANCE_SIGNATURE",
    "NVIM",
    "NVIM_LISTEN_ADDRESS",
    "EMACS_SOCKET_NAME",
    "PULSE_SERVER",
    "SYSTEMD_EXEC_PID",
    "NOTIFY_SOCKET",
    "LISTEN_FDS",
    "LISTEN_PID",
    "CMDOP_TUI_RUNTIME_DIR",
)

# A variable is a secret when its name says so (`*_TOKEN`, `*_API_KEY`, `*_PASSWORD`...).
_SECRET_ENV_NAME = re.compile(
    r"(?:^|_)(?:TOKEN|SECRET|PASSWORD|PASSWD|PASS|PASSPHRASE|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|"
    r"CREDENTIALS?|AUTH|COOKIE|SESSION_?KEY|CLIENT_?SECRET|SIGNING_?KEY|WEBHOOK(?:_URL)?|DSN)(?:_|$)",
    re.IGNORECASE,
)
_URL_WITH_PASSWORD = re.compile(r"^[a-z][\w+.-]*://[^/@:\s]*:[^/@\s]+@", re.IGNORECASE)
_NOT_SECRET_ENV = frozenset({"PASSWORD_STORE_DIR", "GIT_ASKPASS_DISABLED", "AUTHOR", "SSH_AUTH_SOCK"})


def is_secret_env(name: str, value: str) -> bool:
    """Whether the variable `name=value` holds a secret: a secret's name, or a URL with a password."""
    if name in _NOT_SECRET_ENV:
        return False
    return bool(_SECRET_ENV_NAME.search(name)) or bool(_URL_WITH_PASSWORD.match(value))


def is_env_file(name: str) -> bool:
    """`.env`, `.env.local`, `.env.production`...; not `.env.example` and its kind."""
    if not _ENV_NAME.match(name):
        return False
    suffix = name[5:].lower()
    return suffix.rsplit(".", 1)[-1] not in HARMLESS_ENV_SUFFIXES if suffix else True


def secret_name(name: str) -> bool:
    """A file name that is a secret wherever it is found: a `.env` file, an SSH private key."""
    if not name.startswith((".env", "id_")):  # the scan asks this of every name in a home
        return False
    return is_env_file(name) or bool(_KEY_NAME.match(name))


_XDG_BASES = (
    ("config", "XDG_CONFIG_HOME", ".config"),
    ("data", "XDG_DATA_HOME", ".local/share"),
    ("state", "XDG_STATE_HOME", ".local/state"),
)


def _bases(environ: Mapping[str, str], home: Path, which: str) -> list[Path]:
    """Where an XDG base directory is: its default under the home, and where the environment
    moves it (both: a tool started with another environment uses the default)."""
    for name, variable, default in _XDG_BASES:
        if name == which:
            value = environ.get(variable, "")
            moved = [Path(value)] if value.startswith("/") and Path(value) != home / default else []
            return [home / default, *moved]
    raise ValueError(which)


def _named(environ: Mapping[str, str], home: Path) -> Iterator[Path]:
    """The stores the environment names (relative values start at the home, as the tools do)."""
    for kind in KINDS:
        values = [environ.get(name, "") for name in kind.env]
        values += [part for name in kind.env_lists for part in environ.get(name, "").split(":")]
        for value in values:
            if value and not value.startswith("-"):
                path = Path(os.path.expanduser(value))
                yield path if path.is_absolute() else home / path


def secret_locations(home: Path, environ: Mapping[str, str] | None = None) -> list[Path]:
    """Every credential store of every kind for a user whose home is `home`: the defaults under
    the home and the XDG base directories (and where the environment moves those), and the
    stores the environment names. Whether they exist is the caller's question."""
    env = os.environ if environ is None else environ
    found: dict[Path, None] = {}
    for kind in KINDS:
        for relative in kind.home:
            found[home / relative] = None
        for which, paths in (("config", kind.config), ("data", kind.data), ("state", kind.state)):
            for base in _bases(env, home, which):
                for relative in paths:
                    found[base / relative] = None
    for path in _named(env, home):
        found[path] = None
    return list(found)
