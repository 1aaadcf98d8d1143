"""Long-term memory and the chat log its reviewer reads, built over the database: both
exist only with one; without it the tools are off, the commands say so, and chat goes on."""

from __future__ import annotations

from collections.abc import Callable

from .chatlog import (
    ChatLog,
    ChatLogOff,
    MemoryReviewer,
    NoReviewMarks,
    RecalledLines,
    RecordedChat,
    ReviewCommands,
    ReviewScheduler,
    ReviewsOff,
    ReviewsUnavailable,
    row_vectors,
)
from .config import Config
from .engine import (
    Compressor,
    Embedder,
    EmbeddingClient,
    EmbeddingRoles,
    ModelClients,
    NoEmbeddings,
    shares_local_server,
)
from .guard import ModelCheck
from .memory import (
    FactExtractor,
    LongTermMemory,
    MemoryCommands,
    MemoryOff,
    MemoryService,
    NoExtraction,
    NoRelevantMemories,
    RelevantMemories,
    SharedScopeGuard,
)
from .personas import Personas
from .scopes import Scope
from .store import Backend, ChatLogStore, MemoryStore, ReviewStore


def memory_and_chat_log(
    config: Config,
    clients: ModelClients,
    database: Backend | None,
    compressor: Compressor,
    personas: Personas,
    memory_key: Callable[[str], str],
) -> tuple[LongTermMemory | MemoryOff, RecordedChat | ChatLogOff]:
    """Long-term memory and the chat log, or both off without a database; `memory_key`
    places a window's memories (memory/placement.py)."""
    if database is None:
        return MemoryOff(), ChatLogOff()
    service = memory_service(config, clients, database)
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
        reviews = review_scheduler(config, clients, service, writer, review_store, personas)
        review_commands = ReviewCommands(reviews, writer, config.zone)
    recall = RecalledLines(
        writer,
        config.zone,
        rows=config.aimemory_chat_log_recall_rows,
        max_chars=config.aimemory_memory_inject_max_chars // 2,
    )
    chat_log = RecordedChat(writer, config.zone, reviews, review_commands, recall)
    return long_term_memory(config, service, compressor, review_commands, memory_key), chat_log


def long_term_memory(
    config: Config,
    service: MemoryService,
    compressor: Compressor,
    review_commands: ReviewCommands | ReviewsUnavailable,
    memory_key: Callable[[str], str],
) -> LongTermMemory:
    """The memory tools and commands, auto-injection and extraction on compaction, as
    configured."""
    return LongTermMemory(
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
        extractor=FactExtractor(
            compressor.llm.for_role("extractor"),
            service,
            memory_key,
            personal=config.aimemory_personal_memory,
        )
        if config.aimemory_memory_extract_on_compact
        else NoExtraction(),
        personal=config.aimemory_personal_memory,
    )


def memory_service(config: Config, clients: ModelClients, database: Backend) -> MemoryService:
    """The memory rules over the database; vectors when an embedding model is set."""
    embedder: Embedder = NoEmbeddings()
    if config.aimemory_embedding_model:
        endpoint = config.endpoint("embedding")
        roles = EmbeddingRoles.from_setting(config.aimemory_embedding_prefixes, endpoint.model)
        embedder = EmbeddingClient(clients.http, endpoint, roles=roles, meter=clients.meter)
    return MemoryService(
        MemoryStore(database),
        max_entries=config.aimemory_memory_max_entries,
        personal_max_entries=config.aimemory_personal_memory_max_entries,
        mask_pii=config.aimemory_memory_mask_pii,
        embedder=embedder,
        zone=config.zone,
        guard=SharedScopeGuard(
            ModelCheck(clients.for_role("guard")) if config.aimemory_guard_check else None,
            after_turn=checks_after_turn(config),
        ),
    )


def checks_after_turn(config: Config) -> bool:
    """Whether the model check of a note saved in a member's turn waits for the turn's end:
    when asked to, and when the check's server is the chat's own local one."""
    guard, main = config.endpoint("guard").api_base, config.endpoint("main").api_base
    return config.aimemory_guard_check_after_turn and shares_local_server(guard, main)


def review_scheduler(
    config: Config,
    clients: ModelClients,
    service: MemoryService,
    writer: ChatLog,
    review_store: ReviewStore,
    personas: Personas,
) -> ReviewScheduler:
    """The background reviewer: turns recent chat into memories now and then, each
    persona's scope as that persona."""
    reviewer = MemoryReviewer(
        clients.for_role("review", counted_as="reviewer"),
        service,
        writer.store,
        persona=lambda scope: personas.named(Scope.parse(scope).persona_name).prompt,
        zone=config.zone,
        personal=config.aimemory_personal_memory,
    )
    return ReviewScheduler(
        reviewer,
        review_store,
        tick_seconds=config.aimemory_review_tick_seconds,
        interval_seconds=config.aimemory_review_interval_seconds,
        min_new_rows=config.aimemory_review_min_new_rows,
        enabled_by_default=config.aimemory_review_enabled,
    )
