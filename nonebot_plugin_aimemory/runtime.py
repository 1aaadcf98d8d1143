"""The composition root: builds every part once, in `driver.on_startup`, and tears it down
in `on_shutdown`; nothing here runs at import time. A feature that is off is a null object
with the same interface, so no caller tests for None. Tests start a fresh Runtime on the
same database file to exercise a real restart."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from . import prompts
from .chatlog.commands import ReviewCommands, ReviewsUnavailable
from .chatlog.feature import ChatLogOff, RecordedChat, ReviewsOff
from .chatlog.reviewer import MemoryReviewer
from .chatlog.scheduler import ReviewScheduler
from .chatlog.vectors import row_vectors
from .chatlog.writer import ChatLog, NoReviewMarks
from .config import FIXED_PROMPT_WARN_SHARE, Config, ConfigError, check_prompt_budget
from .conversation.autoclear import GroupAutoClear
from .conversation.commands import Commands, DialogCommands
from .conversation.sessions import SessionCache, group_key
from .conversation.turn import Conversation
from .engine.chatbot import ChatBot
from .engine.compressor import Compressor
from .engine.embeddings import Embedder, EmbeddingClient, EmbeddingRoles, NoEmbeddings
from .engine.history import HistoryStore
from .engine.hooks import PreCompactHooks
from .engine.llm import LLMClient
from .engine.messages import Message
from .engine.shared_http import SharedHttp
from .engine.tokens import (
    ESTIMATE_ERROR_MARGIN,
    EstimatingCounter,
    TiktokenCounter,
    message_tokens,
)
from .engine.tools import Tool, ToolRegistry
from .engine.usage import UsageRecorder
from .media.images import ImageReader, NoDescriptionCache, NoVision
from .memory.commands import MemoryCommands
from .memory.extractor import FactExtractor
from .memory.feature import LongTermMemory, MemoryOff, NoExtraction
from .memory.inject import NoRelevantMemories, RelevantMemories
from .memory.service import MemoryService
from .onebot.content import ContentRenderer
from .onebot.inbound import Inbound
from .onebot.members import MemberNames
from .onebot.outbound import Outbound, ReplyBuilder
from .personas.catalog import PersonaCatalog
from .personas.choices import Personas, UnsavedChoices
from .personas.commands import PersonaCommands
from .personas.keys import chat_key_of, persona_of
from .store.chat_log_store import ChatLogStore
from .store.counters import GroupCounterStore, MemoryOnlyCounterStore
from .store.database import Database, open_database
from .store.history_store import MemoryOnlyHistoryStore, SqliteHistoryStore
from .store.image_store import ImageDescriptionStore
from .store.memory_store import MemoryStore
from .store.persona_store import PersonaStore
from .store.review_store import ReviewStore
from .store.usage_store import MemoryOnlyUsageStore, UsageStore
from .text import jieba_cuts

logger = logging.getLogger("nonebot_plugin_aimemory")

# A QQ group number as long as they get, for measuring a group's system prompt at startup.
PROBE_GROUP_ID = 9_999_999_999
# How long turns in flight (and, after them, extractions) may run on at shutdown before
# they are cancelled; the whole shutdown stays within a few of these.
SHUTDOWN_GRACE_SECONDS = 3.0
# (runtime, session key) -> tools bound to that session. Bound once, when the session is built.
ToolProvider = Callable[["Runtime", str], Iterable[Tool]]


class Extensions:
    """What other plugins add to the conversation: tool providers, and PreCompact callbacks
    told which messages are about to be folded. One registry per plugin, handed to each
    Runtime it starts."""

    def __init__(self) -> None:
        self.tool_providers: list[ToolProvider] = []
        self.pre_compact = PreCompactHooks()

    def register_tool_provider(self, provider: ToolProvider) -> ToolProvider:
        """Add tools to every session built from now on (usable as a decorator)."""
        if provider not in self.tool_providers:
            self.tool_providers.append(provider)
        return provider

    def unregister_tool_provider(self, provider: ToolProvider) -> None:
        """Remove a provider added with `register_tool_provider`; unknown ones are ignored."""
        if provider in self.tool_providers:
            self.tool_providers.remove(provider)


@dataclass
class Runtime:
    """Everything the matcher needs while the bot runs, built once."""

    config: Config
    extensions: Extensions
    http: SharedHttp
    llm: LLMClient
    counter: TiktokenCounter | EstimatingCounter
    compressor: Compressor
    history: HistoryStore
    sessions: SessionCache
    autoclear: GroupAutoClear
    images: ImageReader
    memory: LongTermMemory | MemoryOff
    chat_log: RecordedChat | ChatLogOff
    inbound: Inbound
    conversation: Conversation
    outbound: Outbound
    personas: Personas
    # Token usage of every model call, per chat, day and role (engine/usage.py).
    usage: UsageRecorder
    _database: Database | None = field(default=None, repr=False)
    # Main-model clients of personas that name a model of their own, by model.
    _persona_llms: dict[str, LLMClient] = field(default_factory=dict, repr=False)

    @property
    def persistent(self) -> bool:
        """Whether history is kept in a database rather than in memory only."""
        return self._database is not None

    @property
    def database(self) -> Database:
        """The open database (only when `persistent`)."""
        if self._database is None:
            raise RuntimeError("running without a database")
        return self._database

    @property
    def budget_tokens(self) -> int:
        """The context budget, in tokens, of each conversation window."""
        return self.compressor.policy.budget_tokens

    def build_chatbot(self, key: str) -> ChatBot:
        """A ChatBot for the window `key` (a chat's, or a persona's part of it: see
        personas/keys.py) with the built-in tools and every provider's. Memory tools are
        bound to the persona's memories, chat-log tools to the chat's log."""
        tools = ToolRegistry()
        builtin = self.builtin_tools(key)
        for tool in builtin:
            tools.register(tool)
        for provider in self.extensions.tool_providers:
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
            llm=self.llm_for(self.personas.named(persona_of(key)).model),
            store=self.history,
            counter=self.counter,
            system_prompt=self.system_prompt_for(key, [tool.name for tool in builtin]),
            tools=tools,
            max_tool_rounds=self.config.aimemory_max_tool_rounds,
            send_images=self.config.aimemory_multimodal,
            compressor=self.compressor,
        )

    def builtin_tools(self, key: str) -> list[Tool]:
        """The memory tools of window `key` and the chat-log tools of its chat."""
        return [*self.memory.tools(key), *self.chat_log.tools(chat_key_of(key))]

    def system_prompt_for(self, key: str, builtin_names: Sequence[str] | None = None) -> str:
        """The persona's prompt, where the chat happens and the rules of the built-in tools
        the session has (`builtin_names` when the caller has built them; none without a
        database); identical every turn (prefix caching)."""
        if builtin_names is None:
            builtin_names = [tool.name for tool in self.builtin_tools(key)]
        persona = self.personas.named(persona_of(key))
        return prompts.build_system_prompt(persona.prompt, chat_key_of(key), builtin_names)

    def llm_for(self, model: str | None) -> LLMClient:
        """The main model's client, or one for the model a persona names instead."""
        if not model or model == self.llm.model:
            return self.llm
        client = self._persona_llms.get(model)
        if client is None:
            endpoint = replace(self.config.endpoint("main"), model=model)
            client = self._persona_llms[model] = LLMClient(
                self.http,
                endpoint,
                timeout_seconds=self.config.aimemory_request_timeout,
                max_retries=self.config.aimemory_llm_max_retries,
                role="main",
                meter=self.usage,
            )
        return client

    @asynccontextmanager
    async def group_cleared_in_memory(self, group_id: str) -> AsyncIterator[str]:
        """Clear the window of a group's current persona in memory and hold its session
        until the caller has cleared the stored copy (auto-clear batches those deletes);
        yields that window's key."""
        key = self.personas.window_key(group_key(group_id))
        session = self.sessions.get_or_create(key, touch=False)
        async with session.lock:
            session.bot.forget()
            session.loaded = True
            yield key

    @classmethod
    async def start(
        cls,
        config: Config,
        db_path: str,
        extensions: Extensions | None = None,
        personas_dir: Path | None = None,
    ) -> Runtime:
        """Open everything; an unusable database degrades to in-memory history. Persona
        files are read from `aimemory_personas_dir`, else `personas_dir` (the plugin's
        data folder), else a `personas` folder beside the database."""
        return await _Builder(config, extensions or Extensions()).build(db_path, personas_dir)

    async def stop(self) -> None:
        """Stop sessions (turns in flight get a grace period, queued messages are kept
        unanswered), flush counters and writes, let background work end, close all;
        bounded even with model calls in flight."""
        await self.conversation.close(SHUTDOWN_GRACE_SECONDS)
        await self.sessions.close()
        await self.autoclear.close()
        await self.chat_log.close()
        self.extensions.pre_compact.unregister(self.memory.extractor.on_pre_compact)
        await self.extensions.pre_compact.drain(SHUTDOWN_GRACE_SECONDS)
        await self.memory.close()
        # After everything that calls a model, before the database closes.
        await self.usage.close()
        if self._database is not None:
            await self._database.close()
        await self.http.aclose()


