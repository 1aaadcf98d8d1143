"""Responders that behave like the small real model of issue #36 (Qwen2.5-Coder-1.5B on
llama.cpp): it loops on tools, repeats a call, invents tools, answers with nothing, writes
its calls as text or writes a `<tool_response>` of its own. Assign one to
`FakeOpenAI.responder`.

Each reacts to a request the way a real server does: a request with `"tool_choice": "none"`
(forced) or without `tools` (bare) never gets tool calls back, it gets `answer` (or an empty
message when told to stay empty). Only while tools are allowed does the misbehaviour show.
What a responder decides from, it reads from the request (the calls and results after the
last user message are this turn's), so it needs no state but the record of what it saw."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from .openai_server import Reply, raw, text, tool_calls

__all__ = [
    "ANSWER",
    "INVENTED_TOOL",
    "CallsAsText",
    "EchoesAfterTools",
    "EmptyAfterTools",
    "EmptyAnswerer",
    "FakeToolResponse",
    "LineCopier",
    "NoteCopier",
    "RepeatingCaller",
    "ReplyCopier",
    "Situation",
    "SmallModel",
    "TextCallStyle",
    "ToolInventor",
    "ToolLooper",
    "calls_this_turn",
    "empty",
    "fake_tool_response",
    "results_this_turn",
    "situation",
    "told_results",
    "tool_names",
    "write_calls",
]

ANSWER = "好的，我知道了。"
INVENTED_TOOL = "math_add"  # the name the real model made up for "17 + 25"
SAVED_NOTE = "已保存"

# How a request stands towards tools: allowed, forced to answer (tools listed with
# `tool_choice: "none"`), or bare (no `tools` at all).
Situation: TypeAlias = Literal["tools", "forced", "bare"]
# How a call is written as text: `{"name", "arguments"}`, `{"name", "parameters"}`, with
# the arguments as a JSON string, wrapped in `<tool_call>` tags, or in a ```json fence.
# Several calls are written one per line (each in its own tags or fence).
TextCallStyle: TypeAlias = Literal[
    "object", "parameters", "string_arguments", "tagged", "fenced", "code", "keywords"
]
Call: TypeAlias = tuple[str, dict[str, Any]]


def situation(body: dict[str, Any]) -> Situation:
    """Whether the request allows tool calls, forces an answer, or lists no tools."""
    if not body.get("tools"):
        return "bare"
    return "forced" if body.get("tool_choice") == "none" else "tools"


def tool_names(body: dict[str, Any]) -> list[str]:
    """The names of the tools the request offers, in order."""
    return [tool["function"]["name"] for tool in body.get("tools") or ()]


def _this_turn(messages: Sequence[dict[str, Any]]) -> Sequence[dict[str, Any]]:
    """The messages after the last user message: the turn in progress."""
    users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
    return messages[users[-1] + 1 :] if users else messages


def calls_this_turn(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tool calls the history shows the model made since the last user message."""
    return [call for m in _this_turn(messages) for call in m.get("tool_calls") or ()]


def results_this_turn(messages: Sequence[dict[str, Any]]) -> list[str]:
    """The contents of the tool results since the last user message."""
    return [str(m.get("content")) for m in _this_turn(messages) if m.get("role") == "tool"]


def told_results(messages: Sequence[dict[str, Any]]) -> list[str]:
    """The tool results a request tells as text after the member's message, one
    `- name：result` line each (the plugin's last request, which shows no tool call)."""
    users = [m for m in messages if m.get("role") == "user"]
    said = str(users[-1].get("content")) if users else ""
    return [line.split("：", 1)[1] for line in said.splitlines() if _TOLD.match(line)]


_TOLD = re.compile(r"- [a-z_]+：")


def empty(content: str | None = "") -> Reply:
    """A completion with no text and no tool calls: content `""`, or null with `None`."""
    if content is not None:
        return text(content)
    message = {"role": "assistant", "content": None}
    choice = {"index": 0, "message": message, "finish_reason": "stop"}
    usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    completion = {"id": "chatcmpl-empty", "object": "chat.completion", "model": "small"}
    return raw(200, json.dumps({**completion, "choices": [choice], "usage": usage}))


def write_calls(calls: Sequence[Call], style: TextCallStyle) -> str:
    """Calls written as text the way small models write them in `content`."""
    return "\n".join(_write_call(name, arguments, style) for name, arguments in calls)


