"""`bench.prefix_reuse --model-url URL --model NAME` (issue #39): on a real server that reports
its prompt cache (llama-server's `timings`, OpenAI's `cached_tokens`), a group conversation
folded at a small budget, without and with memories injected. Per main request, the share of
its prompt served from the cache, by what came before it (nothing, a fold, another call, or
nothing new: steady), and where its prefix broke. A single-slot server keeps one prompt:
any other request evicts the chat's, so only steady requests show what the prompts allow."""

from __future__ import annotations

import argparse
import json
import random
import time
from dataclasses import dataclass
from typing import Any

from nonebot.message import handle_event

from bench import generated_chat as gen
from bench import harness as h
from bench.real_model_plugin import EventClock, Models, model_runtime
from bench.real_model_proxy import Exchange, RecordingProxy, Upstream
from tests.fakes.bots import RecordingBot
from tests.fakes.events import group_message

TARGET_REUSE = 0.80
GROUP_ID = 705
TURNS, QUICK_TURNS = 16, 6
MEAN_GAP_SECONDS = 60
SUMMARY_MAX_TOKENS = 128
CONVERSATIONS = {"no-memories": False, "memories": True}
# Facts about the members, worded with the words the generated chat uses (bench/harness.py
# POOLS), so that most addressed lines find one or more to inject.
PLANTED = (
    "小明(2001)最爱吃火锅和烧烤，不吃香菜",
    "阿强(2002)周末常去爬山，下个月初要去成都出差",
    "Lily(2003)养了一只橘猫，叫豆豆",
    "老王(2004)在公司负责数据库和服务器，最怕接口报错",
    "糖糖(2005)喜欢周杰伦和五月天，想去看演唱会",
    "小明(2001)在玩原神和王者荣耀，周五晚上常开黑",
    "阿强(2002)最近买了机械键盘和降噪耳机",
    "Lily(2003)住在杭州西湖边，常去图书馆",
    "老王(2004)老家在西安，过年回去吃羊肉串和凉皮",
    "糖糖(2005)在学做饭，拿手菜是番茄炒蛋和红烧肉",
    "群里约好这个月底去北京聚餐，地点在商场新开的烤鸭店",
    "小明(2001)看过流浪地球和星际穿越，觉得沙丘一般",
)


@dataclass(frozen=True)
class CachedRequest:
    """One main-chat request: its tokens, how many the server had cached, what came before
    it, and how many leading messages it repeats of the previous main request."""

    turn: int | None
    prompt: int
    cached: int
    kind: str  # first, steady, after fold, after other call
    injected: bool
    kept: int
    previous: int
    change: str = ""

    @property
    def share(self) -> float:
        """The share of the prompt served from the cache."""
        return self.cached / self.prompt if self.prompt else 0.0


def real_options(parser: argparse.ArgumentParser) -> None:
    """The real-server mode's flags."""
    parser.add_argument("--model-url", help="OpenAI-compatible base URL (…/v1): the real mode")
    parser.add_argument("--model", help="the model the server serves")
    parser.add_argument("--budget", type=int, default=2560, help="context budget in tokens")
    parser.add_argument("--turns", type=int, help=f"addressed turns (default {TURNS})")
    parser.add_argument("--seed", type=int, default=39, help="draws the chat")
    only = "run only the conversation without memories, or only the one with them"
    parser.add_argument(
        "--conversations", choices=(*CONVERSATIONS, "both"), default="both", help=only
    )


def message_text(message: dict[str, Any]) -> str:
    """A request message's text, whether a string or parts."""
    content = message.get("content")
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content or "")


def first_change(old: dict[str, Any], new: dict[str, Any]) -> str:
    """Where two versions of a message part ways, a few characters either side."""
    before, after = message_text(old), message_text(new)
    at = next((i for i, (a, b) in enumerate(zip(before, after, strict=False)) if a != b), None)
    at = min(len(before), len(after)) if at is None else at
    start = max(0, at - 20)
    return f"{old.get('role')}: …{before[start : at + 40]!r} → …{after[start : at + 40]!r}"


def cached_requests(exchanges: list[Exchange]) -> list[CachedRequest]:
    """Each main request that got an answer, classified by what the server did just before."""
    from nonebot_plugin_aimemory.prompts import MEMORY_INJECTION_FOOTER

    found: list[CachedRequest] = []
    previous: list[dict[str, Any]] | None = None
    others: set[str] = set()
    for exchange in exchanges:
        if exchange.role != "main":
            others.add(exchange.role)
            continue
        usage, messages = exchange.usage(), exchange.request["messages"]
        if usage.cached is None or not usage.prompt:
            continue
        kind = "after fold" if "compressor" in others else "after other call" if others else ""
        kind = kind or ("steady" if previous is not None else "first")
        kept, change = 0, ""
        if previous is not None:
            for old, new in zip(previous, messages, strict=False):
                if json.dumps(old, sort_keys=True) != json.dumps(new, sort_keys=True):
                    change = first_change(old, new)
                    break
                kept += 1
        injected = MEMORY_INJECTION_FOOTER in message_text(messages[-1])
        tokens, before = (usage.prompt, usage.cached), len(previous or ())
        found.append(CachedRequest(exchange.turn, *tokens, kind, injected, kept, before, change))
        previous, others = messages, set()
    return found


