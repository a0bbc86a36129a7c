"""Shared fixtures: a fake Anthropic Messages API server (see ``tests/support/fake_anthropic.py``) and
real OpenSSH servers on 127.0.0.1 (see ``tests/support/sshd.py``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

import pytest
from fake_anthropic import FakeAnthropic
from sshd import SshLab, StrPath, sshd_unavailable_reason

from cmdop_tui.machines import beneath


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets an empty home and a clean environment: no user config, themes, sessions,
    ~/.ssh/config or API key leak in, and nothing the app writes lands in the real home."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "CMDOP_TUI_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    # Only tests that ask for the fake API (anthropic_env) see credentials or an endpoint.
    for name in ("CMDOP_INTENT_ROUTER", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    # A `-p` run here is cold and starts no warm agent, which would outlive the test
    # (tests/machines/test_warm_agent.py asks for one, in a runtime dir of its own).
    monkeypatch.setenv("CMDOP_TUI_NO_WARM", "1")
    return home


@pytest.fixture
def fake_api() -> Iterator[FakeAnthropic]:
    """A started :class:`FakeAnthropic`, stopped at teardown.

    Teardown fails the test if the server rejected a request as invalid (a validation 400,
    or a request with no scripted reply left) unless the test set
    ``fake_api.expect_invalid = True``, and always if the fake itself hit an error
    (e.g. a reply callable raised).
    """
    server = FakeAnthropic().start()
    try:
        yield server
    finally:
        server.stop()
    problems = []
    if server.invalid_requests and not server.expect_invalid:
        problems += [f"fake Anthropic API rejected a request: {message}" for _, message in server.invalid_requests]
    problems += [f"fake Anthropic API error:\n{tb}" for tb in server.errors]
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)


@pytest.fixture
def anthropic_env(fake_api: FakeAnthropic, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Point the SDK (in-process or in a child process) at ``fake_api`` through the environment.

    Sets ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL (and removes ANTHROPIC_AUTH_TOKEN) and
    returns those two variables, e.g. ``subprocess.run(..., env={**os.environ, **anthropic_env})``.
    """
    env = {"ANTHROPIC_API_KEY": fake_api.api_key, "ANTHROPIC_BASE_URL": fake_api.url}
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return env


# --- Real OpenSSH servers on 127.0.0.1 (see ``tests/support/sshd.py``) ---------------------------------


@pytest.fixture
def ssh_hosts() -> Iterator[Callable[..., SshLab]]:
    """Factory of real sshd labs: ``ssh_hosts(count=1, env=None, path=None) -> SshLab``.

    Each call starts ``count`` real ``sshd`` servers on 127.0.0.1 concurrently (aliases
    ``alpha``, ``bravo``, ... in ``lab.config``, plus ``lab.offline_alias`` where nothing
    listens); ``env`` is set on the server side for every remote command (sshd ``SetEnv``)
    and ``path`` goes first on the remote PATH (e.g. the venv's ``bin/``); keyword
    ``shell_rc=True`` lets bash read the user's rc files remotely; ``host_env(alias)`` adds
    variables for one host (a home of its own). Every server (and every
    process it started) is gone at teardown. Skips when sshd or ssh is not installed; CI
    installs them, so there the tests always run.
    """
    reason = sshd_unavailable_reason()
    if reason is not None:
        pytest.skip(f"real SSH servers unavailable: {reason}")
    labs: list[SshLab] = []

    def start(
        count: int = 1,
        env: Mapping[str, str] | None = None,
        path: StrPath | Sequence[StrPath] | None = None,
        *,
        shell_rc: bool = False,
        host_env: Callable[[str], Mapping[str, str]] | None = None,
    ) -> SshLab:
        lab = SshLab(count, env=env, path=path, shell_rc=shell_rc, host_env=host_env)
        labs.append(lab)
        return lab

    try:
        yield start
    finally:
        for lab in reversed(labs):
            lab.close()


# --- after the whole run: no file the app wrote holds the test API key -------------------------


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Scan every home the tests gave the app (config, data: transcripts, audit log, exports)
    for the fake API key; finding it anywhere fails the run."""
    from fake_anthropic import DEFAULT_API_KEY

    factory = getattr(session.config, "_tmp_path_factory", None)
    if factory is None or exitstatus not in (0, 1):
        return
    needle = DEFAULT_API_KEY.encode()
    leaks = [
        path
        for home in factory.getbasetemp().glob("home*")
        if not home.is_symlink()
        for path in home.rglob("*")
        if path.is_file() and not path.is_symlink() and needle in path.read_bytes()
    ]
    if leaks:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        message = "the test API key was written to: " + ", ".join(str(p) for p in leaks)
        if reporter is not None:
            reporter.write_line(f"LEAK: {message}", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(params=["openat2", "walk"])
def opener(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each test twice: with openat2, and with the component walk older kernels get."""
    if request.param == "walk":
        monkeypatch.setattr(beneath, "_syscall", lambda: None)
    elif not beneath.openat2_available():
        pytest.skip("this kernel has no openat2")
    return str(request.param)