def _write_call(name: str, arguments: dict[str, Any], style: TextCallStyle) -> str:
    def dumps(value: Any) -> str:
        return json.dumps(value, ensure_ascii=False)

    if style == "parameters":
        return dumps({"name": name, "parameters": arguments})
    if style == "string_arguments":
        return dumps({"name": name, "arguments": dumps(arguments)})
    if style == "code":  # Qwen2.5-Coder-1.5B on llama.cpp, once asked to answer after tools
        return f"{name}({dumps(arguments)})"
    if style == "keywords":  # the same model, in a private chat
        return f"{name}({', '.join(f'{key}={dumps(value)}' for key, value in arguments.items())})"
    written = dumps({"name": name, "arguments": arguments})
    if style == "tagged":
        return f"<tool_call>\n{written}\n</tool_call>"
    if style == "fenced":
        return f"```json\n{written}\n```"
    return written


def fake_tool_response(name: str = "memory_save", result: str = SAVED_NOTE) -> str:
    """A `<tool_response>` block as the model writes one of its own, a result nobody sent."""
    written = json.dumps({"name": name, "content": result}, ensure_ascii=False)
    return f"<tool_response>\n{written}\n</tool_response>"


@dataclass
class SmallModel:
    """What every responder here shares: `answer` (or an empty message) to forced and bare
    requests, the misbehaviour of a subclass (`with_tools`) while tools are allowed, and in
    `seen` the situation of every request it answered."""

    answer: str = ANSWER
    # Answer a forced request with an empty message, as the real model sometimes did.
    empty_when_forced: bool = False
    # Answer a request without tools with an empty message.
    empty_without_tools: bool = False
    # What an empty message carries: "" or None (a null content).
    empty_content: str | None = ""
    # False: a server that ignores `tool_choice: "none"` and lets the model call anyway.
    obeys_tool_choice: bool = True
    # Forced or bare, while the messages show a tool call: write that call again as JSON
    # text (the real model, its tool rounds in the history and no tools offered).
    copies_calls_it_sees: bool = False
    seen: list[Situation] = field(default_factory=list)

    def __call__(self, body: dict[str, Any]) -> Reply:
        where = situation(body)
        self.seen.append(where)
        shown = [c for m in body["messages"] for c in m.get("tool_calls") or ()]
        if where != "tools" and self.copies_calls_it_sees and shown:
            function = shown[-1]["function"]
            call = (function["name"], json.loads(function["arguments"] or "{}"))
            return text(write_calls((call,), "object"))
        if where == "bare":
            return self.empty() if self.empty_without_tools else text(self.answer)
        if where == "forced" and self.obeys_tool_choice:
            return self.empty() if self.empty_when_forced else text(self.answer)
        return self.with_tools(body)

    def with_tools(self, body: dict[str, Any]) -> Reply:
        """The reply while tools are allowed."""
        raise NotImplementedError

    def empty(self) -> Reply:
        """An empty message with this model's `empty_content`."""
        return empty(self.empty_content)


@dataclass
class EmptyAnswerer(SmallModel):
    """Answers with an empty message whenever tools are allowed."""

    def with_tools(self, body: dict[str, Any]) -> Reply:
        return self.empty()


@dataclass
class ToolLooper(SmallModel):
    """Calls `tool` (it must be one the request offers) every time tools are allowed, with
    a new query each time, and never answers on its own: a tool result only makes it search
    again."""

    tool: str = "memory_search"
    queries: tuple[str, ...] = ("出差", "杭州", "下周三", "行程")

    def with_tools(self, body: dict[str, Any]) -> Reply:
        if self.tool not in tool_names(body):
            raise ValueError(f"{self.tool!r} is not among the request's tools")
        n = len(calls_this_turn(body["messages"]))
        query = self.queries[n % len(self.queries)]
        if n >= len(self.queries):
            query = f"{query} {n + 1}"
        return tool_calls((self.tool, {"query": query}))


@dataclass
class RepeatingCaller(SmallModel):
    """Makes the same call every time tools are allowed; each repetition writes the same
    arguments with their keys in another order and other spacing (equal as JSON)."""

    name: str = "memory_save"
    arguments: dict[str, Any] = field(
        default_factory=lambda: {"content": "小红下周三去杭州出差", "about": "chat"}
    )

    def with_tools(self, body: dict[str, Any]) -> Reply:
        n = len(calls_this_turn(body["messages"]))
        if n % 2 == 0:
            return tool_calls((self.name, self.arguments))
        reordered = dict(reversed(self.arguments.items()))
        return tool_calls((self.name, json.dumps(reordered, ensure_ascii=False, indent=1)))