def token_counter(tokenizer: str) -> TiktokenCounter | EstimatingCounter:
    """The counter `aimemory_tokenizer` names; tiktoken's is loaded before the first turn."""
    return TiktokenCounter() if tokenizer == "cl100k" else EstimatingCounter()


async def text_tools_ready(counter: TiktokenCounter | EstimatingCounter) -> None:
    """Load the segmenter (and tiktoken, when counting with it) in worker threads unless
    they are loaded: the first turn after start-up waits for them (~0.15 s, ~0.4 s with
    tiktoken) instead of start-up itself."""
    await counter.ready()
    if not jieba_cuts.is_loaded():
        await asyncio.to_thread(jieba_cuts.load)


class _Builder:
    """Builds one Runtime, part by part, in dependency order."""

    def __init__(self, config: Config, extensions: Extensions) -> None:
        self.config = config
        self.extensions = extensions
        self.http = SharedHttp(config.aimemory_request_timeout)
        # Set first thing in `build`, before any client is made.
        self.usage: UsageRecorder

    def llm_client(self, role: str, counted_as: str | None = None) -> LLMClient:
        """A chat client for a model role, sharing the process's connection pool; its usage
        is counted under `counted_as` (default: the role)."""
        return LLMClient(
            self.http,
            self.config.endpoint(role),
            timeout_seconds=self.config.aimemory_request_timeout,
            max_retries=self.config.aimemory_llm_max_retries,
            role=counted_as or role,
            meter=self.usage,
        )

    async def build(self, db_path: str, personas_dir: Path | None = None) -> Runtime:
        config = self.config
        database = await open_database(db_path)
        self.usage = UsageRecorder(
            UsageStore(database) if database else MemoryOnlyUsageStore(), zone=config.zone
        )
        await self.usage.load()
        personas = Personas(
            PersonaCatalog(
                self.personas_folder(db_path, personas_dir), config.aimemory_system_prompt
            ),
            PersonaStore(database) if database else UnsavedChoices(),
        )
        await personas.load()
        counter = token_counter(config.aimemory_tokenizer)
        pre_compact = self.extensions.pre_compact
        pre_compact.wait_seconds = config.aimemory_precompact_wait_seconds
        compressor = Compressor(
            self.llm_client("compressor"),
            counter,
            config.compression_policy(),
            pre_compact,
            prompts=prompts.SUMMARY_PROMPTS,
        )
        images = self.image_reader(database)
        members = MemberNames()
        if database is not None and jieba_cuts.needs_a_slow_load():
            jieba_cuts.load_in_background()
        memory, chat_log = self.memory_and_chat_log(database, compressor, personas)
        pre_compact.register(memory.extractor.on_pre_compact)
        runtime: Runtime
        sessions = SessionCache(
            lambda key: runtime.build_chatbot(key),
            max_idle_seconds=config.aimemory_session_max_idle_minutes * 60,
            max_sessions=config.aimemory_session_max_sessions,
        )
        autoclear = GroupAutoClear(
            config.aimemory_group_autoclear_after,
            GroupCounterStore(database) if database else MemoryOnlyCounterStore(),
            lambda group_id: runtime.group_cleared_in_memory(group_id),
        )
        dialog = DialogCommands(
            sessions,
            counter,
            budget_tokens=compressor.policy.budget_tokens,
            persistent=database is not None,
            zone=config.zone,
            personas=personas,
            usage=self.usage,
            daily_quota_tokens=config.aimemory_daily_tokens_per_chat,
        )
        runtime = Runtime(
            config=config,
            extensions=self.extensions,
            http=self.http,
            llm=self.llm_client("main"),
            counter=counter,
            compressor=compressor,
            history=SqliteHistoryStore(database) if database else MemoryOnlyHistoryStore(),
            sessions=sessions,
            autoclear=autoclear,
            images=images,
            memory=memory,
            chat_log=chat_log,
            inbound=Inbound(config, ContentRenderer(images, members)),
            conversation=Conversation(
                sessions=sessions,
                autoclear=autoclear,
                chat_log=chat_log,
                memories=memory.relevant,
                commands=Commands(dialog, memory.commands, PersonaCommands(personas), personas),
                zone=config.zone,
                configured=config.configured,
                log_ambient=config.aimemory_chat_log_ambient,
                usage=self.usage,
                daily_quota_tokens=config.aimemory_daily_tokens_per_chat,
                window_key=personas.window_key,
                prepare=lambda: text_tools_ready(counter),
            ),
            outbound=Outbound(
                ReplyBuilder(
                    images, members, public_only=not config.aimemory_reply_image_allow_private
                ),
                max_chars=config.aimemory_reply_max_chars,
                max_parts=config.aimemory_reply_max_parts,
            ),
            personas=personas,
            usage=self.usage,
            _database=database,
        )
        try:
            if warning := await self.prompt_budget_warning(runtime):
                logger.warning(warning)
        except ConfigError:
            # Nothing stays open; the caller reports it (the plugin logs it and stays off).
            await runtime.stop()
            raise
        await autoclear.load()
        memory.start()
        chat_log.start()
        self.usage.start()
        sessions.start_janitor(config.aimemory_janitor_interval_seconds)
        for warning in (config.missing_key_warning(), config.chat_log_embeddings_warning()):
            if warning:
                logger.warning(warning)
        return runtime

    def personas_folder(self, db_path: str, personas_dir: Path | None) -> Path:
        """Where persona files are: the configured folder, the plugin's data folder's
        `personas`, or (tests, a bare Runtime) one beside the database."""
        if self.config.aimemory_personas_dir:
            return Path(self.config.aimemory_personas_dir)
        return personas_dir or Path(db_path).parent / "personas"

    async def prompt_budget_warning(self, runtime: Runtime) -> str | None:
        """Measure what every request carries before the conversation (the system prompt and
        the built-in tools of a group, the longer of the two chat notes) against the budget,
        with the runtime's counter. tiktoken, not loaded at start-up, is loaded for it only
        when the estimate, even with a generous error, could reach the warning."""
        key = group_key(PROBE_GROUP_ID)
        tools = ToolRegistry([*runtime.memory.tools(key), *runtime.chat_log.tools(key)])
        specs_json = tools.specs_json()
        specs = specs_json.decode() if specs_json else ""
        system = runtime.system_prompt_for(key)
        counter = runtime.counter
        if not counter.loaded:
            estimate = EstimatingCounter()
            estimated = message_tokens(Message("system", system), estimate) + estimate.count(specs)
            if estimated * ESTIMATE_ERROR_MARGIN < FIXED_PROMPT_WARN_SHARE * runtime.budget_tokens:
                return None
            await counter.ready()
        return check_prompt_budget(
            message_tokens(Message("system", system), counter),
            counter.count(specs),
            runtime.budget_tokens,
        )

    def image_reader(self, database: Database | None) -> ImageReader:
        """How QQ images become model input (data URIs or vision descriptions)."""
        config = self.config
        return ImageReader(
            max_bytes=config.aimemory_image_max_bytes,
            public_only=not config.aimemory_image_allow_private,
            multimodal=config.aimemory_multimodal,
            vision=self.llm_client("vision") if config.aimemory_vision_model else NoVision(),
            cache=ImageDescriptionStore(database) if database else NoDescriptionCache(),
        )

    def memory_and_chat_log(
        self, database: Database | None, compressor: Compressor, personas: Personas
    ) -> tuple[LongTermMemory | MemoryOff, RecordedChat | ChatLogOff]:
        """Long-term memory and the chat log exist only with a database; without one the
        tools are off, the commands say so, and chat goes on."""
        if database is None:
            return MemoryOff(), ChatLogOff()
        config = self.config
        service = self.memory_service(database)
        # Without leave to send the chat log to a model there is no reviewer at all.
        reviewing = config.aimemory_review_external_context
        review_store = ReviewStore(database)
        chat_log_store = ChatLogStore(database)
        writer = ChatLog(
            chat_log_store,
            review_store if reviewing else NoReviewMarks(),
            flush_seconds=config.aimemory_chat_log_flush_seconds,
            keep_days=config.aimemory_chat_log_keep_days,
            vectors=row_vectors(
                chat_log_store.vectors,
                service.embedder,
                wanted=config.aimemory_chat_log_embeddings,
            ),
        )
        reviews: ReviewScheduler | ReviewsOff = ReviewsOff()
        review_commands: ReviewCommands | ReviewsUnavailable = ReviewsUnavailable()
        if reviewing:
            reviews = self.review_scheduler(service, writer, review_store, personas)
            review_commands = ReviewCommands(reviews, writer, config.zone)
        chat_log = RecordedChat(writer, config.zone, reviews, review_commands)
        memory = LongTermMemory(
            service=service,
            commands=MemoryCommands(
                service,
                review_commands,
                auto_inject=config.aimemory_memory_auto_inject,
                inject_top_k=config.aimemory_memory_inject_topk,
                personal=config.aimemory_personal_memory,
            ),
            relevant=RelevantMemories(
                service,
                top_k=config.aimemory_memory_inject_topk,
                max_chars=config.aimemory_memory_inject_max_chars,
                personal=config.aimemory_personal_memory,
            )
            if config.aimemory_memory_auto_inject
            else NoRelevantMemories(),
            extractor=FactExtractor(compressor.llm.for_role("extractor"), service)
            if config.aimemory_memory_extract_on_compact
            else NoExtraction(),
            personal=config.aimemory_personal_memory,
        )
        return memory, chat_log

    def memory_service(self, database: Database) -> MemoryService:
        """The memory rules over the database; vectors when an embedding model is set."""
        config = self.config
        embedder: Embedder = NoEmbeddings()
        if config.aimemory_embedding_model:
            endpoint = config.endpoint("embedding")
            roles = EmbeddingRoles.from_setting(config.aimemory_embedding_prefixes, endpoint.model)
            embedder = EmbeddingClient(self.http, endpoint, roles=roles, meter=self.usage)
        service = MemoryService(
            MemoryStore(database),
            max_entries=config.aimemory_memory_max_entries,
            personal_max_entries=config.aimemory_personal_memory_max_entries,
            mask_pii=config.aimemory_memory_mask_pii,
            embedder=embedder,
            zone=config.zone,
        )
        return service

    def review_scheduler(
        self,
        service: MemoryService,
        writer: ChatLog,
        review_store: ReviewStore,
        personas: Personas,
    ) -> ReviewScheduler:
        """The background reviewer: turns recent chat into memories now and then, each
        persona's scope as that persona."""
        config = self.config
        reviewer = MemoryReviewer(
            self.llm_client("review", counted_as="reviewer"),
            service,
            writer.store,
            persona=lambda scope: personas.named(persona_of(scope)).prompt,
            zone=config.zone,
        )
        return ReviewScheduler(
            reviewer,
            review_store,
            tick_seconds=config.aimemory_review_tick_seconds,
            interval_seconds=config.aimemory_review_interval_seconds,
            min_new_rows=config.aimemory_review_min_new_rows,
            enabled_by_default=config.aimemory_review_enabled,
        )


_current: Runtime | None = None


def current_runtime() -> Runtime | None:
    """The runtime in use, or None before startup and after shutdown."""
    return _current


def install_runtime(runtime: Runtime | None) -> None:
    """Set (or with None, clear) the runtime the matcher uses."""
    global _current
    _current = runtime
