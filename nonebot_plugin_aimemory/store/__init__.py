"""The stores: the only place SQL lives, every statement parameterised. What both databases
share stands here (the `Backend` they offer, the stores written once, the ranking they agree
on); what one of them does differently lives in its own folder, `sqlite/` or `postgres/`,
behind the backend's methods.

This face offers the stores, the records they keep and the `Backend`. Two modules are
imported from themselves: `opening`, which picks a database and so stands above both
folders, and `copying`, loaded only by the migration tool."""

from __future__ import annotations

from .addresses import redacted
from .backend import Backend
from .chat_log_index import SCORED_ROWS_KEPT, KeywordRanking, row_terms
from .chat_log_ranking import PeriodBoost
from .chat_log_store import ChatLogStore, ChatRow
from .chat_log_vectors import ChatLogVectorStore, Unembedded
from .connection import database_unavailable
from .counters import GroupCounterStore, MemoryOnlyCounterStore
from .history_store import DatabaseHistoryStore, MemoryOnlyHistoryStore
from .image_store import ImageDescriptionStore
from .liveness import RunningMark, running_bot
from .memory_store import MemoryRecord, MemoryStore, Tombstone
from .message_claims import (
    HOLDER_RENEW_SECONDS,
    PRESENT_SECONDS,
    SAME_MESSAGE_SECONDS,
    Claim,
    ClaimRequest,
    Decide,
    MessageClaimStore,
    said_digest,
)
from .overview_store import OverviewStore, StoredWindow
from .packed_vectors import HEADER, OFFSET
from .persona_store import PersonaStore
from .plugin_state import MemoryOnlyPluginState, PluginStateStore
from .provenance import Origin, Person, Provenance
from .review_store import ReviewState, ReviewStore
from .sent_messages import (
    MemoryOnlySentMessages,
    SentMessage,
    SentMessages,
    SentMessageStore,
    message_key,
)
from .times import parse_utc_text, utc_now_text, utc_text
from .usage_store import MemoryOnlyUsageStore, UsageStore
from .vector_column import VectorColumn

__all__ = [
    "HEADER",
    "HOLDER_RENEW_SECONDS",
    "OFFSET",
    "PRESENT_SECONDS",
    "SAME_MESSAGE_SECONDS",
    "SCORED_ROWS_KEPT",
    "Backend",
    "ChatLogStore",
    "ChatLogVectorStore",
    "ChatRow",
    "Claim",
    "ClaimRequest",
    "DatabaseHistoryStore",
    "Decide",
    "GroupCounterStore",
    "ImageDescriptionStore",
    "KeywordRanking",
    "MemoryOnlyCounterStore",
    "MemoryOnlyHistoryStore",
    "MemoryOnlyPluginState",
    "MemoryOnlySentMessages",
    "MemoryOnlyUsageStore",
    "MemoryRecord",
    "MemoryStore",
    "MessageClaimStore",
    "Origin",
    "OverviewStore",
    "PeriodBoost",
    "Person",
    "PersonaStore",
    "PluginStateStore",
    "Provenance",
    "ReviewState",
    "ReviewStore",
    "RunningMark",
    "SentMessage",
    "SentMessageStore",
    "SentMessages",
    "StoredWindow",
    "Tombstone",
    "Unembedded",
    "UsageStore",
    "VectorColumn",
    "database_unavailable",
    "message_key",
    "parse_utc_text",
    "redacted",
    "row_terms",
    "running_bot",
    "said_digest",
    "utc_now_text",
    "utc_text",
]
