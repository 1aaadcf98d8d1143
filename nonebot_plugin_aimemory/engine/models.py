"""Context window sizes of common models, for when no budget is configured."""

from __future__ import annotations

DEFAULT_CONTEXT_TOKENS = 128_000
# An unset budget never exceeds this: a window filled to a million tokens would cost that
# much on every message. Set aimemory_max_context_tokens to go higher on purpose.
MAX_DEFAULT_BUDGET_TOKENS = 128_000

# Checked in order against the lower-cased model name (provider prefixes such as
# "deepseek-ai/" or "Qwen/" included), so more specific patterns come first.
CONTEXT_WINDOWS: tuple[tuple[str, int], ...] = (
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("gpt-4-turbo", 128_000),
    ("gpt-5", 400_000),
    ("gpt-3.5", 16_385),
    ("o1-mini", 128_000),
    ("o1", 200_000),
    ("o3", 200_000),
    ("o4-mini", 200_000),
    ("deepseek-reasoner", 128_000),
    ("deepseek-chat", 128_000),
    ("deepseek-r1", 128_000),
    ("deepseek-v3", 128_000),
    ("qwen-max", 32_768),
    ("qwen-plus", 131_072),
    ("qwen-turbo", 1_000_000),
    ("qwen-long", 10_000_000),
    ("qwen3-max", 262_144),
    ("qwen3", 131_072),
    ("qwen2.5", 131_072),
    ("glm-4", 128_000),
    ("glm-z1", 32_768),
    ("moonshot-v1-8k", 8_192),
    ("moonshot-v1-32k", 32_768),
    ("moonshot-v1-128k", 131_072),
    ("kimi-k2", 131_072),
    ("kimi", 131_072),
    ("llama-3.1", 131_072),
    ("llama-3.2", 131_072),
    ("llama-3.3", 131_072),
    ("llama3.1", 131_072),
    ("llama3.2", 131_072),
    ("llama3.3", 131_072),
    ("llama3", 8_192),
    ("llama-3", 8_192),
)


def context_window_for(model: str) -> int:
    """The model's context window in tokens (128 000 when the model is not known)."""
    name = model.lower()
    for pattern, size in CONTEXT_WINDOWS:
        if pattern in name:
            return size
    return DEFAULT_CONTEXT_TOKENS


def default_budget_for(model: str) -> int:
    """The token budget used when none is configured."""
    return min(context_window_for(model), MAX_DEFAULT_BUDGET_TOKENS)