@dataclass
class ToolInventor(SmallModel):
    """Calls tools that do not exist (`names` in turn, arguments never the same twice) every
    time tools are allowed, as the real model called `math_add` for "17 + 25"."""

    names: tuple[str, ...] = (INVENTED_TOOL,)

    def with_tools(self, body: dict[str, Any]) -> Reply:
        n = len(calls_this_turn(body["messages"]))
        return tool_calls((self.names[n % len(self.names)], {"a": 17, "b": 25 + n}))


@dataclass
class EmptyAfterTools(SmallModel):
    """Makes one call (`name`, `arguments`), then, once a tool result is in the messages,
    answers with an empty message while tools are allowed."""

    name: str = "memory_search"
    arguments: dict[str, Any] = field(default_factory=lambda: {"query": "出差"})

    def with_tools(self, body: dict[str, Any]) -> Reply:
        if results_this_turn(body["messages"]):
            return self.empty()
        return tool_calls((self.name, self.arguments))


@dataclass
class CallsAsText(SmallModel):
    """Writes its `calls` as text in `content` (in `style`) instead of `tool_calls`, and
    answers once a tool result is in the messages."""

    style: TextCallStyle = "object"
    calls: tuple[Call, ...] = (("memory_save", {"content": "小红下周三去杭州出差"}),)

    def with_tools(self, body: dict[str, Any]) -> Reply:
        if results_this_turn(body["messages"]):
            return text(self.answer)
        return text(write_calls(self.calls, self.style))

    @property
    def written(self) -> str:
        """The text it writes in place of the calls."""
        return write_calls(self.calls, self.style)


@dataclass
class FakeToolResponse(SmallModel):
    """Replies, while tools are allowed, with a `<tool_response>` block of its own making
    after `said` (nothing but the block when `said` is empty)."""

    said: str = ""

    def with_tools(self, body: dict[str, Any]) -> Reply:
        block = fake_tool_response()
        return text(f"{self.said}\n{block}" if self.said else block)


@dataclass
class ToolTalker(SmallModel):
    """Replies, while tools are allowed, with `said` and then how it would use a tool,
    naming it, as Qwen2.5-Coder-1.5B told a member who tried to steer it ("如果我需要保存
    这条记忆，可以使用 memory_save 函数…"); nothing but that talk when `said` is empty."""

    said: str = ""

    def with_tools(self, body: dict[str, Any]) -> Reply:
        talk = f"如果我需要保存这条记忆，可以使用 {tool_names(body)[0]} 函数，传入内容和标签。"
        return text(f"{self.said}{talk}")


@dataclass
class LineCopier(SmallModel):
    """Starts its answer with the line start of the member's message (`[时间] 昵称(QQ号)：`),
    as the real model did when asked what it had been told: it copies the shape of the
    lines it sees. Some answers name another member in that copied line."""

    name: str = ""  # the name in the copied line; the member's own when empty

    def with_tools(self, body: dict[str, Any]) -> Reply:
        return self.copying(body)

    def __call__(self, body: dict[str, Any]) -> Reply:
        self.seen.append(situation(body))
        return self.copying(body)

    def copying(self, body: dict[str, Any]) -> Reply:
        """`answer` after the last user message's line start."""
        [last] = [m for m in body["messages"] if m["role"] == "user"][-1:]
        content = last["content"]
        said = content if isinstance(content, str) else content[0].get("text", "")
        start = said.split("：", 1)[0] + "：" if "：" in said[:80] else said[: said.find("]") + 1]
        if self.name:
            start = start.split("] ", 1)[0] + f"] {self.name}(20003)："
        return text(f"{start}{self.answer}")


