"""On a model server of this machine (llama.cpp's one slot), a background call pushes the
member's conversation out of the prompt cache; in the next lull the member's last request
is sent again for one token, so that their next turn reads only what is new
(engine/prompt_warmup.py). Only when the last two member requests opened alike (one
system prompt), never over a member's turn, never to a provider's API."""

from __future__ import annotations

import asyncio
import time

import pytest

from tests.chatlog.helpers import said
from tests.fakes.bots import RecordingBot
from tests.fakes.one_slot import OneSlotServer
from tests.fakes.openai_server import DelayReply, echo_responder

LOCAL = "http://127.0.0.1:8080"
PROVIDER = "https://api.deepseek.com"
LULL = 0.2


class Sends:
    """Warm-up sends that count their starts and how many were stopped."""

    def __init__(self, seconds: float = 0.0) -> None:
        self.seconds = seconds
        self.started: list[tuple[str, float]] = []
        self.stopped = 0

    def warmup(self, conversation: str, label: str):
        from nonebot_plugin_aimemory.engine.prompt_warmup import Warmup

        async def send() -> None:
            self.started.append((label, time.monotonic()))
            try:
                await asyncio.sleep(self.seconds)
            except asyncio.CancelledError:
                self.stopped += 1
                raise

        return Warmup(conversation.encode(), send)


async def answered_turn(traffic, server: str, warmup) -> float:
    """A member's turn on `server` whose request `warmup` sends again; when it ended."""
    async with traffic.turn(), traffic.foreground(server):
        await asyncio.sleep(0.01)
    traffic.answered(server, warmup)
    return time.monotonic()


async def a_review() -> str:
    return "审"


async def a_warm_up_under_way(traffic, seconds: float):
    """Two turns of one group, a review, and the warm-up after it started (`seconds` long)."""
    sends = Sends(seconds)
    await answered_turn(traffic, LOCAL, sends.warmup("群1", "first"))
    await answered_turn(traffic, LOCAL, sends.warmup("群1", "second"))
    await traffic.background(LOCAL, a_review, "review")
    for _ in range(100):
        if sends.started:
            break
        await asyncio.sleep(0.02)
    assert sends.started, "the warm-up never started"
    return traffic, sends


async def started(sends: Sends, count: int = 1) -> None:
    """Wait until `count` warm-ups started (or 2 s passed); then a lull more, for any other."""
    for _ in range(100):
        if len(sends.started) >= count:
            break
        await asyncio.sleep(0.02)
    await asyncio.sleep(LULL * 2)


async def test_after_a_review_the_last_request_is_sent_again() -> None:
    from nonebot_plugin_aimemory.engine.model_traffic import ModelTraffic

    traffic, sends = ModelTraffic(lull_seconds=LULL), Sends()
    await answered_turn(traffic, LOCAL, sends.warmup("群1", "first"))
    turn_ended = await answered_turn(traffic, LOCAL, sends.warmup("群1", "second"))

    await traffic.background(LOCAL, a_review, "review")
    reviewed = time.monotonic()
    await started(sends)

    assert [label for label, _ in sends.started] == ["second"]
    assert sends.started[0][1] >= reviewed
    assert sends.started[0][1] - turn_ended >= LULL * 0.9  # in a lull, as the review


async def test_nothing_is_sent_again_when_no_background_call_ran() -> None:
    from nonebot_plugin_aimemory.engine.model_traffic import ModelTraffic

    traffic, sends = ModelTraffic(lull_seconds=LULL), Sends()
    await answered_turn(traffic, LOCAL, sends.warmup("群1", "first"))
    await answered_turn(traffic, LOCAL, sends.warmup("群1", "second"))
    await asyncio.sleep(LULL * 2)

    assert sends.started == []


