"""Latency of `MemoryService.search` and `save` at 200 and 10 000 templated Chinese facts
that share words (keyword scoring; queries are tool keywords and whole chat lines), beside the
newest-first listing `search(scope, None)` (the baseline).
Targets: search p99 <= 5 ms at 200 and <= 50 ms at 10 000; save p99 <= 10 ms at 200.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import NamedTuple

from bench import harness as h

SMALL_ENTRIES = 200
SAVES_PER_ROUND = 25
TARGET_SEARCH_SMALL_MS, TARGET_SEARCH_LARGE_MS, TARGET_SAVE_SMALL_MS = 5.0, 50.0, 10.0
USER_IDS = {name: str(20001 + i) for i, name in enumerate(h.POOLS["name"])}
# (content, tags) of memories; the same person or object recurs in different wordings.
MEMORY_TEMPLATES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("{name}住在{city}，离公司大概{num}米", ("住址", "{name}")),
    ("{name}的老家在{city}", ("老家", "{name}")),
    ("{name}喜欢吃{food}", ("饮食", "偏好")),
    ("{name}不吃{food}，聚餐时记得避开", ("饮食", "忌口")),
    ("{name}养了一只{pet}", ("宠物", "{name}")),
    ("{name}最喜欢的歌手是{singer}", ("音乐", "偏好")),
    ("{name}平时喜欢{hobby}，周末经常去", ("爱好", "{name}")),
    ("{name}玩{game}很厉害", ("游戏", "{name}")),
    ("{name}{when}要去{city}出差", ("计划", "{name}")),
    ("{name}{past}在{place}丢了{thing}", ("事件", "{name}")),
    ("{name}{past}买了{thing}，花了{price}块", ("购物", "{name}")),
    ("{name}负责{tech}，出了问题找他", ("工作", "{name}")),
    ("{when}的聚餐定在{city}的{place}，{name}负责订位", ("聚餐", "安排")),
    ("{name}觉得{movie}很好看，推荐大家去看", ("电影", "{name}")),
)
QUERY_TEMPLATES = (
    *("{name} 喜欢吃什么", "谁不吃{food}", "{name} 住在哪", "{name}的{pet}", "{food} {city}"),
    *("{hobby} {name}", "{city} 出差", "聚餐 {place}", "{name} {when} 计划"),
    *("@小忆 你还记得{name}喜欢吃什么吗", "{when}聚餐去{city}，大家有什么忌口的吗？"),
    *("小忆，{name}的生日快到了，送什么礼物好", "周末想去吃{food}，有谁一起，{name}你去不去"),
    *("{name}是不是说过{when}要去{city}出差", "{past}那个{thing}的事后来怎么样了"),
)


class Memory(NamedTuple):
    """What the model would pass to the save tool."""

    content: str
    tags: tuple[str, ...]
    user_id: str | None


def memories(rng: random.Random, count: int, seen: set[str]) -> list[Memory]:
    """`count` memories whose content is new to `seen` (which they are added to)."""
    result: list[Memory] = []
    while len(result) < count:
        template, tag_templates = rng.choice(MEMORY_TEMPLATES)
        picks: dict[str, str] = {}
        content = h.fill(rng, template, picks)
        if content not in seen:
            seen.add(content)
            tags = tuple(h.fill(rng, tag, picks) for tag in tag_templates)
            user_id = (
                USER_IDS.get(picks["name"]) if "name" in picks and rng.random() < 0.7 else None
            )
            result.append(Memory(content, tags, user_id))
    return result


def queries(rng: random.Random, count: int) -> list[str]:
    """`count` different queries (a repeated one would hit the tokenizer's cache)."""
    found: dict[str, None] = {}
    while len(found) < count:
        found[h.fill(rng, rng.choice(QUERY_TEMPLATES))] = None
    return list(found)


async def save_all(service: h.MemoryService, scope: str, batch: Sequence[Memory]) -> list[int]:
    """Save `batch` in `scope`; nanoseconds of each save."""

    async def save(memory: Memory) -> None:
        outcome = await service.save(
            scope, memory.content, tags=memory.tags, user_id=memory.user_id
        )
        if outcome.status != "saved":
            raise RuntimeError(f"save in {scope}: {outcome.status}: {memory.content}")

    return await h.timed(save, batch)


async def run(bench: h.Bench) -> None:
    """Fill the scopes, time search and save, then print the figures and the verdicts."""
    large_entries, searches, rounds = (2_000, 100, 2) if bench.quick else (10_000, 500, 8)
    warmup = searches // 10
    rng = random.Random(20261130)
    seen: set[str] = set()
    async with h.plugin(bench, aimemory_memory_max_entries=2 * large_entries) as (_, runtime):
        service = h.memory_service(runtime)

        async def search_all(scope: str, texts: Sequence[str | None]) -> list[int]:
            return await h.timed(lambda query: service.search(scope, query), texts, warmup)

        small_fill = memories(rng, SMALL_ENTRIES, seen)
        await save_all(service, "g:1", small_fill)
        small_search = await search_all("g:1", queries(rng, warmup + searches))
        small_list = await search_all("g:1", [None] * (warmup + searches))
        small_save: list[int] = []
        for scope in (f"g:{100 + index}" for index in range(rounds)):
            await save_all(service, scope, small_fill)
            small_save += await save_all(service, scope, memories(rng, SAVES_PER_ROUND, seen))
        await save_all(service, "g:2", memories(rng, large_entries, seen))
        large_search = await search_all("g:2", queries(rng, warmup + searches))
        large_list = await search_all("g:2", [None] * (warmup + searches))
    large = f"{large_entries:,}".replace(",", " ")
    print(f"memories: {SMALL_ENTRIES} and {large}, keyword scoring only")
    saves_at = f"{SMALL_ENTRIES}..{SMALL_ENTRIES + SAVES_PER_ROUND - 1}"
    for label, samples in (
        (f"[{SMALL_ENTRIES}] search(scope, query)", small_search),
        (f"[{SMALL_ENTRIES}] search(scope, None), baseline", small_list),
        (f"[{SMALL_ENTRIES}] save at {saves_at} entries", small_save),
        (f"[{large}] search(scope, query)", large_search),
        (f"[{large}] search(scope, None), baseline", large_list),
    ):
        print(h.latency(label, samples))
    p99 = [h.ms(h.percentile(s, 0.99)) for s in (small_search, large_search, small_save)]
    for what, value, target, size, quick in (
        ("search p99", p99[0], TARGET_SEARCH_SMALL_MS, SMALL_ENTRIES, False),
        ("search p99", p99[1], TARGET_SEARCH_LARGE_MS, large, bench.quick),
        ("save p99", p99[2], TARGET_SAVE_SMALL_MS, SMALL_ENTRIES, False),
    ):
        h.verdict(f"{what} {value:.3f} ms <= {target} ms at {size}", value <= target, quick=quick)


if __name__ == "__main__":
    h.main(__doc__, run)
