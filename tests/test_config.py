"""Configuration: zero-config start, empty values from .env, invalid values named."""

from __future__ import annotations

import pytest
from pydantic import ValidationError


def test_every_key_has_a_default() -> None:
    from nonebot_plugin_aimemory.config import Config

    config = Config()
    assert config.aimemory_api_key == ""
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
    assert describe_validation_error(caught.value).startswith("aimemory_group_allowlist")