@pytest.mark.parametrize(
    ("server", "conversations", "warm_up"),
    [
        (LOCAL, ("小忆", "小咪"), True),  # two personas: little of one serves the other
        (PROVIDER, ("小忆", "小忆"), True),  # a provider's API has caches of its own
        (LOCAL, ("小忆", "小忆"), False),  # AIMEMORY_PROMPT_WARMUP=false
    ],
)
async def test_nothing_is_sent_again_for_another_persona_a_provider_or_when_off(
    server: str, conversations: tuple[str, str], warm_up: bool
) -> None:
    from nonebot_plugin_aimemory.engine.model_traffic import ModelTraffic

    traffic, sends = ModelTraffic(lull_seconds=LULL, warm_up=warm_up), Sends()
    for label, conversation in zip(("first", "second"), conversations, strict=True):
        await answered_turn(traffic, server, sends.warmup(conversation, label))

    await traffic.background(server, a_review, "review")
    await asyncio.sleep(LULL * 3)

    assert sends.started == []


async def test_one_warm_up_after_the_last_of_several_background_calls() -> None:
    from nonebot_plugin_aimemory.engine.model_traffic import ModelTraffic

    traffic, sends = ModelTraffic(lull_seconds=LULL), Sends()
    await answered_turn(traffic, LOCAL, sends.warmup("群1", "first"))
    await answered_turn(traffic, LOCAL, sends.warmup("群1", "second"))

    reviews_ended: list[float] = []

    async def a_timed_review() -> str:
        await asyncio.sleep(0.05)
        reviews_ended.append(time.monotonic())
        return "审"

    calls = (traffic.background(LOCAL, a_timed_review, f"review {i}") for i in range(3))
    await asyncio.gather(*calls)
    await started(sends)

    assert len(reviews_ended) == 3
    assert len(sends.started) == 1
    assert sends.started[0][1] >= max(reviews_ended)


async def test_a_members_turn_stops_the_warm_up_and_fills_the_cache_itself() -> None:
    from nonebot_plugin_aimemory.engine.model_traffic import ModelTraffic

    traffic, sends = await a_warm_up_under_way(ModelTraffic(lull_seconds=LULL), seconds=5.0)

    asked = time.monotonic()
    await answered_turn(traffic, LOCAL, sends.warmup("群1", "third"))
    answered = time.monotonic()
    await asyncio.sleep(LULL * 3)

    assert answered - asked < 1.0
    assert sends.stopped == 1
    assert len(sends.started) == 1  # the member's own request is in the cache now


async def test_stopping_the_traffic_stops_a_warm_up_under_way() -> None:
    from nonebot_plugin_aimemory.engine.model_traffic import ModelTraffic

    traffic, sends = await a_warm_up_under_way(ModelTraffic(lull_seconds=LULL), seconds=30.0)

    await asyncio.wait_for(traffic.close(), 1.0)
    await traffic.background(LOCAL, a_review, "a review ending after the stop")
    await asyncio.sleep(LULL * 3)

    assert sends.stopped == 1
    assert len(sends.started) == 1


def test_requests_open_alike_by_their_system_prompt_whatever_their_window() -> None:
    from nonebot_plugin_aimemory.engine.messages import assistant, system, user
    from nonebot_plugin_aimemory.engine.prompt_warmup import opening_of

    persona, other = system("你是小忆"), system("你是猫娘小咪")
    sliding = [persona, user("周六爬山吗"), assistant("好呀")]
    slid = [persona, user("记得带水"), assistant("收到")]

    assert opening_of(sliding) == opening_of(slid)
    assert opening_of(sliding) != opening_of([other, *slid[1:]])


# --------------------------------------------------------------------- through the plugin


def main_reads(slot: OneSlotServer) -> list:
    """The requests of members' turns (the tools offered), warm-ups (one token) apart."""
    return [read for read in slot.reads if read.body.get("tools")]


async def two_turns_then_a_review(
    plugin, slot: OneSlotServer, cap_field: str = "max_tokens", **settings
) -> RecordingBot:
    """Two members' turns in one group, then a review's call through the plugin's client;
    the main model's output cap in `cap_field` (another after a server refused one)."""
    from nonebot_plugin_aimemory.engine.messages import system, user

    plugin.llm.responder = slot
    await plugin.restart(aimemory_background_lull_seconds=LULL, **settings)
    plugin.runtime.llm.cap.field = cap_field
    bot = RecordingBot()
    await bot.receive(said("我们周六去爬山吧", to_me=True))
    await bot.receive(said("记得带水和雨衣", to_me=True))
    reviewer = plugin.runtime.llm.for_role("reviewer")
    await reviewer.complete([system("你是记忆整理员"), user("整理这段聊天")], context="test")
    return bot


