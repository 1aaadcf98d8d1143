"""The model table: the context window of current models by name, whatever the provider
prefix, and the budget used when none is configured (capped at 128 000)."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(
    ("model", "window"),
    [
        ("deepseek-v4-flash", 1_048_576),
        ("deepseek-v4-pro", 1_048_576),
        ("deepseek-chat", 128_000),
        ("deepseek-reasoner", 128_000),
        ("deepseek-ai/DeepSeek-V3", 128_000),
        ("deepseek-ai/DeepSeek-V4-Flash", 1_048_576),
    ],
)
def test_deepseek_models_have_their_context_window(model: str, window: int) -> None:
    from nonebot_plugin_aimemory.engine.models import context_window_for

    assert context_window_for(model) == window


@pytest.mark.parametrize(
    ("model", "window"),
    [
        ("qwen3-max", 262_144),
        ("qwen-plus", 131_072),
        ("qwen-turbo", 1_000_000),
        ("qwen-flash", 1_000_000),
        ("qwen-long", 10_000_000),
        ("qwen-max-latest", 32_768),
        ("qwen3:8b", 40_960),
        ("Qwen/Qwen3-8B", 40_960),
        ("Qwen/Qwen3-235B-A22B-Instruct-2507", 262_144),
        ("qwen3.6-plus", 262_144),
        ("Qwen/Qwen3-Coder-30B-A3B-Instruct", 262_144),
        ("Qwen/Qwen2.5-72B-Instruct", 131_072),
    ],
)
def test_qwen_models_have_their_context_window(model: str, window: int) -> None:
    from nonebot_plugin_aimemory.engine.models import context_window_for

    assert context_window_for(model) == window


@pytest.mark.parametrize(
    ("model", "window"),
    [
        ("kimi-k2.6", 262_144),
        ("kimi-k2.5", 262_144),
        ("moonshotai/Kimi-K2.5", 262_144),
        ("moonshot-v1-8k", 8_192),
        ("moonshot-v1-128k", 131_072),
    ],
)
def test_kimi_models_have_their_context_window(model: str, window: int) -> None:
    from nonebot_plugin_aimemory.engine.models import context_window_for

    assert context_window_for(model) == window


@pytest.mark.parametrize(
    ("model", "window"),
    [
        ("glm-4.5", 131_072),
        ("glm-4.6", 200_000),
        ("zai-org/GLM-4.6", 200_000),
        ("glm-5", 200_000),
        ("glm-5.1", 200_000),
        ("glm-5.2", 1_048_576),
        ("glm-4-plus", 128_000),
    ],
)
def test_glm_models_have_their_context_window(model: str, window: int) -> None:
    from nonebot_plugin_aimemory.engine.models import context_window_for

    assert context_window_for(model) == window


@pytest.mark.parametrize(
    ("model", "window"),
    [
        ("gpt-4.1", 1_047_576),
        ("gpt-4o-mini", 128_000),
        ("gpt-5", 400_000),
        ("gpt-5-mini", 400_000),
        ("gpt-5-chat-latest", 128_000),
        ("gpt-5.4", 1_050_000),
        ("gpt-5.4-mini", 400_000),
        ("o1-mini", 128_000),
        ("o3", 200_000),
        ("o4-mini", 200_000),
    ],
)
def test_openai_models_have_their_context_window(model: str, window: int) -> None:
    from nonebot_plugin_aimemory.engine.models import context_window_for

    assert context_window_for(model) == window


@pytest.mark.parametrize(
    ("model", "window"),
    [
        ("llama3.1:8b", 131_072),
        ("meta-llama/Llama-3.3-70B-Instruct", 131_072),
        ("llama3:8b", 8_192),
        ("gemma3:12b", 131_072),
        ("gemma3:1b", 32_768),
        ("google/gemma-3-27b-it", 131_072),
        ("gemma2:9b", 8_192),
        ("gemma4:e4b", 131_072),
    ],
)
def test_local_llama_and_gemma_models_have_their_context_window(model: str, window: int) -> None:
    from nonebot_plugin_aimemory.engine.models import context_window_for

    assert context_window_for(model) == window


def test_an_unknown_model_gets_128000() -> None:
    from nonebot_plugin_aimemory.engine.models import context_window_for

    assert context_window_for("some-unknown-model") == 128_000


def test_the_default_budget_is_capped_at_128000() -> None:
    from nonebot_plugin_aimemory.engine.models import default_budget_for

    assert default_budget_for("deepseek-v4-flash") == 128_000  # a 1M window costs too much


def test_the_default_budget_of_a_small_model_is_its_window() -> None:
    from nonebot_plugin_aimemory.engine.models import default_budget_for

    assert default_budget_for("qwen3:8b") == 40_960


def test_every_preset_model_is_in_the_table() -> None:
    from nonebot_plugin_aimemory.config import PROVIDER_PRESETS
    from nonebot_plugin_aimemory.engine.models import CONTEXT_WINDOWS

    for preset in PROVIDER_PRESETS.values():
        if preset.model:
            assert any(pattern in preset.model.lower() for pattern, _ in CONTEXT_WINDOWS)
