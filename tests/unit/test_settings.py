"""Settings: precedence (flag > environment > file > default), profiles, aliases, first run."""

from __future__ import annotations

import tomllib

import pytest

from cmdop_tui.cli import apply_flags, parser
from cmdop_tui.config.settings import (
    FIRST_RUN_TEMPLATE,
    Settings,
    SettingsError,
    ensure_config_file,
    load_settings,
    settings_from,
)


def settings_with(tmp_path, text: str, environ: dict[str, str] | None = None) -> Settings:
    path = tmp_path / "config.toml"
    path.write_text(text)
    return load_settings(path, environ=environ or {})


def test_precedence_flag_over_environment_over_file_over_default(tmp_path):
    assert load_settings(tmp_path / "none.toml", environ={}).agent.model == "@balanced"
    from_file = settings_with(tmp_path, '[agents.default]\nmodel = "@smart"\n')
    assert from_file.agent.model == "@smart"
    from_env = settings_with(tmp_path, '[agents.default]\nmodel = "@smart"\n', {"CMDOP_MODEL": "@fast"})
    assert from_env.agent.model == "@fast"
    from_flag = apply_flags(from_env, parser().parse_args(["--model", "claude-x"]))
    assert from_flag.agent.model == "claude-x"


def test_the_first_run_template_is_valid_and_changes_nothing(tmp_path):
    assert settings_from(tomllib.loads(FIRST_RUN_TEMPLATE)) == Settings()
    path = tmp_path / "sub" / "config.toml"
    assert ensure_config_file(path) == path and path.read_text() == FIRST_RUN_TEMPLATE
    path.write_text("# mine\n")
    assert ensure_config_file(path) is None and path.read_text() == "# mine\n"  # never overwritten


def test_profiles_ship_and_can_be_defined_and_selected(tmp_path):
    settings = settings_with(
        tmp_path, 'agent = "ops"\n[agents.ops]\nmodel = "@fast"\nloop = true\nhidden_tools = ["write_file"]\n'
    )
    assert settings.agent.name == "ops" and settings.agent.loop and settings.agent.hidden_tools == ("write_file",)
    autonomous = settings.with_agent("autonomous").agent
    assert autonomous.loop and "The task is done." in autonomous.loop_breakers
    assert "Proceed with what you were doing" in autonomous.loop_message
    assert settings_with(tmp_path, "", {"CMDOP_AGENT": "autonomous"}).agent.name == "autonomous"
    with pytest.raises(SettingsError, match="unknown agent profile 'ghost'"):
        settings.with_agent("ghost")


def test_aliases_prices_and_budget(tmp_path):
    settings = settings_with(
        tmp_path,
        'max_budget_usd = 2.5\n[aliases]\ncheap = "claude-haiku-5-5"\n[prices."claude-haiku-5-5"]\ninput = 0.5\noutput = 2\n',
    )
    assert (
        settings.resolve_model("@cheap") == "claude-haiku-5-5" and settings.resolve_model("@smart") == "claude-opus-5-5"
    )
    assert settings.prices["claude-haiku-5-5"] == (0.5, 2.0) and settings.max_budget_usd == 2.5
    with pytest.raises(SettingsError, match="unknown model alias '@nope'"):
        settings.resolve_model("@nope")


@pytest.mark.parametrize(
    "text, message",
    [
        ("colour = 3\n", "unknown setting 'colour'"),
        ("max_budget_usd = -1\n", "'max_budget_usd' must be a positive number"),
        ('[prices."m"]\ninput = "x"\n', "needs numbers input and output"),
        ("[agents.x]\nmax_turns = 0.5\n", "'max_turns' must be int"),
        ("agents = 3\n", "[agents] must be a table"),
    ],
)
def test_bad_settings_name_the_file(tmp_path, text, message):
    with pytest.raises(SettingsError) as error:
        settings_with(tmp_path, text)
    assert str(tmp_path / "config.toml") in str(error.value) and message in str(error.value)


