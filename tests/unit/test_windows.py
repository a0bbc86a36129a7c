"""The context window of a model: the flag, the Models API, the settings, the default."""

from __future__ import annotations

import anthropic
import pytest
from fake_anthropic import ModelSpec

from cmdop_tui.config.settings import Settings
from cmdop_tui.session.windows import DEFAULT_CONTEXT_WINDOW, context_window


@pytest.fixture
async def client(fake_api):
    client = anthropic.AsyncAnthropic(api_key=fake_api.api_key, base_url=fake_api.url, max_retries=0)
    yield client
    await client.close()


async def test_the_models_api_says_first(fake_api, client):
    fake_api.models = {"claude-x": ModelSpec(max_input_tokens=123_456)}
    settings = Settings(context_windows={"claude-x": 50_000})
    assert await context_window(client, "claude-x", settings) == 123_456


async def test_the_settings_then_the_default_when_the_api_does_not_know(fake_api, client):
    settings = Settings(context_windows={"my-local": 32_768})
    assert await context_window(client, "my-local", settings) == 32_768  # an unknown model: 404
    assert await context_window(client, "another", settings) == DEFAULT_CONTEXT_WINDOW
    fake_api.models = {"my-local": ModelSpec(max_input_tokens=999_999)}
    fake_api.models_api = False  # an endpoint without the Models API
    assert await context_window(client, "my-local", settings) == 32_768


async def test_the_flag_overrides_everything(fake_api, client):
    fake_api.models = {"claude-x": ModelSpec(max_input_tokens=123_456)}
    settings = Settings(context_windows={"claude-x": 50_000}).with_run(max_context_tokens=16_000)
    assert await context_window(client, "claude-x", settings) == 16_000
