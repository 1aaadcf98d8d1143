"""Configuration: zero-config start, empty values from .env, invalid values named, secrets
never shown (.env.example is checked in tests/test_env_example.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError


def test_every_key_has_a_default() -> None:
    from nonebot_plugin_aimemory.config import Config

    config = Config()
    assert config.aimemory_api_key.get_secret_value() == ""
    assert config.aimemory_max_context_tokens is None
    assert config.aimemory_group_autoclear_after == 30


def test_empty_values_from_env_mean_not_set() -> None:
    from nonebot_plugin_aimemory.config import Config

    config = Config(aimemory_max_context_tokens="", aimemory_compress_chunk_tokens=" ")
    assert config.aimemory_max_context_tokens is None
    assert config.aimemory_compress_chunk_tokens is None


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("aimemory_request_timeout", "abc"),
        ("aimemory_api_base", "api.openai.com"),
        ("aimemory_session_max_sessions", -1),
        ("aimemory_compress_threshold", 2),
        ("aimemory_chat_log_keep_days", 0),
    ],
)
def test_an_invalid_value_is_reported_with_its_key(key: str, value: object) -> None:
    from nonebot_plugin_aimemory.config import Config, describe_validation_error

    with pytest.raises(ValidationError) as caught:
        Config(**{key: value})
    assert describe_validation_error(caught.value).startswith(f"{key}:")


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        (
            {"aimemory_multimodal": "maybe"},
            "aimemory_multimodal: Input should be a valid boolean, unable to interpret input "
            "(got 'maybe'; allowed: true or false)",
        ),
        (
            {"aimemory_compress_threshold": 2},
            "aimemory_compress_threshold: Input should be less than or equal to 0.95 "
            "(got 2; allowed: >= 0.1 and <= 0.95)",
        ),
        (
            {"aimemory_request_timeout": "abc"},
            "aimemory_request_timeout: Input should be a valid number, unable to parse string "
            "as a number (got 'abc'; allowed: > 0 and <= 3600)",
        ),
        (
            {"aimemory_provider": "azure"},
            "aimemory_provider: must be one of openai, deepseek, siliconflow, dashscope, "
            "moonshot, zhipu, ollama, vllm (or empty) (got 'azure')",
        ),
        (
            {"aimemory_tokenizer": "o200k"},
            "aimemory_tokenizer: Input should be 'estimate' or 'cl100k' (got 'o200k')",
        ),
        (
            {"aimemory_embedding_prefixes": "both"},
            'aimemory_embedding_prefixes: must be auto, none, input_type or "<query prefix>|'
            "<passage prefix>\" (got 'both')",
        ),
    ],
)
def test_an_invalid_value_is_reported_with_what_the_key_allows(
    settings: dict[str, object], expected: str
) -> None:
    from nonebot_plugin_aimemory.config import Config, describe_validation_error

    with pytest.raises(ValidationError) as caught:
        Config(**settings)
    assert describe_validation_error(caught.value) == expected


def test_every_invalid_key_is_reported_once() -> None:
    from nonebot_plugin_aimemory.config import Config, describe_validation_error

    with pytest.raises(ValidationError) as caught:
        Config(aimemory_multimodal="maybe", aimemory_chat_log_keep_days=0)
    described = describe_validation_error(caught.value)

    assert described.count("aimemory_multimodal:") == 1
    assert described.count("aimemory_chat_log_keep_days:") == 1
    assert "; " in described


def test_a_config_error_is_an_ordinary_exception_the_loader_can_catch() -> None:
    from nonebot_plugin_aimemory.config import ConfigError

    assert issubclass(ConfigError, Exception)
    assert not issubclass(ConfigError, SystemExit)


def test_model_roles_fall_back_key_by_key() -> None:

    from nonebot_plugin_aimemory.config import Config

    config = Config(
        aimemory_api_base="https://main.example/v1",
        aimemory_api_key="main-key",
        aimemory_model="main-model",
        aimemory_compressor_model="cheap",
        aimemory_review_api_key="review-key",
        aimemory_vision_model="vision",
    )
    compressor = config.endpoint("compressor")
    assert (compressor.api_base, compressor.api_key, compressor.model) == (
        "https://main.example/v1",
        "main-key",
        "cheap",
    )
    review = config.endpoint("review")
    assert (review.api_key, review.model) == ("review-key", "cheap")
    assert config.endpoint("vision").model == "vision"
    assert config.endpoint("embedding").api_key == "main-key"
    guard = config.endpoint("guard")  # the reviewer's, key by key
    assert (guard.api_base, guard.api_key, guard.model) == (
        "https://main.example/v1",
        "review-key",
        "cheap",
    )


@pytest.mark.parametrize(
    ("value", "groups"),
    [("", []), ("123", [123]), (123, [123]), ("123, 456", [123, 456]), ("123，456", [123, 456]),
     ([123, "456"], [123, 456])],
)  # fmt: skip
def test_group_lists_accept_what_people_write_in_env(value: object, groups: list[int]) -> None:
    from nonebot_plugin_aimemory.config import Config

    config = Config(aimemory_group_allowlist=value, aimemory_group_denylist=value)
    assert config.aimemory_group_allowlist == groups
    assert config.aimemory_group_denylist == groups


def test_a_group_list_with_a_non_number_is_named() -> None:
    from nonebot_plugin_aimemory.config import Config, describe_validation_error

    with pytest.raises(ValidationError) as caught:
        Config(aimemory_group_allowlist="123,abc")
    described = describe_validation_error(caught.value)

    assert described.startswith("aimemory_group_allowlist: item 2: ")
    assert "(got 'abc')" in described
    assert "valid string" not in described  # not the `| str` branch of the union


@pytest.mark.parametrize(
    ("provider", "api_base", "model"),
    [
        ("deepseek", "https://api.deepseek.com", "deepseek-v4-flash"),
        ("siliconflow", "https://api.siliconflow.cn/v1", "deepseek-ai/DeepSeek-V4-Flash"),
        ("ollama", "http://127.0.0.1:11434/v1", "qwen3:8b"),
        ("", "https://api.openai.com/v1", "gpt-4o-mini"),
    ],
)
def test_a_provider_fills_in_the_api_base_and_model(
    provider: str, api_base: str, model: str
) -> None:
    from nonebot_plugin_aimemory.config import Config

    config = Config(aimemory_provider=provider)

    assert (config.aimemory_api_base, config.aimemory_model) == (api_base, model)


def test_every_provider_preset_is_a_valid_configuration() -> None:
    from nonebot_plugin_aimemory.config import PROVIDER_PRESETS, Config

    for provider, preset in PROVIDER_PRESETS.items():
        config = Config(aimemory_provider=provider, aimemory_model=preset.model or "served")
        assert config.aimemory_api_base == preset.api_base


def test_explicit_api_base_and_model_win_over_the_provider() -> None:
    from nonebot_plugin_aimemory.config import Config

    config = Config(
        aimemory_provider="deepseek",
        aimemory_api_base="https://proxy.example/v1/",
        aimemory_model="deepseek-v4-pro",
    )

    assert (config.aimemory_api_base, config.aimemory_model) == (
        "https://proxy.example/v1",
        "deepseek-v4-pro",
    )


def test_the_provider_is_read_whatever_its_case() -> None:
    from nonebot_plugin_aimemory.config import Config

    config = Config(aimemory_provider=" DeepSeek ")

    assert config.aimemory_provider == "deepseek"
    assert config.aimemory_model == "deepseek-v4-flash"


@pytest.mark.parametrize(
    ("settings", "key"),
    [
        ({"aimemory_provider": "azure"}, "aimemory_provider"),
        ({"aimemory_provider": "vllm"}, "aimemory_model"),
    ],
)
def test_an_unknown_provider_or_a_vllm_without_model_is_named(
    settings: dict[str, str], key: str
) -> None:
    from nonebot_plugin_aimemory.config import Config, describe_validation_error

    with pytest.raises(ValidationError) as caught:
        Config(**settings)
    assert describe_validation_error(caught.value).startswith(f"{key}:")


@pytest.mark.parametrize(
    ("provider", "configured"),
    [("deepseek", False), ("zhipu", False), ("ollama", True), ("vllm", True)],
)
def test_a_hosted_provider_needs_a_key_and_a_local_server_does_not(
    provider: str, configured: bool
) -> None:
    from nonebot_plugin_aimemory.config import Config

    config = Config(aimemory_provider=provider, aimemory_model="m", aimemory_api_key="")

    assert config.configured is configured


def test_a_fixed_prompt_within_40_percent_of_the_budget_is_fine() -> None:
    from nonebot_plugin_aimemory.prompt_budget import check_prompt_budget

    assert check_prompt_budget(system_tokens=300, tools_tokens=500, budget_tokens=2000) is None


def test_a_fixed_prompt_over_40_percent_of_the_budget_is_warned_with_the_figures() -> None:
    from nonebot_plugin_aimemory.prompt_budget import check_prompt_budget

    warning = check_prompt_budget(system_tokens=400, tools_tokens=600, budget_tokens=2000)

    assert warning is not None
    for figure in ("400 tokens", "600 tokens", "50%", "2000", "aimemory_max_context_tokens"):
        assert figure in warning


def test_a_budget_smaller_than_the_fixed_prompt_is_a_config_error_naming_the_key() -> None:
    from nonebot_plugin_aimemory.config import ConfigError
    from nonebot_plugin_aimemory.prompt_budget import check_prompt_budget

    with pytest.raises(ConfigError, match="aimemory_max_context_tokens") as caught:
        check_prompt_budget(system_tokens=400, tools_tokens=700, budget_tokens=1024)
    assert "a budget of 1024 tokens" in str(caught.value)
    assert "allowed: at least 1100 (without the warning: over 2750)" in str(caught.value)


async def test_startup_refuses_a_budget_the_system_prompt_and_tools_do_not_fit(plugin) -> None:
    from nonebot_plugin_aimemory.config import ConfigError
    from nonebot_plugin_aimemory.runtime import current_runtime

    with pytest.raises(ConfigError, match="aimemory_max_context_tokens"):
        await plugin.restart(aimemory_max_context_tokens=1024, aimemory_system_prompt="长" * 800)
    assert current_runtime() is None


async def test_startup_warns_when_the_fixed_prompt_takes_much_of_the_budget(
    plugin, plugin_log
) -> None:
    await plugin.restart(aimemory_max_context_tokens=2000)

    warnings = [r.getMessage() for r in plugin_log.records if r.levelname == "WARNING"]
    assert any("aimemory_max_context_tokens" in w and "of the budget" in w for w in warnings)


def test_a_role_with_its_own_host_and_no_key_sends_no_key() -> None:
    from nonebot_plugin_aimemory.config import Config

    config = Config(
        aimemory_api_base="https://api.deepseek.com",
        aimemory_api_key="sk-main",
        aimemory_vision_api_base="http://192.168.1.20:8000/v1",
        aimemory_vision_model="qwen2.5-vl",
        aimemory_embedding_api_base="https://api.deepseek.com",
        aimemory_embedding_model="embed",
        aimemory_review_api_base="https://api.siliconflow.cn/v1",
        aimemory_review_api_key="sk-review",
    )

    assert config.endpoint("vision").api_key == ""
    assert config.endpoint("embedding").api_key == "sk-main"  # same host as the main role
    assert config.endpoint("review").api_key == "sk-review"


SECRETS = {
    "aimemory_api_key": "sk-main-secret",
    "aimemory_vision_api_key": "sk-vision-secret",
    "aimemory_compressor_api_key": "sk-compressor-secret",
    "aimemory_embedding_api_key": "sk-embedding-secret",
    "aimemory_review_api_key": "sk-review-secret",
    "aimemory_guard_api_key": "sk-guard-secret",
    "aimemory_panel_token": "panel-token-secret-0123",
    "aimemory_database_url": "postgresql://aimemory:pg-secret@127.0.0.1:5432/aimemory",
}


def test_api_keys_and_the_panel_token_are_masked_in_every_dump_of_the_config() -> None:
    from nonebot_plugin_aimemory.config import SECRET_KEYS, Config

    config = Config.model_validate(SECRETS)
    shown = [repr(config), str(config), str(config.model_dump()), config.model_dump_json()]

    assert set(SECRETS) == SECRET_KEYS
    for secret in SECRETS.values():
        assert all(secret not in dump for dump in shown)
    assert config.endpoint("main").api_key == "sk-main-secret"
    assert config.endpoint("review").api_key == "sk-review-secret"


def test_an_empty_api_key_is_no_key() -> None:
    from nonebot_plugin_aimemory.config import Config

    config = Config(aimemory_api_key="", aimemory_provider="deepseek")

    assert not config.configured
    assert config.endpoint("main").api_key == ""
    assert config.endpoint("compressor").api_key == ""


@pytest.mark.parametrize("priority", [0, -5, 1001, "high"])
def test_a_matcher_priority_out_of_range_is_named_with_the_range(priority: object) -> None:
    from nonebot_plugin_aimemory.config import Config, describe_validation_error

    with pytest.raises(ValidationError) as caught:
        Config(aimemory_matcher_priority=priority)

    described = describe_validation_error(caught.value)
    assert described.startswith("aimemory_matcher_priority:")
    assert "allowed: >= 1 and <= 1000" in described


def test_other_plugins_commands_are_ignored_and_the_matcher_runs_at_90_by_default() -> None:
    from nonebot_plugin_aimemory.config import Config

    config = Config()

    assert config.aimemory_ignore_other_commands is True
    assert config.aimemory_matcher_priority == 90


def test_the_first_start_without_a_key_says_the_bot_runs_and_what_to_fill_in(
    tmp_path: Path,
) -> None:
    from nonebot_plugin_aimemory import texts
    from nonebot_plugin_aimemory.config import Config

    env_file = tmp_path / ".env"
    notice = Config(aimemory_provider="deepseek").first_start_notice(
        env_file, "ws://127.0.0.1:8080/onebot/v11/ws"
    )

    assert notice is not None
    assert notice.startswith("机器人已启动")
    for named in (str(env_file), "AIMEMORY_API_KEY", "https://api.deepseek.com", "ws://127."):
        assert named in notice
    assert texts.NOT_CONFIGURED in notice  # what people are told meanwhile


@pytest.mark.parametrize(
    "settings",
    [
        {"aimemory_provider": "deepseek", "aimemory_api_key": "sk-x"},
        {"aimemory_provider": "ollama"},
        {"aimemory_api_base": "http://192.168.1.20:8000/v1"},
    ],
    ids=["key set", "ollama", "a server of ones own"],
)
def test_no_first_start_notice_when_the_key_is_set_or_not_needed(
    settings: dict[str, str],
) -> None:
    from nonebot_plugin_aimemory.config import Config

    assert Config(**settings).first_start_notice(None, None) is None