def test_context_windows_per_model_and_the_flag_that_overrides_them(tmp_path):
    settings = settings_with(tmp_path, '[models."my-local"]\ncontext_window = 32768\n')
    assert settings.context_windows == {"my-local": 32768} and settings.run.max_context_tokens is None
    flagged = apply_flags(settings, parser().parse_args(["--max-context-tokens", "16000"]))
    assert flagged.run.max_context_tokens == 16000
    for bad in (
        '[models."m"]\ncontext_window = "big"\n',
        '[models."m"]\ncontext_window = 10\n',
        '[models."m"]\nsize = 1\n',
    ):
        with pytest.raises(SettingsError, match=r'\[models\."m"\]'):
            settings_with(tmp_path, bad)
    with pytest.raises(SystemExit):
        parser().parse_args(["--max-context-tokens", "0"])


def test_context_settings_reach_the_loop(tmp_path):
    from cmdop_tui.session.assembly import agent_config

    defaults = agent_config(settings_with(tmp_path, ""))
    assert defaults.compaction.compact_at == 0.75 and defaults.summary_model is None
    settings = settings_with(
        tmp_path, '[aliases]\nfast = "claude-haiku-5-5"\n[context]\ncompact_at = 0.6\ntail_tokens = 8000\n'
    )
    config = agent_config(settings)
    assert (config.compaction.compact_at, config.compaction.tail_tokens) == (0.6, 8000)
    assert config.summary_model == "claude-haiku-5-5"  # @fast, because the user configured it
    explicit = settings_with(tmp_path, '[context]\nsummary_model = "my-small-model"\n')
    assert agent_config(explicit).summary_model == "my-small-model"
    for bad, message in (
        ("[context]\ncompact_at = 2\n", "compact_at must be a share"),
        ("[context]\ncompact_at = true\n", "compact_at must be a share"),
        ("[context]\ntail_tokens = 10\n", "tail_tokens must be a number of tokens"),
        ("[context]\nkeep = 1\n", "[context] has no setting 'keep'"),
        ("context = 1\n", "[context] must be a table"),
    ):
        with pytest.raises(SettingsError) as error:
            settings_with(tmp_path, bad)
        assert message in str(error.value)


def test_each_key_is_declared_once_beside_its_field():
    from dataclasses import fields

    from cmdop_tui.config.keys import CONTEXT, MACHINE, PROFILE, SANDBOX
    from cmdop_tui.config.model import AgentProfile, ContextSettings
    from cmdop_tui.machines.spec import MachineSpec

    assert set(PROFILE.names) == {f.name for f in fields(AgentProfile)} - {"name"}
    assert set(CONTEXT.names) == {f.name for f in fields(ContextSettings)}
    assert set(MACHINE.names) <= {f.name for f in fields(MachineSpec)}
    for key in (*CONTEXT.names, *SANDBOX.names):
        assert f"# {key} = " in FIRST_RUN_TEMPLATE  # the template shows every key of its sections


def test_a_models_stream_idle_timeout_is_set_per_model_and_the_local_model_waits_longer(tmp_path):
    from cmdop_tui.config.template import FIRST_RUN_TEMPLATE as template
    from cmdop_tui.session.assembly import local_settings, stream_policy
    from cmdop_tui.session.local_model import LOCAL_IDLE_TIMEOUT_S

    settings = settings_with(tmp_path, '[models."slow-box"]\nidle_timeout_s = 45\ncontext_window = 8192\n')
    assert settings.idle_timeouts == {"slow-box": 45.0} and settings.context_windows == {"slow-box": 8192}
    stream = stream_policy(settings)
    assert stream.idle_timeout_for("slow-box") == 45.0 and stream.idle_timeout_for("claude-sonnet-5-5") == 10.0
    local = local_settings(settings, "SmolLM2-135M-Instruct.Q4_1", 8192)
    assert stream_policy(local).idle_timeout_for(local.agent.model) == LOCAL_IDLE_TIMEOUT_S > 10.0
    chosen = local_settings(settings_with(tmp_path, '[models."local:tiny"]\nidle_timeout_s = 300\n'), "tiny", 4096)
    assert stream_policy(chosen).idle_timeout_for("local:tiny") == 300.0  # the user's word wins
    for bad in ('[models."m"]\nidle_timeout_s = 0\n', '[models."m"]\nidle_timeout_s = "long"\n'):
        with pytest.raises(SettingsError, match=r'\[models\."m"\] idle_timeout_s must be a number of seconds'):
            settings_with(tmp_path, bad)
    assert "# idle_timeout_s = 60" in template and "a model on a CPU needs more" in template
