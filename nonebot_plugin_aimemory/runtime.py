"""The composition root: builds every part once, in `driver.on_startup`, and tears it down
in `on_shutdown`; nothing here runs at import time. A feature that is off is a null object
with the same interface, so no caller tests for None. Tests start a fresh Runtime on the
same database file to exercise a real restart."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path

from . import prompts
from .chatlog import ChatLogOff, RecordedChat
from .config import Config, ConfigError
from .conversation import (
    ChatBotFactory,
    Conversation,
    GroupAutoClear,
    SessionCache,
    group_cleared_in_memory,
)
from .conversation_and_commands import conversation_and_commands
from .engine import (
    ChatBot,
    Compressor,
    EstimatingCounter,
    HistoryStore,
    LLMClient,
    ModelClients,
    SharedHttp,
    TiktokenCounter,
    Tool,
    UsageRecorder,
    counter_named,
)
from .extensions import Extensions as Extensions
from .extensions import ToolProvider as ToolProvider
from .media import ImageReader, NoDescriptionCache, NoVision
from .memory import LongTermMemory, MemoryOff, memory_key_for
from .memory_and_chat_log import memory_and_chat_log
from .onebot import Accounts, Inbound
from .onebot.outbound import Outbound
from .onebot.parts import onebot_parts
from .personas import PersonaCatalog, Personas, UnsavedChoices
from .prompt_budget import prompt_budget_warning
from .store import (
    Backend,
    DatabaseHistoryStore,
    GroupCounterStore,
    ImageDescriptionStore,
    MemoryOnlyCounterStore,
    MemoryOnlyHistoryStore,
    MemoryOnlyPluginState,
    MemoryOnlySentMessages,
    MemoryOnlyUsageStore,
    PersonaStore,
    PluginStateStore,
    RunningMark,
    SentMessageStore,
    UsageStore,
)
from .store.opening import open_backend
from .text import jieba_cuts

logger = logging.getLogger("nonebot_plugin_aimemory")

# How long turns in flight (and, after them, extractions) may run on at shutdown before
# they are cancelled; the whole shutdown stays within a few of these.
SHUTDOWN_GRACE_SECONDS = 3.0


@dataclass
class Runtime:
    """Everything the matcher needs while the bot runs, built once."""

    config: Config
    extensions: Extensions[Runtime]
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
    # The ChatBot of each window, as its session is built (conversation/chatbots.py).
    chatbots: ChatBotFactory
    # Facts about the plugin in its database (store/plugin_state.py): the home account, the
    # mark that a bot runs on it (store/liveness.py).
    state: PluginStateStore | MemoryOnlyPluginState = field(default_factory=MemoryOnlyPluginState)
    running: RunningMark = field(default_factory=lambda: RunningMark(None))
    _database: Backend | None = field(default=None, repr=False)

    @property
    def persistent(self) -> bool:
        """Whether history is kept in a database rather than in memory only."""
        return self._database is not None

    @property
    def database(self) -> Backend:
        """The open database (only when `persistent`)."""
        if self._database is None:
            raise RuntimeError("running without a database")
        return self._database

    @property
    def budget_tokens(self) -> int:
        """The context budget, in tokens, of each conversation window."""
        return self.compressor.policy.budget_tokens

    def build_chatbot(self, key: str) -> ChatBot:
        """A ChatBot for the window `key` with the built-in tools and every provider's."""
        return self.chatbots.build(key)

    def builtin_tools(self, key: str) -> list[Tool]:
        """The memory tools of window `key` and the chat-log tools of its chat."""
        return self.chatbots.builtin_tools(key)

    def system_prompt_for(self, key: str, builtin_names: Sequence[str] | None = None) -> str:
        """The system prompt of window `key` (see ChatBotFactory.system_prompt_for)."""
        return self.chatbots.system_prompt_for(key, builtin_names)

    def group_cleared_in_memory(self, chat_key: str) -> AbstractAsyncContextManager[str]:
        """Clear a group's current window in memory, holding its session (group_windows.py)."""
        return group_cleared_in_memory(self.sessions, self.personas.window_key, chat_key)

    @classmethod
    async def start(
        cls,
        config: Config,
        db_path: str,
        extensions: Extensions[Runtime] | None = None,
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
        await self.running.close()
        await self.llm.traffic.close()
        if self._database is not None:
            await self._database.close()
        await self.http.aclose()


class _Builder:
    """Builds one Runtime, part by part, in dependency order."""

    def __init__(self, config: Config, extensions: Extensions[Runtime]) -> None:
        self.config = config
        self.extensions = extensions
        self.http = SharedHttp(config.aimemory_request_timeout)
        # Both set first thing in `build`, before any client is made.
        self.usage: UsageRecorder
        self.clients: ModelClients
        self.accounts: Accounts
        self.state: PluginStateStore | MemoryOnlyPluginState
        self.memory_key = memory_key_for(shared=config.aimemory_accounts_share_memory)

    async def build(self, db_path: str, personas_dir: Path | None = None) -> Runtime:
        """Open the database, build every part over it, check the prompt budget and start
        the background work."""
        config = self.config
        database = await open_backend(db_path, config.aimemory_database_url.get_secret_value())
        await self.count_usage(database)
        self.state = PluginStateStore(database) if database else MemoryOnlyPluginState()
        self.accounts = Accounts(self.state, config.served_accounts)
        await self.accounts.load()
        personas = Personas(
            PersonaCatalog(
                self.personas_folder(db_path, personas_dir), config.aimemory_system_prompt
            ),
            PersonaStore(database) if database else UnsavedChoices(),
        )
        await personas.load()
        counter = counter_named(config.aimemory_tokenizer)
        pre_compact = self.extensions.pre_compact
        pre_compact.wait_seconds = config.aimemory_precompact_wait_seconds
        compressor = Compressor(
            self.clients.for_role("compressor"),
            counter,
            config.compression_policy(),
            pre_compact,
            prompts=prompts.SUMMARY_PROMPTS,
        )
        images = self.image_reader(database)
        if database is not None and jieba_cuts.needs_a_slow_load():
            jieba_cuts.load_in_background()
        memory, chat_log = memory_and_chat_log(
            config, self.clients, database, compressor, personas, self.memory_key
        )
        pre_compact.register(memory.extractor.on_pre_compact)
        runtime = self.assemble(database, personas, counter, compressor, images, memory, chat_log)
        await self.started(runtime)
        return runtime

    async def count_usage(self, database: Backend | None) -> None:
        """The usage recorder, with today's totals read, and the model clients metered by it."""
        config = self.config
        self.usage = UsageRecorder(
            UsageStore(database) if database else MemoryOnlyUsageStore(), zone=config.zone
        )
        await self.usage.load()
        self.clients = ModelClients(
            self.http,
            config.endpoint,
            timeout_seconds=config.aimemory_request_timeout,
            max_retries=config.aimemory_llm_max_retries,
            meter=self.usage,
            background_lull_seconds=config.aimemory_background_lull_seconds,
            prompt_warmup=config.aimemory_prompt_warmup,
        )

    def assemble(
        self,
        database: Backend | None,
        personas: Personas,
        counter: TiktokenCounter | EstimatingCounter,
        compressor: Compressor,
        images: ImageReader,
        memory: LongTermMemory | MemoryOff,
        chat_log: RecordedChat | ChatLogOff,
    ) -> Runtime:
        """The conversation over the built parts, and the Runtime holding them all."""
        config = self.config
        runtime: Runtime
        history = DatabaseHistoryStore(database) if database else MemoryOnlyHistoryStore()
        chatbots = ChatBotFactory(
            clients=self.clients,
            history=history,
            counter=counter,
            compressor=compressor,
            memory=memory,
            chat_log=chat_log,
            personas=personas,
            add_tools=lambda tools, key: self.extensions.add_tools(tools, runtime, key),
            memory_key=self.memory_key,
            max_tool_rounds=config.aimemory_max_tool_rounds,
            send_images=config.aimemory_multimodal,
        )
        sessions = self.session_cache(chatbots)
        autoclear = self.group_autoclear(database, sessions, personas)
        sent = SentMessageStore(database) if database else MemoryOnlySentMessages()
        inbound, outbound = onebot_parts(config, images, sent, self.accounts)
        runtime = Runtime(
            config=config,
            extensions=self.extensions,
            http=self.http,
            llm=self.clients.main,
            counter=counter,
            compressor=compressor,
            history=history,
            sessions=sessions,
            autoclear=autoclear,
            images=images,
            memory=memory,
            chat_log=chat_log,
            inbound=inbound,
            conversation=conversation_and_commands(
                self, sessions, autoclear, counter, compressor, personas, memory, chat_log, database
            ),
            outbound=outbound,
            personas=personas,
            usage=self.usage,
            chatbots=chatbots,
            state=self.state,
            running=RunningMark(self.state if database else None),
            _database=database,
        )
        return runtime

    def group_autoclear(
        self, database: Backend | None, sessions: SessionCache, personas: Personas
    ) -> GroupAutoClear:
        """The auto-clear of group windows, its counters kept in the database."""
        return GroupAutoClear(
            self.config.aimemory_group_autoclear_after,
            GroupCounterStore(database) if database else MemoryOnlyCounterStore(),
            lambda chat_key: group_cleared_in_memory(sessions, personas.window_key, chat_key),
        )

    def session_cache(self, chatbots: ChatBotFactory) -> SessionCache:
        """The live sessions, each with the ChatBot of its window, evicted when idle."""
        return SessionCache(
            chatbots.build,
            max_idle_seconds=self.config.aimemory_session_max_idle_minutes * 60,
            max_sessions=self.config.aimemory_session_max_sessions,
        )

    async def started(self, runtime: Runtime) -> None:
        """Check the prompt budget (a refusal closes everything again), then start the
        background work and log what the configuration leaves out."""
        config = self.config
        try:
            if warning := await prompt_budget_warning(
                runtime.chatbots, runtime.counter, runtime.budget_tokens
            ):
                logger.warning(warning)
        except ConfigError:
            # Nothing stays open; the caller reports it (the plugin logs it and stays off).
            await runtime.stop()
            raise
        await runtime.autoclear.load()
        runtime.memory.start()
        runtime.chat_log.start()
        self.usage.start()
        runtime.sessions.start_janitor(config.aimemory_janitor_interval_seconds)
        runtime.running.start()
        for warning in (config.missing_key_warning(), config.chat_log_embeddings_warning()):
            if warning:
                logger.warning(warning)

    def personas_folder(self, db_path: str, personas_dir: Path | None) -> Path:
        """Where persona files are: the configured folder, the plugin's data folder's
        `personas`, or (tests, a bare Runtime) one beside the database."""
        if self.config.aimemory_personas_dir:
            return Path(self.config.aimemory_personas_dir)
        return personas_dir or Path(db_path).parent / "personas"

    def image_reader(self, database: Backend | None) -> ImageReader:
        """How QQ images become model input (data URIs or vision descriptions)."""
        config = self.config
        return ImageReader(
            max_bytes=config.aimemory_image_max_bytes,
            public_only=not config.aimemory_image_allow_private,
            multimodal=config.aimemory_multimodal,
            vision=self.clients.for_role("vision") if config.aimemory_vision_model else NoVision(),
            cache=ImageDescriptionStore(database) if database else NoDescriptionCache(),
        )


_current: Runtime | None = None


def current_runtime() -> Runtime | None:
    """The runtime in use, or None before startup and after shutdown."""
    return _current


def install_runtime(runtime: Runtime | None) -> None:
    """Set (or with None, clear) the runtime the matcher uses."""
    global _current
    _current = runtime
