"""Chat messages as the engine sees them, and their OpenAI wire format."""

from __future__ import annotations

import hashlib
import json
import uuid
from dataclasses import dataclass, field, replace
from typing import Any, Literal

Role = Literal["system", "user", "assistant", "tool"]
ROLES: frozenset[str] = frozenset({"system", "user", "assistant", "tool"})


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One function call requested by the model; `arguments` is the raw JSON text it sent."""

    id: str
    name: str
    arguments: str

    def to_api(self) -> dict[str, Any]:
        """The call in the OpenAI `tool_calls` format."""
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }


@dataclass(frozen=True, slots=True)
class TextPart:
    """A piece of text inside a multi-part user message."""

    text: str


@dataclass(frozen=True, slots=True)
class ImagePart:
    """An image inside a user message; `url` is http(s) or a data URI, `marker` its text stand-in."""

    url: str
    marker: str

    @staticmethod
    def from_source(url: str, identity: str = "", description: str = "") -> ImagePart:
        """Build an image part whose marker carries a short hash of `identity` (or of the URL)."""
        digest = hashlib.sha1((identity or url).encode()).hexdigest()[:8]
        suffix = f"：{description}" if description else ""
        return ImagePart(url=url, marker=f"[图片 {digest}{suffix}]")


Part = TextPart | ImagePart
Content = str | tuple[Part, ...] | None


@dataclass(slots=True)
class Message:
    """One chat message. Treat as immutable: the API JSON and token count are cached on it."""

    role: Role
    content: Content = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    reasoning: str | None = None
    """The model's `reasoning_content` (thinking models): sent back verbatim, never shown."""
    _json: bytes | None = field(default=None, repr=False, compare=False)
    tokens: int = field(default=-1, repr=False, compare=False)

    @property
    def text(self) -> str:
        """The plain text of the message, images shown as their markers."""
        if self.content is None:
            return ""
        if isinstance(self.content, str):
            return self.content
        return "".join(p.text if isinstance(p, TextPart) else p.marker for p in self.content)

    @property
    def has_images(self) -> bool:
        """Whether any content part is an image."""
        return isinstance(self.content, tuple) and any(
            isinstance(p, ImagePart) for p in self.content
        )

    def with_image_markers(self) -> Message:
        """This message with every image replaced by its text marker (what is persisted)."""
        if not self.has_images:
            return self
        return replace(self, content=self.text, _json=None, tokens=-1)

    def with_text(self, text: str) -> Message:
        """A copy whose content is `text` (tool calls, ids and reasoning kept)."""
        return replace(self, content=text, _json=None, tokens=-1)

    def with_note(self, note: str) -> Message:
        """A copy with `note` on a line of its own after the content (images kept)."""
        if isinstance(self.content, tuple):
            return replace(
                self, content=(*self.content, TextPart(f"\n{note}")), _json=None, tokens=-1
            )
        return self.with_text(f"{self.text}\n{note}")

    def with_prefix(self, prefix: str) -> Message:
        """A copy with `prefix` before the content: one text when the content is text alone,
        a part before the others when it holds images."""
        if isinstance(self.content, tuple) and self.has_images:
            content = (TextPart(prefix), *self.content)
            return replace(self, content=content, _json=None, tokens=-1)
        return self.with_text(prefix + self.text)

    def with_tool_calls(self, calls: tuple[ToolCall, ...]) -> Message:
        """A copy requesting `calls` instead (text and reasoning kept)."""
        return replace(self, tool_calls=calls, _json=None, tokens=-1)

    def to_api(self) -> dict[str, Any]:
        """The OpenAI chat-completions form of this message."""
        data: dict[str, Any] = {"role": self.role}
        if isinstance(self.content, tuple):
            data["content"] = [_part_to_api(p) for p in self.content]
        else:
            data["content"] = self.content
        if self.reasoning is not None:
            data["reasoning_content"] = self.reasoning
        if self.tool_calls:
            data["tool_calls"] = [c.to_api() for c in self.tool_calls]
        if self.tool_call_id is not None:
            data["tool_call_id"] = self.tool_call_id
        if self.name is not None and self.role == "tool":
            data["name"] = self.name
        return data

    def api_json(self) -> bytes:
        """UTF-8 JSON of `to_api()`, computed once: a long window is serialised by joining these."""
        if self._json is None:
            # "replace": a lone surrogate (half an emoji from QQ) must not poison the window.
            self._json = json.dumps(
                self.to_api(), ensure_ascii=False, separators=(",", ":")
            ).encode("utf-8", "replace")
        return self._json

    @staticmethod
    def from_api(data: dict[str, Any]) -> Message:
        """Parse a message in OpenAI form; raises ValueError on a malformed one."""
        role = data.get("role")
        if role not in ROLES:
            raise ValueError(f"unknown role {role!r}")
        content = _content_from_api(data.get("content"))
        calls = tuple(parse_tool_call(c) for c in data.get("tool_calls") or ())
        tool_call_id = data.get("tool_call_id")
        name = data.get("name")
        reasoning = data.get("reasoning_content")
        return Message(
            role=role,
            content=content,
            tool_calls=calls,
            tool_call_id=str(tool_call_id) if tool_call_id is not None else None,
            name=str(name) if name is not None else None,
            reasoning=reasoning if isinstance(reasoning, str) else None,
        )


def system(text: str) -> Message:
    """A system message."""
    return Message("system", text)


def user(content: str | tuple[Part, ...]) -> Message:
    """A user message, plain text or text and image parts."""
    return Message("user", content)


def assistant(
    text: str | None, tool_calls: tuple[ToolCall, ...] = (), *, reasoning: str | None = None
) -> Message:
    """An assistant message, possibly requesting tool calls, with the model's reasoning."""
    return Message("assistant", text, tool_calls=tool_calls, reasoning=reasoning)


def tool_result(call: ToolCall, text: str) -> Message:
    """The answer to `call`, linked to it by the call id."""
    return Message("tool", text, tool_call_id=call.id, name=call.name)


def _part_to_api(part: Part) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    return {"type": "image_url", "image_url": {"url": part.url}}


def _content_from_api(raw: Any) -> Content:
    if raw is None or isinstance(raw, str):
        return raw
    if not isinstance(raw, list):
        raise ValueError("content must be a string, a list of parts or null")
    parts: list[Part] = []
    for item in raw:
        if not isinstance(item, dict):
            raise ValueError("content part must be an object")
        if item.get("type") == "text":
            parts.append(TextPart(str(item.get("text", ""))))
        elif item.get("type") == "image_url":
            url = str((item.get("image_url") or {}).get("url", ""))
            parts.append(ImagePart.from_source(url))
        else:
            raise ValueError(f"unknown content part {item.get('type')!r}")
    return tuple(parts)


def parse_tool_call(raw: Any) -> ToolCall:
    """Parse a tool call in OpenAI form; raises ValueError on a malformed one."""
    if not isinstance(raw, dict):
        raise ValueError("tool call must be an object")
    function = raw.get("function")
    if not isinstance(function, dict) or not isinstance(function.get("name"), str):
        raise ValueError("tool call without a function name")
    arguments = function.get("arguments")
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments if arguments is not None else {}, ensure_ascii=False)
    # Some local servers omit ids; the API needs them to pair results with calls.
    call_id = raw.get("id") or f"call_{uuid.uuid4().hex[:24]}"
    return ToolCall(id=str(call_id), name=function["name"], arguments=arguments)