@dataclass
class ResultEchoer(SmallModel):
    """Makes one call (`name`, `arguments`), then, once its result is in the messages,
    answers with that result word for word while tools are allowed, as the real model did
    ("已保存记忆 #skpn 我现在在星河科技上班。 [标签：…]" as its reply). `always`: the
    forced and bare requests too."""

    name: str = "memory_save"
    arguments: dict[str, Any] = field(default_factory=lambda: {"content": "小红下周三去杭州出差"})
    always: bool = False
    # Said after the result instead of copying it (a model that answers in its own words).
    own_words: str = ""

    def __call__(self, body: dict[str, Any]) -> Reply:
        results = results_this_turn(body["messages"]) or told_results(body["messages"])
        if self.always and results:
            self.seen.append(situation(body))
            return text(results[-1])
        return super().__call__(body)

    def with_tools(self, body: dict[str, Any]) -> Reply:
        results = results_this_turn(body["messages"])
        if not results:
            return tool_calls((self.name, self.arguments))
        return text(self.own_words or results[-1])


@dataclass
class BlockCopier(SmallModel):
    """While tools are allowed, answers with the first line of the member's message as
    sent, then `said`: the real model started its answers with the injected memory block's
    header ("【记忆笔记】以前记下的…"), or with its 【label】 alone (`label_only`)."""

    said: str = ""
    label_only: bool = False

    def with_tools(self, body: dict[str, Any]) -> Reply:
        [last] = [m for m in body["messages"] if m["role"] == "user"][-1:]
        content = last["content"]
        sent = content if isinstance(content, str) else content[0].get("text", "")
        first = sent.split("\n", 1)[0]
        if self.label_only and "】" in first:
            first = first[: first.index("】") + 1]
        return text(f"{first}{self.said}")


@dataclass
class NoteCopier(SmallModel):
    """While tools are allowed, answers with the first quoted note of the member's message
    in its quotes, after the QQ number in brackets: the real model answered "我家猫叫什么
    名字来着？" with "[20001] 「小明(20001)说：我家猫叫团子。」"."""

    # Copy the note's whole line instead, without its id and quotes but with the marks after
    # it, as the real model did in a private chat ("小明(20001)说：我家猫叫豆包。\n(关于
    # 20001)（小明(20001) 说，12-07）").
    whole_line: bool = False

    def with_tools(self, body: dict[str, Any]) -> Reply:
        [last] = [m for m in body["messages"] if m["role"] == "user"][-1:]
        said = str(last["content"])
        if self.whole_line:
            line = re.search(r"^#\S+ (?:\[[^\]]+\] )?「([^」\n]+)」(.*)$", said, re.MULTILINE)
            return text(f"{line.group(1)}\n{line.group(2).strip()}" if line else self.answer)
        note = re.search(r"「[^」\n]+」", said)
        return text(f"[2001] {note.group(0)}" if note else self.answer)


@dataclass
class ReplyCopier(SmallModel):
    """Says `answer` again, whatever it is asked, once it sees it among the replies in the
    request, as the real model answered "已记。" to every message once a few were in its
    window; else, for a message holding a key of `answers`, that key's answer, or
    `answer`."""

    answers: dict[str, str] = field(default_factory=dict)

    def __call__(self, body: dict[str, Any]) -> Reply:
        self.seen.append(situation(body))
        messages = body["messages"]
        said = [m.get("content") for m in messages if m["role"] == "assistant"]
        if self.answer in said:
            return text(self.answer)
        asked = str(messages[-1].get("content"))
        for question, answer in self.answers.items():
            if question in asked:
                return text(answer)
        return text(self.answer)

    def with_tools(self, body: dict[str, Any]) -> Reply:
        return self(body)


@dataclass
class EchoesAfterTools(SmallModel):
    """Calls `tool` once while tools are allowed, then, whenever a tool call is in sight,
    says the member's message back (speaker line aside), as the real model said "猫为什么
    喜欢钻纸箱？" back after a search, forced or not; with no call in sight, `answer`."""

    tool: str = "memory_search"

    def __call__(self, body: dict[str, Any]) -> Reply:
        self.seen.append(situation(body))
        messages = body["messages"]
        if any(m.get("tool_calls") for m in messages):
            users = [str(m.get("content")) for m in messages if m["role"] == "user"]
            return text(_SPEAKER_LINE.sub("", users[-1].splitlines()[-1]))
        return self.with_tools(body) if situation(body) == "tools" else text(self.answer)

    def with_tools(self, body: dict[str, Any]) -> Reply:
        asked = str(body["messages"][-1].get("content"))
        return tool_calls((self.tool, {"query": asked[-8:]}))


_SPEAKER_LINE = re.compile(r"^\[[^\]]*\]\s*(?:[^：]*：)?")
