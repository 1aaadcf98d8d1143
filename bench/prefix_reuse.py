"""Prompt-prefix reuse across the turns of one long conversation (provider prefix caching).

Runs a 200-turn group conversation (`to_me=True`, five speakers, lines of 10-150 characters,
some with an @mention of another member or a QQ face) through `nonebot.message.handle_event`
against FakeOpenAI on 127.0.0.1, recording every chat request of the conversation (requests
with another system prompt, i.e. compressor and fact-extraction calls, are left out). For
each request after the first:
  share = (leading messages byte-identical to the previous request's, compared as
           `json.dumps(message, sort_keys=True)` in order, stopping at the first difference)
          / (number of messages in the previous request).
Usage in the fake's answers is counted with cl100k, so the compressor sees real sizes.

Scenarios (each on its own group, the plugin restarted with the settings shown):
  text:        default settings, no long-term memories            <- the target applies here
  memories:    8 memories stored in the group's scope, so auto-inject puts the relevant ones
               before the turn's user message (for that request only);
  images:      `aimemory_multimodal=true`, an image in every 10th message, served by a tiny
               HTTP server on 127.0.0.1 (sent as a data URI that turn, the window keeps its
               text marker afterwards);
  compression: `aimemory_max_context_tokens=8000`, so the rolling summary folds the window
               every few dozen turns (each fold rewrites the prefix by design).

Target: share >= 95 % on every turn (text conversation).

Run: /tmp/venv/bin/python bench/prefix_reuse.py [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import struct
import sys
import tempfile
import threading
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import (
    RecordingBot,
    chat_line,
    init_nonebot,
    percentile,
    start_plugin,
    verdict,
)

TARGET_SHARE = 0.95
REPLIES = (
    "哈哈，这个我也遇到过，别太着急～",
    "我查了一下，一般来说晚上十一点左右停运，具体还是以官方公告为准哦。",
    "听起来不错！记得带水和防晒。",
    "可以先把报错的完整信息贴出来，我帮你看看是哪一行的问题。",
    "辛苦啦，周报写不完的话可以先列个提纲。",
    "好的，我记下了。",
)
SUMMARY = "事实：\n- 群友在聊奶茶、爬山、周报和服务器故障\n决定：\n- 无\n待办与未决：\n- 无"
SPEAKERS = (("小明", 2001), ("阿强", 2002), ("Lily", 2003), ("老王", 2004), ("糖糖", 2005))
MEMORIES = (
    "小明喜欢喝奶茶，常去公司楼下那家新开的店",
    "群里计划周末一起去爬山",
    "老王最近在学做饭，会做番茄炒蛋",
    "阿强负责项目的接口文档",
    "Lily 在准备考研",
    "糖糖养了一只爱推杯子的猫",
    "下个月团建定在杭州",
    "运维说服务器上次挂是因为磁盘满了",
)


@dataclass(frozen=True)
class Scenario:
    label: str
    group_id: int
    settings: dict[str, Any]
    image_every: int = 0
    memories: tuple[str, ...] = ()


SCENARIOS = (
    Scenario("text", 701, {}),
    Scenario("memories", 702, {}, memories=MEMORIES),
    Scenario("images", 703, {"aimemory_multimodal": True}, image_every=10),
    Scenario("compression", 704, {"aimemory_max_context_tokens": 8000}),
)
DEFAULT_SETTINGS = {"aimemory_multimodal": False, "aimemory_max_context_tokens": None}


def tiny_png() -> bytes:
    """A valid 1x1 PNG."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        checksum = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", checksum)

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00"))
        + chunk(b"IEND", b"")
    )


class _ImageHandler(BaseHTTPRequestHandler):
    body = tiny_png()

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "image/png")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, format: str, *args: Any) -> None:
        return


