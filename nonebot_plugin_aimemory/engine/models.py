"""Context window sizes of common models, for when no budget is configured."""

from __future__ import annotations

DEFAULT_CONTEXT_TOKENS = 128_000
# An unset budget never exceeds this: a window filled to a million tokens would cost that
# much on every message. Set aimemory_max_context_tokens to go higher on purpose.
MAX_DEFAULT_BUDGET_TOKENS = 128_000

# Checked in order against the lower-cased model name, so a provider prefix such as
# "deepseek-ai/", "Qwen/", "moonshotai/" or "zai-org/" changes nothing, and more specific
# patterns come first. Where sources disagree the smaller figure is kept: a window counted
# too small only compresses earlier, one counted too large overflows.
# Sources, checked 2026-12:
# - OpenAI's model pages (as quoted by Vercel's AI Gateway and others): gpt-4.1 1 047 576;
#   gpt-5, -mini, -nano, 5.1, 5.2 and 5.4-mini 400 000; gpt-5.4 and gpt-5.5 1 050 000;
#   gpt-5-chat 128 000; o1, o3, o3-mini, o4-mini 200 000; o1-mini and o1-preview 128 000.
# - DeepSeek's API docs: deepseek-v4-flash and -pro 1 048 576. deepseek-chat and
#   deepseek-reasoner (V3.x, 128K; V4 Flash aliases until retired on 2026-07-24) and the
#   open V3/R1 weights served elsewhere: 128K.
# - Alibaba Model Studio: qwen3-max 262 144, qwen-plus 131 072 (1M from the 2025-07-28
#   snapshot on), qwen-turbo and qwen-flash 1 000 000, qwen-long 10 000 000, qwen-max
#   32 768. Qwen3 open weights (their config, so Ollama's and vLLM's default): 40 960, the
#   2507 Instruct/Thinking updates, Qwen3-Coder, Qwen3-Next and the Qwen3.x generations
#   (qwen3.6 open weights; hosted qwen3.6-plus and qwen3.7-max have ~1M) 262 144;
#   Qwen2.5: 131 072.
# - Moonshot: kimi-k2.x (kimi-k2.5, kimi-k2.6) 262 144; moonshot-v1-8k/32k/128k as named.
# - Zhipu / Z.ai: glm-4.5 131 072, glm-4 128 000; glm-4.6, glm-4.7, glm-5 and glm-5.1 200K;
#   glm-5.2 1 048 576.
# - Meta's and Google's model cards: Llama 3.1-3.3 and Llama 4 (as commonly served)
#   131 072, Llama 3 8 192; Gemma 4 small models and Gemma 3 131 072 (1B: 32 768), Gemma 2
#   8 192.
CONTEXT_WINDOWS: tuple[tuple[str, int], ...] = (
    # OpenAI
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("gpt-4-turbo", 128_000),
    ("gpt-5-chat", 128_000),
    ("gpt-5.4-mini", 400_000),
    ("gpt-5.4-nano", 400_000),
    ("gpt-5.4", 1_050_000),
    ("gpt-5.5", 1_050_000),
    ("gpt-5", 400_000),
    ("gpt-3.5", 16_385),
    # DeepSeek
    ("deepseek-v4", 1_048_576),
    ("deepseek-reasoner", 128_000),
    ("deepseek-chat", 128_000),
    ("deepseek-r1", 128_000),
    ("deepseek-v3", 128_000),
    # Qwen
    ("qwen3-max", 262_144),
    ("qwen-max", 32_768),
    ("qwen-plus", 131_072),
    ("qwen-turbo", 1_000_000),
    ("qwen-flash", 1_000_000),
    ("qwen-long", 10_000_000),
    ("qwen3.", 262_144),
    ("qwen3-coder", 262_144),
    ("qwen3-next", 262_144),
    ("instruct-2507", 262_144),
    ("thinking-2507", 262_144),
    ("qwen3", 40_960),
    ("qwen2.5", 131_072),
    # Kimi
    ("kimi-k2", 262_144),
    ("moonshot-v1-8k", 8_192),
    ("moonshot-v1-32k", 32_768),
    ("moonshot-v1-128k", 131_072),
    ("kimi", 131_072),
    # GLM
    ("glm-5.2", 1_048_576),
    ("glm-5", 200_000),
    ("glm-4.6", 200_000),
    ("glm-4.7", 200_000),
    ("glm-4.5", 131_072),
    ("glm-4", 128_000),
    ("glm-z1", 32_768),
    # Llama and Gemma, usually local (Ollama names like llama3.1:8b and gemma3:12b)
    ("llama-4", 131_072),
    ("llama4", 131_072),
    ("llama-3.1", 131_072),
    ("llama-3.2", 131_072),
    ("llama-3.3", 131_072),
    ("llama3.1", 131_072),
    ("llama3.2", 131_072),
    ("llama3.3", 131_072),
    ("llama3", 8_192),
    ("llama-3", 8_192),
    ("gemma-4", 131_072),
    ("gemma4", 131_072),
    ("gemma-3-1b", 32_768),
    ("gemma3:1b", 32_768),
    ("gemma-3", 131_072),
    ("gemma3", 131_072),
    ("gemma-2", 8_192),
    ("gemma2", 8_192),
    # OpenAI's o-series last: their short names occur inside other names.
    ("o1-mini", 128_000),
    ("o1-preview", 128_000),
    ("o1", 200_000),
    ("o3", 200_000),
    ("o4-mini", 200_000),
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
