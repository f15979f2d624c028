"""Which LLMs a run uses: --llm, else the config file's `llm` entry, else CUCO_LLM; bad settings
are refused with the fix."""

import pytest

import design_space as ds
from agents.llm.fake_server import placeholder_key
from cuco.agent_wiring import LLMSettings, configured_names, enable_hint


def test_explicit_llm_names_win_over_config_and_environment(tmp_path, monkeypatch):
    (tmp_path / "cuco.toml").write_text('llm = ["anthropic:claude-sonnet-4-5"]\n')
    monkeypatch.setenv("CUCO_LLM", "openai:gpt-4.1")
    assert configured_names(("openai:o3",), config_files=(tmp_path / "cuco.toml",)) == ("openai:o3",)


def test_the_config_file_entry_comes_before_the_environment(tmp_path, monkeypatch):
    (tmp_path / "cuco.toml").write_text('llm = ["openai-compatible:qwen@http://localhost:8000/v1"]\n')
    monkeypatch.setenv("CUCO_LLM", "openai:gpt-4.1")
    assert configured_names((), config_files=(tmp_path / "cuco.toml",)) == (
        "openai-compatible:qwen@http://localhost:8000/v1",)


def test_the_environment_names_llms_when_nothing_else_does(tmp_path, monkeypatch):
    monkeypatch.setenv("CUCO_LLM", "openai:gpt-4.1, anthropic:claude-sonnet-4-5")
    assert configured_names((), config_files=(tmp_path / "absent.toml",)) == (
        "openai:gpt-4.1", "anthropic:claude-sonnet-4-5")
    monkeypatch.delenv("CUCO_LLM")
    assert configured_names((), config_files=(tmp_path / "absent.toml",)) == ()


def test_a_broken_config_file_is_refused_with_its_path(tmp_path):
    bad = tmp_path / "cuco.toml"
    bad.write_text("llm = [unterminated\n")
    with pytest.raises(ds.ConfigError, match="cuco.toml") as err:
        configured_names((), config_files=(bad,))
    assert "TOML" in err.value.fix


def test_settings_out_of_range_are_refused():
    with pytest.raises(ds.ConfigError, match="--llm-share"):
        LLMSettings(share=1.5).check()
    with pytest.raises(ds.ConfigError, match="--llm-budget"):
        LLMSettings(budget_usd=-1).check()


def test_the_hint_names_the_keys_when_none_is_set_and_the_provider_when_one_is(monkeypatch):
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    assert "OPENAI_API_KEY" in enable_hint() and "--llm openai:<model>" in enable_hint()
    planted = placeholder_key()  # made at run time: nothing key-shaped is committed
    monkeypatch.setenv("ANTHROPIC_API_KEY", planted)
    assert "--llm anthropic:<model>" in enable_hint() and planted not in enable_hint()


def test_a_budget_is_refused_for_a_model_whose_price_is_unknown(tmp_path, monkeypatch, example_spec):
    import cuco
    monkeypatch.setenv("OPENAI_API_KEY", placeholder_key())
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # never called: refused before any call
    settings = LLMSettings(names=("openai:no-such-model-xyz",), budget_usd=1.0)
    with pytest.raises(ds.ConfigError, match="no price is known") as err:
        cuco.evolve(example_spec, run_dir=tmp_path, generations=1, population=1, llm=settings)
    assert "CUCO_LLM_PRICES" in err.value.fix