@contextmanager
def image_server() -> Iterator[str]:
    """Serve the PNG at any path on 127.0.0.1; yields the base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ImageHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def fake_model(body: dict[str, Any]) -> Any:
    """Varied short replies, a fixed summary for the compressor; cl100k-counted usage."""
    from tests.fakes.openai_server import text
    from tests.fakes.responders import count_prompt_tokens, is_compression_request

    messages = body["messages"]
    content = SUMMARY if is_compression_request(body) else REPLIES[len(messages) % len(REPLIES)]
    usage = {"prompt_tokens": count_prompt_tokens(messages), "completion_tokens": 20}
    return text(content, usage=usage)


def conversation_events(turns: int, scenario: Scenario, image_base: str) -> list[Any]:
    from nonebot.adapters.onebot.v11 import Message, MessageSegment

    from tests.fakes.events import group_message

    rng = random.Random(scenario.group_id)
    events = []
    for turn in range(1, turns + 1):
        name, user_id = rng.choice(SPEAKERS)
        content = Message(MessageSegment.text(chat_line(rng, 10, 150)))
        roll = rng.random()
        if roll < 0.15:
            content = MessageSegment.at(rng.choice(SPEAKERS)[1]) + content
        elif roll < 0.25:
            content += MessageSegment.face(14)
        if scenario.image_every and turn % scenario.image_every == 0:
            content += MessageSegment.image(f"{image_base}/pic{turn}.png")
        events.append(
            group_message(
                content, group_id=scenario.group_id, user_id=user_id, card=name, to_me=True
            )
        )
    return events


def leading_identical(previous: list[Any], current: list[Any]) -> int:
    """How many messages at the start of `current` equal those of `previous`, in order."""
    count = 0
    for old, new in zip(previous, current, strict=False):
        if json.dumps(old, sort_keys=True) != json.dumps(new, sort_keys=True):
            break
        count += 1
    return count


def prefix_shares(requests: list[dict[str, Any]]) -> list[tuple[int, float, int]]:
    """(turn number, share, first differing index) for every request after the first."""
    shares = []
    for turn in range(1, len(requests)):
        previous, current = requests[turn - 1]["messages"], requests[turn]["messages"]
        same = leading_identical(previous, current)
        shares.append((turn + 1, same / len(previous), same))
    return shares


async def run_scenario(
    scenario: Scenario, bot: RecordingBot, harness: Any, turns: int, image_base: str
) -> list[tuple[int, float, int]]:
    from nonebot.message import handle_event

    runtime = await harness.start(**{**DEFAULT_SETTINGS, **scenario.settings})
    key = f"g:{scenario.group_id}"
    for content in scenario.memories:
        assert runtime.memory is not None
        await runtime.memory.save(key, content, source="command")
    llm = harness.llm
    llm.reset()
    llm.responder = fake_model
    for event in conversation_events(turns, scenario, image_base):
        before = bot.sent_count
        await handle_event(bot, event)
        if bot.sent_count != before + 1:
            raise RuntimeError(f"{scenario.label}: a turn without a reply")
    system_prompt = runtime.system_prompt_for(key)
    requests = [r for r in llm.chat_requests if r["messages"][0]["content"] == system_prompt]
    if len(requests) != turns:
        raise RuntimeError(f"{scenario.label}: {len(requests)} chat requests for {turns} turns")
    session = runtime.sessions.get(key)
    shares = prefix_shares(requests)
    values = [share for _, share, _ in shares]
    below = [(turn, share, index) for turn, share, index in shares if share < TARGET_SHARE]
    p = scenario.label
    print(f"[{p}] turns: {turns}")
    print(f"[{p}] other LLM calls (compressor, extraction): {len(llm.chat_requests) - turns}")
    print(f"[{p}] messages in the last request: {len(requests[-1]['messages'])}")
    with_images = sum("image_url" in json.dumps(r["messages"][-1]) for r in requests)
    print(f"[{p}] requests whose new message carries an image part: {with_images}")
    if session is not None:
        print(f"[{p}] window tokens at the end: {session.bot.window.tokens}")
        print(f"[{p}] compressions: {session.bot.stats.count}")
    print(f"[{p}] prefix share min: {min(values):.2%}")
    print(f"[{p}] prefix share mean: {statistics.fmean(values):.2%}")
    print(f"[{p}] prefix share p5: {percentile(values, 0.05):.2%}")
    print(f"[{p}] turns below {TARGET_SHARE:.0%}: {len(below)}")
    for turn, share, index in below[:6]:
        print(f"[{p}]   turn {turn}: {share:.2%}, first difference at message {index}")
    if len(below) > 6:
        print(f"[{p}]   ... and {len(below) - 6} more")
    return shares


async def run(bot: RecordingBot, turns: int, data_dir: str) -> None:
    from tests.fakes.openai_server import FakeOpenAI

    results: dict[str, list[tuple[int, float, int]]] = {}
    with FakeOpenAI(api_key="sk-test") as llm, image_server() as image_base:
        harness = await start_plugin(f"{data_dir}/aimemory.db", llm)
        try:
            for scenario in SCENARIOS:
                shares = await run_scenario(scenario, bot, harness, turns, image_base)
                results[scenario.label] = shares
        finally:
            await harness.stop()
    worst = min(share for _, share, _ in results["text"])
    print(
        verdict(f"text: every turn >= {TARGET_SHARE:.0%}, min {worst:.2%}", worst >= TARGET_SHARE)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="30 turns instead of 200")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="aimemory-bench-") as data_dir:
        bot = init_nonebot(data_dir)
        asyncio.run(run(bot, 30 if args.quick else 200, data_dir))


if __name__ == "__main__":
    main()
