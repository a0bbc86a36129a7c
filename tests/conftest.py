"""Shared fixtures: a fake Anthropic Messages API server (see ``tests/fake_anthropic.py``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fake_anthropic import FakeAnthropic


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
