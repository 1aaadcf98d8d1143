"""The ChatBot of each conversation window, as a session is built: the persona's model and
prompt, the built-in tools and every extension's."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from .. import prompts, texts
from ..engine import (
    AnswerNotes,
    ChatBot,
    Compressor,
    HistoryStore,
    ModelClients,
    TokenCounter,
    Tool,
    ToolRegistry,
)
from ..personas import Personas
from ..scopes import Scope
from .incoming import COPIED_LINE_START

# What the plugin wraps quoted data in; never part of an answer (engine/answer_notes.py).
FRAMING = (
    prompts.MEMORY_INJECTION_HEADER,
    prompts.MEMORY_INJECTION_PERSONAL_NOTE,
    prompts.MEMORY_INJECTION_FOOTER,
    prompts.MEMORY_RESULTS_OPENING,
    prompts.MEMORY_RESULTS_CLOSING,
    prompts.CHAT_LOG_OPENING,
    prompts.CHAT_LOG_CLOSING,
    prompts.CHAT_LOG_RECALL_OPENING,
)


class ToolSource(Protocol):
    """A feature's tools bound to a scope (memory/feature.py, chatlog/feature.py)."""

    def tools(self, scope: str, /) -> list[Tool]:
        """The tools bound to `scope` (none when the feature is off)."""
        ...


class ChatBotFactory:
    """Builds the ChatBot of a window `key` (a chat's as one account has it, or a persona's
    part of it: see scopes.py). Memory tools are bound to the persona's memories, chat-log
    tools to the chat's log; `add_tools` registers the extensions' tools of a session."""

    def __init__(
        self,
        *,
        clients: ModelClients,
        history: HistoryStore,
        counter: TokenCounter,
        compressor: Compressor,
        memory: ToolSource,
        chat_log: ToolSource,
        personas: Personas,
        add_tools: Callable[[ToolRegistry, str], None],
        max_tool_rounds: int,
        send_images: bool,
        memory_key: Callable[[str], str] = lambda window_key: window_key,
    ) -> None:
        self.clients = clients
        self.history = history
        self.counter = counter
        self.compressor = compressor
        self.memory = memory
        self.chat_log = chat_log
        self.personas = personas
        self.add_tools = add_tools
        self.memory_key = memory_key
        self.max_tool_rounds = max_tool_rounds
        self.send_images = send_images

    def build(self, key: str) -> ChatBot:
        """A ChatBot for the window `key` with the built-in tools and every provider's."""
        builtin = self.builtin_tools(key)
        tools = ToolRegistry(builtin)
        self.add_tools(tools, key)
        return ChatBot(
            key,
            llm=self.clients.for_model(self.personas.named(Scope.parse(key).persona_name).model),
            store=self.history,
            counter=self.counter,
            system_prompt=self.system_prompt_for(key, [tool.name for tool in builtin]),
            tools=tools,
            max_tool_rounds=self.max_tool_rounds,
            send_images=self.send_images,
            compressor=self.compressor,
            notes=AnswerNotes(
                repeat=prompts.REPEAT_NOTE,
                answer=prompts.ANSWER_NOW_NOTE,
                results_opening=prompts.TOOL_RESULTS_TOLD,
                results_closing=prompts.MEMORY_INJECTION_FOOTER,
                copied_line_start=COPIED_LINE_START,
                note_marks=texts.NOTE_MARKS,
                framing=FRAMING,
            ),
        )

    def builtin_tools(self, key: str) -> list[Tool]:
        """The tools of window `key`'s memories (the chat's, whichever account: see
        memory/placement.py) and of its chat's one log."""
        memory_tools = self.memory.tools(self.memory_key(key))
        return [*memory_tools, *self.chat_log.tools(Scope.parse(key).log_chat.key)]

    def system_prompt_for(self, key: str, builtin_names: Sequence[str] | None = None) -> str:
        """The persona's prompt, where the chat happens and the rules of the built-in tools
        the session has (`builtin_names` when the caller has built them; none without a
        database); identical every turn (prefix caching)."""
        if builtin_names is None:
            builtin_names = [tool.name for tool in self.builtin_tools(key)]
        scope = Scope.parse(key)
        persona = self.personas.named(scope.persona_name)
        return prompts.build_system_prompt(persona.prompt, scope.chat, builtin_names)
