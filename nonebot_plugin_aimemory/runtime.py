"""The plugin's running state: database, stores, HTTP pool, LLM client, sessions, janitor.

Built in `driver.on_startup`, torn down in `on_shutdown`; nothing here runs at import time.
Tests start a fresh Runtime on the same database file to exercise a real restart.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import sqlite3
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx

from . import prompts
from .chatlog.reviewer import MemoryReviewer, ReviewScheduler
from .chatlog.writer import ChatLog
from .config import DEFAULT_API_BASE, Config
from .conversation.autoclear import GroupAutoClear
from .conversation.sessions import SessionCache, group_key
from .engine.chatbot import ChatBot, HistoryStore
from .engine.compressor import CompressionPolicy, Compressor
from .engine.embeddings import EmbeddingClient
from .engine.hooks import PreCompactHooks
from .engine.llm import Endpoint, LLMClient
from .engine.models import context_window_for, default_budget_for
from .engine.tokens import TiktokenCounter
from .engine.tools import Tool, ToolRegistry
from .media.images import ImageReader
from .memory.extractor import FactExtractor
from .memory.service import MemoryService
from .onebot.content import ContentRenderer, MemberNames
from .onebot.events import resolve_timezone
from .onebot.outbound import ReplyBuilder
from .store.chat_log_store import ChatLogStore
from .store.counters import GroupCounterStore
from .store.database import Database
from .store.history_store import MemoryOnlyHistoryStore, SqliteHistoryStore
from .store.image_store import ImageDescriptionStore
from .store.memory_store import MemoryStore
from .store.review_store import ReviewStore
from .text.segmenter import initialise as initialise_segmenter

logger = logging.getLogger("nonebot_plugin_aimemory")

# (runtime, session key) -> tools bound to that session. Bound once, when the session is built.
ToolProvider = Callable[["Runtime", str], Iterable[Tool]]
_tool_providers: list[ToolProvider] = []

# Public: callbacks told which messages are about to be folded into a summary.
pre_compact = PreCompactHooks()


def register_tool_provider(provider: ToolProvider) -> ToolProvider:
    """Add tools to every session built from now on (usable as a decorator)."""
    if provider not in _tool_providers:
        _tool_providers.append(provider)
    return provider


def unregister_tool_provider(provider: ToolProvider) -> None:
    """Remove a provider added with `register_tool_provider`; unknown ones are ignored."""
    if provider in _tool_providers:
        _tool_providers.remove(provider)


@dataclass
class Runtime:
    """Everything the matchers and commands need while the bot runs."""

    config: Config
    database: Database | None
    history: HistoryStore
    http: httpx.AsyncClient
    llm: LLMClient
    compressor: Compressor
    counter: TiktokenCounter
    sessions: SessionCache
    autoclear: GroupAutoClear
    memory: MemoryService | None = None
    extractor: FactExtractor | None = None
    chat_log: ChatLog | None = None
    reviews: ReviewScheduler | None = None
    content: ContentRenderer | None = None
    replies: ReplyBuilder | None = None
    _background: set[asyncio.Task[Any]] = field(default_factory=set)

    @property
    def persistent(self) -> bool:
        """Whether history is kept in a database rather than in memory only."""
        return self.database is not None

    @property
    def configured(self) -> bool:
        """Usable without a key only when pointed at a server of one's own (Ollama, vLLM)."""
        return bool(self.config.aimemory_api_key) or (
            self.config.aimemory_api_base != DEFAULT_API_BASE
        )

    @property
    def budget_tokens(self) -> int:
        """The context budget, in tokens, of each conversation window."""
        return self.compressor.policy.budget_tokens

    def build_chatbot(self, key: str) -> ChatBot:
        """A ChatBot for `key` with the tools every registered provider offers."""
        tools = ToolRegistry()
        for provider in _tool_providers:
            try:
                for tool in provider(self, key):
                    tools.register(tool)
            except Exception:
                # Another plugin's broken provider must not take the conversation down.
                logger.exception(
                    "tool provider %r failed for %s; its tools are skipped", provider, key
                )
        return ChatBot(
            key,
            llm=self.llm,
            store=self.history,
            counter=self.counter,
            system_prompt=self.system_prompt_for(key),
            tools=tools,
            max_tool_rounds=self.config.aimemory_max_tool_rounds,
            send_images=self.config.aimemory_multimodal,
            compressor=self.compressor,
        )

    def system_prompt_for(self, key: str) -> str:
        """The persona plus where the chat happens; identical every turn (prefix caching)."""
        return build_system_prompt(self.config.aimemory_system_prompt, key)

    async def clear_session(self, key: str) -> None:
        """Clear one conversation's window, in memory and in the store, under its lock."""
        session = self.sessions.get_or_create(key, touch=False)
        async with session.lock:
            await session.bot.clear()
            session.loaded = True

    @asynccontextmanager
    async def group_cleared_in_memory(self, group_id: str) -> AsyncIterator[None]:
        """Clear a group's window in memory and hold its session until the caller has
        cleared the stored copy (auto-clear batches those deletes)."""
        session = self.sessions.get_or_create(group_key(group_id), touch=False)
        async with session.lock:
            session.bot.forget()
            session.loaded = True
            yield

    @classmethod
    async def start(cls, config: Config, db_path: str) -> Runtime:
        """Open everything; an unusable database degrades to in-memory history."""
        database = await _open_database(db_path)
        history: HistoryStore = (
            SqliteHistoryStore(database) if database else MemoryOnlyHistoryStore()
        )
        http = httpx.AsyncClient(
            timeout=httpx.Timeout(config.aimemory_request_timeout, connect=10.0),
            limits=httpx.Limits(max_connections=64, max_keepalive_connections=16),
        )
        llm = llm_client(http, config, "main")
        counter = TiktokenCounter()
        pre_compact.wait_seconds = config.aimemory_precompact_wait_seconds
        compressor = Compressor(
            llm_client(http, config, "compressor"),
            counter,
            compression_policy(config),
            pre_compact,
            prompts=prompts.SUMMARY_PROMPTS,
        )
        runtime = cls(
            config=config,
            database=database,
            history=history,
            http=http,
            llm=llm,
            compressor=compressor,
            counter=counter,
            sessions=SessionCache(
                lambda key: runtime.build_chatbot(key),
                max_idle_seconds=config.aimemory_session_max_idle_minutes * 60,
                max_sessions=config.aimemory_session_max_sessions,
            ),
            autoclear=GroupAutoClear(
                config.aimemory_group_autoclear_after,
                GroupCounterStore(database) if database else None,
                lambda group_id: runtime.group_cleared_in_memory(group_id),
            ),
        )
        runtime.start_content(database)
        await runtime.autoclear.load()
        await asyncio.to_thread(counter.load)
        if database is not None:
            await asyncio.to_thread(initialise_segmenter)
            runtime.start_memory(database)
            runtime.start_chat_log(database)
        runtime.sessions.start_janitor(config.aimemory_janitor_interval_seconds)
        if not runtime.configured:
            logger.warning(
                "aimemory: no API key (aimemory_api_key) is set; addressed messages get a "
                "'not configured' reply until one is configured"
            )
        elif not config.aimemory_api_key and not _is_local_url(config.aimemory_api_base):
            logger.warning(
                "aimemory: no API key (aimemory_api_key) is set for %s; only a server of "
                "your own (Ollama, vLLM) works without one",
                config.aimemory_api_base,
            )
        return runtime

    def start_content(self, database: Database | None) -> None:
        """How QQ content is read (images, names, quotes) and how replies are written."""
        config = self.config
        vision = llm_client(self.http, config, "vision") if config.aimemory_vision_model else None
        images = ImageReader(
            self.http,
            max_bytes=config.aimemory_image_max_bytes,
            multimodal=config.aimemory_multimodal,
            vision=vision,
            cache=ImageDescriptionStore(database) if database else None,
        )
        members = MemberNames()
        self.content = ContentRenderer(images, members)
        self.replies = ReplyBuilder(
            images, members, public_only=not config.aimemory_reply_image_allow_private
        )

    def start_memory(self, database: Database) -> None:
        """Long-term memory exists only with a database; without one the tools and
        commands are off (they say so) and chat goes on."""
        config = self.config
        embedder = None
        if config.aimemory_embedding_model:
            embedder = EmbeddingClient(self.http, endpoint_for(config, "embedding"))
        self.memory = MemoryService(
            MemoryStore(database),
            max_entries=config.aimemory_memory_max_entries,
            mask_pii=config.aimemory_memory_mask_pii,
            embedder=embedder,
        )
        if config.aimemory_memory_extract_on_compact:
            self.extractor = FactExtractor(self.compressor.llm, self.memory)
            pre_compact.register(self.extractor.on_pre_compact)
        if embedder is not None:
            self.spawn(self.memory.backfill_embeddings())

    def start_chat_log(self, database: Database) -> None:
        """The chat log, and the reviewer that reads it, when chat may be sent out."""
        config = self.config
        external = config.aimemory_review_external_context
        review_store = ReviewStore(database) if external else None
        self.chat_log = ChatLog(
            ChatLogStore(database),
            review_store,
            flush_seconds=config.aimemory_chat_log_flush_seconds,
            keep_days=config.aimemory_chat_log_keep_days,
        )
        self.chat_log.start()
        if review_store is None or self.memory is None:
            return
        reviewer = MemoryReviewer(
            llm_client(self.http, config, "review"),
            self.memory,
            self.chat_log.store,
            persona=config.aimemory_system_prompt,
            zone=resolve_timezone(config.aimemory_timezone),
        )
        self.reviews = ReviewScheduler(
            reviewer,
            review_store,
            tick_seconds=config.aimemory_review_tick_seconds,
            interval_seconds=config.aimemory_review_interval_seconds,
            min_new_rows=config.aimemory_review_min_new_rows,
            enabled_by_default=config.aimemory_review_enabled,
        )
        self.reviews.start()

    def spawn(self, work: Any) -> None:
        """Run background work owned by this runtime (awaited at stop)."""
        task = asyncio.ensure_future(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def stop(self) -> None:
        """Stop sessions and the janitor, flush counters and writes, close connections."""
        await self.sessions.close()
        await self.autoclear.close()
        if self.reviews is not None:
            await self.reviews.close()
        if self.chat_log is not None:
            await self.chat_log.close()
        if self.extractor is not None:
            pre_compact.unregister(self.extractor.on_pre_compact)
            await self.extractor.drain()
        await pre_compact.drain()
        if self._background:
            await asyncio.gather(*self._background, return_exceptions=True)
        if self.memory is not None:
            await self.memory.close()  # a backfill after an embedding outage may be running
        if self.database is not None:
            await self.database.close()
        await self.http.aclose()


# QQ shows Markdown as raw symbols; image links and `@QQ号` are turned into real images and
# @s by the reply builder, so the model is told it may use them.
GROUP_CHAT_NOTE = (
    "你正在 QQ 群 {target} 中聊天。每条用户消息以“[时间] 昵称(QQ号)：”开头，注明是谁在说话。"
    "QQ 不显示 Markdown：用纯文本回复，不要用 **加粗**、# 标题或表格。"
    "要发图片就写图片链接；要提醒群里的某人就写 @QQ号。"
)
PRIVATE_CHAT_NOTE = (
    "你正在和 QQ 用户 {target} 私聊。每条用户消息以“[时间]”开头。"
    "QQ 不显示 Markdown：用纯文本回复，不要用 **加粗**、# 标题或表格。要发图片就写图片链接。"
)


def build_system_prompt(persona: str, key: str) -> str:
    """The system prompt of session `key`: the persona, then where the chat happens."""
    kind, _, target = key.partition(":")
    note = GROUP_CHAT_NOTE if kind == "g" else PRIVATE_CHAT_NOTE
    return f"{persona}\n\n{note.format(target=target)}"


def llm_client(http: httpx.AsyncClient, config: Config, role: str) -> LLMClient:
    """A chat client for a model role, sharing the process's connection pool."""
    return LLMClient(
        http,
        endpoint_for(config, role),
        timeout_seconds=config.aimemory_request_timeout,
        max_retries=config.aimemory_llm_max_retries,
    )


# Each model role falls back, key by key, to another role's settings when left empty.
_FALLBACK_ROLE = {
    "compressor": "main",
    "review": "compressor",
    "vision": "main",
    "embedding": "main",
}


def endpoint_for(config: Config, role: str) -> Endpoint:
    """The endpoint of a model role: main, compressor, review, vision or embedding."""
    if role == "main":
        return Endpoint(config.aimemory_api_base, config.aimemory_api_key, config.aimemory_model)
    parent = endpoint_for(config, _FALLBACK_ROLE[role])
    return Endpoint(
        getattr(config, f"aimemory_{role}_api_base") or parent.api_base,
        getattr(config, f"aimemory_{role}_api_key") or parent.api_key,
        getattr(config, f"aimemory_{role}_model") or parent.model,
    )


def compression_policy(config: Config) -> CompressionPolicy:
    """Budget from config or the model table; the rest defaults to fractions of it."""
    budget = config.aimemory_max_context_tokens or default_budget_for(config.aimemory_model)
    compressor_window = context_window_for(endpoint_for(config, "compressor").model)
    return CompressionPolicy.for_budget(
        budget,
        threshold=config.aimemory_compress_threshold,
        keep_recent_tokens=config.aimemory_compress_keep_recent_tokens,
        summary_max_tokens=config.aimemory_compress_summary_max_tokens,
        chunk_tokens=config.aimemory_compress_chunk_tokens
        or min(compressor_window // 2, max(budget * 7 // 10, 256)),
    )


def _is_local_url(url: str) -> bool:
    """Whether an API base points at this machine or a private network (Ollama, vLLM)."""
    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        return False
    if host == "localhost" or host.endswith(".local"):
        return True
    try:
        return not ipaddress.ip_address(host).is_global
    except ValueError:
        return False


async def _open_database(db_path: str) -> Database | None:
    try:
        database = await Database.open(db_path)
    except (OSError, sqlite3.Error) as exc:
        logger.error(
            "aimemory: cannot open database %s (%s); running with in-memory history only: "
            "conversations will not survive a restart",
            db_path,
            exc,
        )
        return None
    logger.info("aimemory: database %s opened", db_path)
    return database


_current: Runtime | None = None


def current_runtime() -> Runtime | None:
    """The runtime in use, or None before startup and after shutdown."""
    return _current


def install_runtime(runtime: Runtime | None) -> None:
    """Set (or with None, clear) the runtime the matchers use."""
    global _current
    _current = runtime