async def test_the_next_turn_reads_its_conversation_from_the_cache_again(plugin) -> None:
    slot = OneSlotServer(echo_responder)
    bot = await two_turns_then_a_review(plugin, slot, aimemory_prompt_warmup=True)
    last_main = main_reads(slot)[-1]
    for _ in range(100):
        if slot.reads[-1].body.get("max_tokens") == 1:
            break
        await asyncio.sleep(0.05)
    warm = slot.reads[-1]
    assert warm.body["messages"] == last_main.body["messages"]
    assert warm.body["tools"] == last_main.body["tools"]
    assert warm.body["max_tokens"] == 1

    await bot.receive(said("那几点出发？", to_me=True))

    assert main_reads(slot)[-1].cached_share > 0.8


async def test_without_the_warm_up_the_next_turn_reads_its_prompt_again(plugin) -> None:
    slot = OneSlotServer(echo_responder)
    bot = await two_turns_then_a_review(plugin, slot, aimemory_prompt_warmup=False)
    await asyncio.sleep(LULL * 3)
    assert not [read for read in slot.reads if read.body.get("max_tokens") == 1]

    await bot.receive(said("那几点出发？", to_me=True))

    assert main_reads(slot)[-1].cached_share < 0.2


async def test_a_member_is_not_kept_waiting_behind_a_slow_warm_up(plugin) -> None:
    def slow_warm_up(body: dict):
        reply = echo_responder(body)
        return DelayReply(5.0, reply) if body.get("max_tokens") == 1 else reply

    slot = OneSlotServer(slow_warm_up)
    bot = await two_turns_then_a_review(plugin, slot, aimemory_prompt_warmup=True)
    for _ in range(100):
        if slot.reads[-1].body.get("max_tokens") == 1:
            break
        await asyncio.sleep(0.05)
    assert slot.reads[-1].body.get("max_tokens") == 1, "the warm-up never started"

    asked = time.monotonic()
    await bot.receive(said("那几点出发？", to_me=True))

    assert time.monotonic() - asked < 2.0
    assert "那几点出发" in bot.sent_texts[-1]


async def test_a_plain_request_after_the_turn_is_not_what_is_warmed_up(plugin) -> None:
    # given a turn that ended with a plain request (a re-ask, the last request without
    # tools): the next turn's request opens with the tools, as the turn's full one did
    from nonebot_plugin_aimemory.engine.messages import system, user

    slot = OneSlotServer(echo_responder)
    bot = await two_turns_then_a_review(plugin, slot, aimemory_prompt_warmup=True)
    full = main_reads(slot)[-1]
    await plugin.runtime.llm.complete([system("你是小忆"), user("再答一次")], context="plain")
    reviewer = plugin.runtime.llm.for_role("reviewer")
    await reviewer.complete([system("你是记忆整理员"), user("再整理")], context="test")
    for _ in range(100):
        if slot.reads[-1].body.get("max_tokens") == 1:
            break
        await asyncio.sleep(0.05)

    assert slot.reads[-1].body["messages"] == full.body["messages"]
    await bot.receive(said("那几点出发？", to_me=True))
    assert main_reads(slot)[-1].cached_share > 0.8


async def test_the_warm_up_caps_its_answer_in_the_field_the_server_takes(plugin) -> None:
    # given a server that refused `max_tokens` earlier (output_cap.py moved to the next field)
    slot = OneSlotServer(echo_responder)
    await two_turns_then_a_review(
        plugin, slot, cap_field="max_completion_tokens", aimemory_prompt_warmup=True
    )
    for _ in range(100):
        if slot.reads[-1].body.get("max_completion_tokens") == 1:
            break
        await asyncio.sleep(0.05)

    warm = slot.reads[-1].body
    assert warm["max_completion_tokens"] == 1
    assert "max_tokens" not in warm