async def plant_memories(runtime: h.Runtime) -> int:
    """Save PLANTED in the group's store; how many were saved."""
    service, scope = h.memory_service(runtime), h.group_key(GROUP_ID)
    saved = 0
    for fact in PLANTED:
        user_id = fact[fact.index("(") + 1 : fact.index(")")] if "(" in fact else None
        outcome = await service.save(scope, fact, user_id=user_id, source="command")
        saved += outcome.status == "saved"
    return saved


async def converse(bench: h.Bench, models: Models, label: str, *, memories: bool) -> list[Any]:
    """One conversation on a fresh runtime; its main requests, and the replies sent."""
    args, rng = bench.args, random.Random(bench.args.seed)
    turns = args.turns or (QUICK_TURNS if bench.quick else TURNS)
    clock = EventClock(int(time.time()) - MEAN_GAP_SECONDS * 3 * turns, rng)
    settings = {
        "aimemory_max_context_tokens": args.budget,
        "aimemory_memory_auto_inject": memories,
        "aimemory_review_enabled": False,
        "aimemory_guard_check": False,  # planting needs no model; a save in a turn neither
        # A short summary: a fold is measured by the request after it, not by its summary.
        "aimemory_compress_summary_max_tokens": SUMMARY_MAX_TOKENS,
        # Its request after a fold would evict a single-slot server's cache as the fold's does.
        "aimemory_memory_extract_on_compact": False,
    }
    bot = RecordingBot()
    with RecordingProxy(models.routes()) as proxy:
        db_path = bench.work_dir / f"cache-{label}.db"
        async with model_runtime(proxy, models, db_path, window_only=False, **settings) as runtime:
            planted = await plant_memories(runtime) if memories else 0
            started = time.monotonic()
            for turn in range(turns):
                for _ in range(rng.randint(0, 3)):
                    name, user_id = rng.choice(gen.SPEAKERS)
                    line = gen.chat_line(rng, 10, 80)
                    event = group_message(
                        line, group_id=GROUP_ID, user_id=user_id, card=name, event_time=clock.next()
                    )
                    await handle_event(bot, event)
                proxy.turn = turn
                event = gen.addressed(gen.chat_line(rng, 10, 120), GROUP_ID, rng, clock.next())
                await handle_event(bot, event)
                proxy.turn = None
            await proxy.settle(quiet_seconds=2.0, max_seconds=300.0)
            seconds = time.monotonic() - started
        rejected = proxy.new_rejections()
    requests = cached_requests(proxy.exchanges)
    roles = {e.role for e in proxy.exchanges}
    print(
        f"\n[{label}] {turns} turns in {seconds:.0f} s, {len(bot.sent)} replies sent, "
        f"{planted} memories planted, {len(proxy.exchanges)} requests ({', '.join(sorted(roles))})"
        f", {len(rejected)} refused by the proxy"
    )
    print_requests(label, requests)
    return requests


def pooled(requests: list[CachedRequest]) -> float:
    """Cached tokens over prompt tokens of `requests` (0 when none)."""
    prompt = sum(r.prompt for r in requests)
    return sum(r.cached for r in requests) / prompt if prompt else 0.0


def print_requests(label: str, requests: list[CachedRequest]) -> None:
    """Each request's share, then the shares by kind and every broken prefix."""
    print(f"[{label}] turn  prompt  cached  share   kind              kept/prev  injected")
    for r in requests:
        print(
            f"[{label}] {r.turn if r.turn is not None else '-':>4}  {r.prompt:6}  {r.cached:6}  "
            f"{r.share:6.1%}  {r.kind:<16}  {r.kept:>3}/{r.previous:<3}    "
            f"{'yes' if r.injected else ''}"
        )
    for kind in ("first", "steady", "after fold", "after other call"):
        chosen = [r for r in requests if r.kind == kind]
        if chosen:
            low, count = min(r.share for r in chosen), len(chosen)
            print(f"[{label}] {kind:<16} n={count:<3} pooled {pooled(chosen):6.1%}  min {low:6.1%}")
    for r in requests:
        if r.change:
            print(f"[{label}] turn {r.turn}: message {r.kept} of {r.previous} changed: {r.change}")


async def run_real(bench: h.Bench) -> None:
    """Both conversations, then the verdict on the steady requests."""
    args = bench.args
    if not args.model:
        raise SystemExit("--model-url needs --model NAME")
    upstream = Upstream(args.model_url.rstrip("/"), args.model)
    models = Models(upstream, upstream, upstream)
    target = f"target steady >= {TARGET_REUSE:.0%}"
    print(f"model {upstream.label}; budget {args.budget} tokens; {target}")
    steady: dict[str, float] = {}
    for label, memories in CONVERSATIONS.items():
        if args.conversations in (label, "both"):
            requests = await converse(bench, models, label, memories=memories)
            steady[label] = pooled([r for r in requests if r.kind == "steady"])
    shares = ", ".join(f"{share:.1%} {label}" for label, share in steady.items())
    h.verdict(
        f"steady requests served from the cache: {shares}; target >= {TARGET_REUSE:.0%}",
        min(steady.values()) >= TARGET_REUSE,
        quick=bench.quick,
    )
