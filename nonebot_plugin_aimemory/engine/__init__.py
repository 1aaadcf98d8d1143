"""Chat engine: messages, token window, LLM client, tools and the turn loop.

Pure asyncio + httpx; nothing here imports nonebot, so it can be tested with a local HTTP
server alone.

What the rest of the plugin uses is re-exported here: `from ..engine import LLMClient`.
"""

from __future__ import annotations

from .answer_notes import AnswerNotes
from .background import Background
from .chatbot import ChatBot
from .compressor import CompressionPolicy, Compressor, SummaryPrompts
from .embeddings import (
    Embedder,
    EmbeddingClient,
    EmbeddingRoles,
    NoEmbeddings,
    TextRole,
    VectorMaker,
    cosine,
)
from .errors import LLMError
from .history import CompressionStats, HistoryStore, StoreError
from .hooks import PreCompactHooks
from .llm import Completion, Endpoint, LLMClient
from .messages import ImagePart, Message, Part, TextPart
from .model_clients import ModelClients
from .model_traffic import background_work, in_background_work, shares_local_server
from .models import context_window_for, default_budget_for
from .shared_http import SharedHttp
from .timeouts import within
from .tokens import (
    ESTIMATE_ERROR_MARGIN,
    EstimatingCounter,
    TiktokenCounter,
    TokenCounter,
    counter_named,
    message_tokens,
)
from .tools import MAX_TOOL_RESULT_CHARS, Tool, ToolError, ToolRegistry, ToolText
from .transcript import chunk_lines, render_transcript
from .turn_context import (
    SavesInTurn,
    TurnSpeaker,
    Voice,
    current_speaker,
    current_voices,
    hearing,
    note_save,
    speaking,
    watching_saves,
)
from .turn_outcome import AllowanceUsedUp
from .turn_trace import TurnFailure, TurnTrace, note_failure, note_memories, tracing
from .usage import (
    NO_CHAT,
    ROLES,
    TokenCounts,
    UsageRecorder,
    UsageRow,
    attributed_to,
    in_role_order,
    summed,
)

__all__ = [
    "ESTIMATE_ERROR_MARGIN",
    "MAX_TOOL_RESULT_CHARS",
    "NO_CHAT",
    "ROLES",
    "AllowanceUsedUp",
    "AnswerNotes",
    "Background",
    "ChatBot",
    "Completion",
    "CompressionPolicy",
    "CompressionStats",
    "Compressor",
    "Embedder",
    "EmbeddingClient",
    "EmbeddingRoles",
    "Endpoint",
    "EstimatingCounter",
    "HistoryStore",
    "ImagePart",
    "LLMClient",
    "LLMError",
    "Message",
    "ModelClients",
    "NoEmbeddings",
    "Part",
    "PreCompactHooks",
    "SavesInTurn",
    "SharedHttp",
    "StoreError",
    "SummaryPrompts",
    "TextPart",
    "TextRole",
    "TiktokenCounter",
    "TokenCounter",
    "TokenCounts",
    "Tool",
    "ToolError",
    "ToolRegistry",
    "ToolText",
    "TurnFailure",
    "TurnSpeaker",
    "TurnTrace",
    "UsageRecorder",
    "UsageRow",
    "VectorMaker",
    "Voice",
    "attributed_to",
    "background_work",
    "chunk_lines",
    "context_window_for",
    "cosine",
    "counter_named",
    "current_speaker",
    "current_voices",
    "default_budget_for",
    "hearing",
    "in_background_work",
    "in_role_order",
    "message_tokens",
    "note_failure",
    "note_memories",
    "note_save",
    "render_transcript",
    "shares_local_server",
    "speaking",
    "summed",
    "tracing",
    "watching_saves",
    "within",
]
