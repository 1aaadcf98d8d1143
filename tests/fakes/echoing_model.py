"""Responders that behave like the small real model of issue #36 when it copies the shape
of what it reads instead of answering: it writes out the request it was sent and then its
answer behind a label, writes calls the way the plugin tells results, or loops until its
token cap. Assign one to `FakeOpenAI.responder`."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .openai_server import Reply, text
from .small_model import SmallModel, ToolLooper, situation

__all__ = [
    "LABEL",
    "RECORD",
    "Looper",
    "RecordWriter",
    "RequestEchoer",
    "ToldFormWriter",
    "told_calls",
]

# The label Qwen2.5-Coder-1.5B put before its answer once it had written the request out.
LABEL = "【你的回复】"


def told_calls(tool: str, query: str, times: int = 2) -> str:
    """Calls written as the plugin tells results, each with a made-up `结果：` after it, as
    the real model wrote them: "- memory_search：\\n keyword=菠萝 allergy\\n\\n结果：…"."""
    return "\n".join(f"- {tool}：\n keyword={query}\n\n结果：" for _ in range(times))


@dataclass
class RequestEchoer(ToolLooper):
    """Searches while tools are allowed and says nothing when forced; asked without tools,
    writes the request's last message out up to the member's own line (the last that
    starts with "["), then `answer` behind LABEL, as the real model answered the plain
    last request: "【工具结果】你刚才调用工具得到的结果…【笔记结束】\n【你的回复】我开的
    是一辆汽车来着。"."""

    def __call__(self, body: dict[str, Any]) -> Reply:
        where = situation(body)
        if where == "tools":
            return super().__call__(body)
        self.seen.append(where)
        if where == "forced":
            return self.empty()
        lines = str(body["messages"][-1]["content"]).splitlines()
        own = max(i for i, line in enumerate(lines) if line.startswith("["))
        return text("\n".join(lines[:own]) + f"\n{LABEL}{self.answer}")


@dataclass
class ToldFormWriter(SmallModel):
    """While tools are allowed, writes calls as the plugin tells results and, when `said`,
    an answer behind LABEL after them (the real model, a reply of that shape in its
    window); forced or bare, `answer`."""

    tool: str = "memory_search"
    said: str = ""
    times: int = 2

    def with_tools(self, body: dict[str, Any]) -> Reply:
        written = told_calls(self.tool, "菠萝 allergy", self.times)
        return text(f"{written}\n\n{LABEL}{self.said}" if self.said else written)


@dataclass
class Looper(SmallModel):
    """While tools are allowed, says `unit` `times` times over, as the real model wrote
    four lines until its 4 096-token cap; forced or bare, `answer`."""

    unit: str = "哈"
    times: int = 600

    def with_tools(self, body: dict[str, Any]) -> Reply:
        return text(self.unit * self.times)


# What the real model answered "帮我记一下：我家猫叫豆包。" with, tools offered.
RECORD = {"id": "123", "content": "我的猫叫豆包", "tags": ["animal", "cat"], "user_id": "20001"}


@dataclass
class RecordWriter(SmallModel):
    """While tools are allowed (or `always`), answers with a memory record as JSON text
    instead of words or a call, as the real model did; forced or bare, `answer`."""

    always: bool = False

    def __call__(self, body: dict[str, Any]) -> Reply:
        if self.always:
            return self.with_tools(body)
        return super().__call__(body)

    def with_tools(self, body: dict[str, Any]) -> Reply:
        return text(json.dumps(RECORD, ensure_ascii=False))
