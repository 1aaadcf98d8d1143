"""The model providers `aimemory_provider` names: where each one's OpenAI-compatible API
lives and the model to start with."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from .media import is_local_url

DEFAULT_PROVIDER = "openai"


@dataclass(frozen=True)
class ProviderPreset:
    """Where a provider's OpenAI-compatible API lives and a sensible model to start with
    (empty: there is none, the model must be named)."""

    api_base: str
    model: str


# `aimemory_provider` fills in the API base and model left empty. Checked 2026-12: DeepSeek's
# API docs (api-docs.deepseek.com: base https://api.deepseek.com, models deepseek-v4-flash and
# deepseek-v4-pro; deepseek-chat/-reasoner retired 2026-07-24), SiliconFlow's V4 models under
# their Hugging Face ids (projects calling api.siliconflow.cn/v1 with
# deepseek-ai/DeepSeek-V4-Flash), Alibaba Model Studio's OpenAI-compatible mode
# (help.aliyun.com), Moonshot's kimi-k2.6 (its list-models API as quoted by promptfoo's
# docs), Zhipu's glm-5.1 (open.bigmodel.cn), Ollama's OpenAI compatibility (qwen3:8b from its
# library). A vLLM server serves the model it was started with: there is no default to guess.
PROVIDER_PRESETS: dict[str, ProviderPreset] = {
    "openai": ProviderPreset("https://api.openai.com/v1", "gpt-4o-mini"),
    "deepseek": ProviderPreset("https://api.deepseek.com", "deepseek-v4-flash"),
    "siliconflow": ProviderPreset("https://api.siliconflow.cn/v1", "deepseek-ai/DeepSeek-V4-Flash"),
    "dashscope": ProviderPreset("https://dashscope.aliyuncs.com/compatible-mode/v1", "qwen-plus"),
    "moonshot": ProviderPreset("https://api.moonshot.cn/v1", "kimi-k2.6"),
    "zhipu": ProviderPreset("https://open.bigmodel.cn/api/paas/v4", "glm-5.1"),
    "ollama": ProviderPreset("http://127.0.0.1:11434/v1", "qwen3:8b"),
    "vllm": ProviderPreset("http://127.0.0.1:8000/v1", ""),
}
# Hosts of the hosted presets: a key is needed there (a proxy or a server of one's own may
# do without one).
HOSTED_API_HOSTS = frozenset(
    urlsplit(preset.api_base).hostname
    for preset in PROVIDER_PRESETS.values()
    if not is_local_url(preset.api_base)
)
