"""A model server with one slot, as llama.cpp runs on a small machine (`-np 1`): it keeps
the prompt of its last request only, and reads a new request's prompt from the first place
where it differs from that one; what it did not read it reports as cached tokens, in
`usage.prompt_tokens_details.cached_tokens` as llama-server does. Any request takes the
slot, one for a single token too, and a request whose caller hung up once it was sent is
read all the same (llama.cpp reads a prompt to its end). Wraps another responder."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from .openai_server import Reply, TextReply, ToolCallsReply, reported_usage

Responder = Callable[[dict[str, Any]], Reply]

# Characters of the rendered prompt per token (the fake's own estimate, see estimate_tokens).
CHARS_PER_TOKEN = 3


@dataclass(frozen=True)
class SlotRead:
    """One request as the slot read it: its body, its prompt tokens, and how many of them
    were already in the slot."""

    body: dict[str, Any]
    prompt_tokens: int
    cached_tokens: int

    @property
    def cached_share(self) -> float:
        """The share of the prompt served from the slot."""
        return self.cached_tokens / max(self.prompt_tokens, 1)


def rendered(body: dict[str, Any]) -> str:
    """The prompt as a chat template lays it out: the tools first, then each message."""
    parts = [json.dumps(body.get("tools"), ensure_ascii=False, sort_keys=True)]
    for message in body.get("messages", []):
        parts.append(f"<|im_start|>{json.dumps(message, ensure_ascii=False, sort_keys=True)}")
    return "\n".join(parts)


def common_prefix_length(first: str, second: str) -> int:
    """How many characters `first` and `second` begin with alike."""
    pairs = enumerate(zip(first, second, strict=False))
    return next((i for i, (a, b) in pairs if a != b), min(len(first), len(second)))


class OneSlotServer:
    """A responder that answers with `responder` and reports the one slot's cached tokens;
    `reads` holds every request in the order read."""

    def __init__(self, responder: Responder) -> None:
        self.responder = responder
        self.reads: list[SlotRead] = []
        self._slot = ""
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Reply:
        prompt = rendered(body)
        with self._lock:
            common = common_prefix_length(self._slot, prompt)
            self._slot = prompt
            read = SlotRead(body, len(prompt) // CHARS_PER_TOKEN, common // CHARS_PER_TOKEN)
            self.reads.append(read)
        reply = self.responder(body)
        if not isinstance(reply, TextReply | ToolCallsReply):
            return reply
        written = len(json.dumps(reply.content or "", ensure_ascii=False)) // CHARS_PER_TOKEN
        usage = reported_usage(read.prompt_tokens, written, cached=read.cached_tokens)
        return replace(reply, usage=usage)
