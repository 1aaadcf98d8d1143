"""Latency of long-term memory search, save and scope loading at 200 and 10 000 entries.

Drives the real `MemoryService` over a real `MemoryStore` on a SQLite file in a temporary
directory, with jieba loaded by `segmenter.initialise()` before any timing and no embeddings
(keyword scoring only, as without `aimemory_embedding_model`). One scope is filled with 200
memories through `save()` and another with 10 000 through `MemoryStore.insert` (the same
records `save` would write; going through `save` would spend most of the run on the fill).
The memories are Chinese facts about people, preferences, plans and events, generated from
templates with varied names and objects, so that many of them share words: keyword scoring
ranks real candidates and the near-duplicate check of `save` flags real neighbours.
`max_entries` is set above the count, so no save is refused as full.

Measured with `time.perf_counter_ns` around each awaited call, after a warm-up:
- `search(scope, query)`: 500 distinct queries, tool-style keywords ("小明 生日") and whole
  chat messages as auto-injection passes them ("小忆，你还记得小明喜欢吃什么吗"), p50 / p99;
- `search(scope, None)` (the newest-first listing), p50 / p99, printed separately;
- `save(...)` of new distinct memories with the near-duplicate check and the SQLite insert:
  at 200 entries in rounds of 25 saves, each round on a fresh scope refilled with the same 200
  entries (so every save sees 200..224 live entries); at 10 000 entries for information;
- loading a scope from the database into a new `MemoryService` (cold cache), once with the
  tokenizer cache cleared (a restarted process) and once with it warm.

Targets: search p99 <= 5 ms at 200 entries and <= 50 ms at 10 000; save p99 <= 10 ms at 200.
The full run takes about 20 seconds; `--quick` uses 2 000 instead of 10 000 entries and fewer
iterations (a smoke run: the 10 000-entry target is then not judged).

Run: /tmp/venv/bin/python bench/memory_search.py [--quick] [--profile PHASE]
"""

from __future__ import annotations

import cProfile
import gc
import io
import pstats
import random
import string
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import ms, percentile, run_planned_bench, verdict

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.memory.service import MemoryService
    from nonebot_plugin_aimemory.store.memory_store import MemoryRecord, MemoryStore

T = TypeVar("T")
R = TypeVar("R")

SEED = 20261130
SMALL_ENTRIES = 200
LARGE_ENTRIES = 10_000
QUICK_LARGE_ENTRIES = 2_000
TARGET_SEARCH_SMALL_MS = 5.0
TARGET_SEARCH_LARGE_MS = 50.0
TARGET_SAVE_SMALL_MS = 10.0
SAVES_PER_ROUND = 25
SMALL_SCOPE = "g:736451029"
LARGE_SCOPE = "g:815620374"
SAVE_SCOPE_PREFIX = "g:9000"
NEWEST_MEMORY_AT = datetime(2026, 11, 30, 14, 5, tzinfo=timezone.utc)
MEMORY_SPREAD_SECONDS = 365 * 24 * 3600
PROFILE_PHASES = (
    "search-small",
    "list-small",
    "save-small",
    "search-large",
    "list-large",
    "save-large",
    "load-large",
)


@dataclass(frozen=True)
class Plan:
    """Iteration counts of one run."""

    large_entries: int
    searches: int
    search_warmup: int
    save_rounds: int
    save_warmup: int
    large_saves: int
    small_loads: int
    large_loads: int


FULL_PLAN = Plan(LARGE_ENTRIES, 500, 50, 20, 25, 200, 20, 3)
QUICK_PLAN = Plan(QUICK_LARGE_ENTRIES, 100, 10, 2, 5, 30, 3, 1)

# Slot values; a template names its slots as {pool} and its tags may use them too.
POOLS: dict[str, tuple[str, ...]] = {
    "name": (
        *("小明", "阿强", "Lily", "老王", "糖糖", "夜猫子", "张伟", "李娜", "王芳", "刘洋"),
        *("陈静", "杨帆", "赵磊", "黄丽", "周洁", "吴敏", "徐涛", "孙悦", "马超", "朱婷"),
        *("胡斌", "郭靖宇", "林小雨", "何雪", "高远", "罗琳", "郑凯", "梁晨", "谢婷婷", "宋佳"),
        *("唐宁", "许多多", "韩梅梅", "阿杰", "大熊", "豆豆", "小鱼", "老李", "Kevin", "Amy"),
    ),
    "month": tuple(str(m) for m in range(1, 13)),
    "day": tuple(str(d) for d in range(1, 29)),
    "city": (
        *("北京", "上海", "杭州", "成都", "重庆", "西安", "南京", "武汉", "广州", "深圳"),
        *("苏州", "长沙", "厦门", "青岛", "大连", "哈尔滨", "昆明", "洛阳", "天津", "宁波"),
    ),
    "district": (
        *("朝阳区", "海淀区", "西湖区", "滨江区", "浦东新区", "徐汇区"),
        *("武侯区", "高新区", "天河区", "南山区", "鼓楼区", "江北区"),
    ),
    "minutes": ("十", "十五", "二十", "半小时", "四十", "一个小时"),
    "company": (
        *("一家游戏公司", "一家银行", "市第一医院", "一所中学", "一家外企"),
        *("一家创业公司", "设计院", "物流公司", "律师事务所", "电视台"),
    ),
    "job": (
        *("美术", "前端开发", "后端开发", "产品经理", "护士", "老师"),
        *("会计", "销售", "运维", "测试", "设计师", "翻译"),
    ),
    "pet": ("橘猫", "布偶猫", "英短", "柯基", "金毛", "柴犬", "仓鼠", "鹦鹉", "乌龟", "兔子"),
    "petname": (
        *("年糕", "旺财", "豆包", "团子", "可乐", "雪球"),
        *("煤球", "布丁", "大黄", "咪咪", "花卷", "馒头"),
    ),
    "relative": (
        *("女朋友", "男朋友", "老婆", "老公", "女儿"),
        *("儿子", "妹妹", "哥哥", "妈妈", "室友"),
    ),
    "othername": ("阿珍", "小芳", "大壮", "婷婷", "乐乐", "晓雯", "子轩", "欣怡", "浩然", "思琪"),
    "food": (
        *("火锅", "烧烤", "麻辣烫", "螺蛳粉", "寿司", "披萨", "小龙虾", "红烧肉"),
        *("饺子", "牛肉面", "煎饼果子", "烤鸭", "酸菜鱼", "肠粉", "炸鸡", "冒菜"),
        *("生煎", "羊肉串", "番茄炒蛋", "榴莲", "香菜", "芒果"),
    ),
    "flavor": ("特辣", "微辣", "清汤", "麻辣", "甜口", "蒜香", "番茄"),
    "degree": ("特别", "超级", "一直很", "其实挺", "最近很", "从小就"),
    "allergen": (
        *("花生", "海鲜", "芒果", "猫毛", "花粉"),
        *("青霉素", "牛奶", "鸡蛋", "虾", "坚果"),
    ),
    "singer": (
        *("周杰伦", "陈奕迅", "林俊杰", "五月天", "邓紫棋"),
        *("薛之谦", "王菲", "李健", "Taylor Swift", "毛不易"),
    ),
    "hobby": (
        *("爬山", "打羽毛球", "游泳", "弹吉他", "拍照", "打游戏"),
        *("看悬疑小说", "跑步", "钓鱼", "做手工", "下围棋", "追番"),
    ),
    "drink": ("乌龙茶", "美式咖啡", "冰可乐", "豆浆", "奶茶", "白开水", "菊花茶", "啤酒"),
    "dislike": ("香菜", "下雨天", "早起", "开长会", "排队", "加班", "吵闹的地方", "榴莲的味道"),
    "when": (
        *("下周三", "下周末", "这个月底", "下个月初", "十二月中旬"),
        *("元旦", "春节前", "国庆假期", "明天", "周五晚上"),
    ),
    "purpose": ("出差", "看演唱会", "参加婚礼", "面试", "旅游", "见网友", "探亲", "考试", "开会"),
    "activity": (
        *("去考驾照", "开始健身", "学日语", "换工作", "搬家"),
        *("装修房子", "报名马拉松", "去学潜水", "买车", "戒烟"),
    ),
    "days": ("两", "三", "五", "七", "十"),
    "reason": ("回老家办事", "陪家人看病", "去旅游", "准备考试", "处理搬家的事"),
    "groupevent": ("团建", "年会", "聚餐", "羽毛球比赛", "剧本杀", "读书会", "烧烤活动", "徒步"),
    "duty": ("订酒店", "租车", "买零食", "订餐厅", "拍照", "收钱", "做攻略", "订票"),
    "past": ("昨天", "上周", "上个月", "前天", "去年", "今年三月", "上周末"),
    "place": ("公司楼下", "西湖边", "老家", "地铁上", "商场里", "医院", "机场", "健身房"),
    "event": (
        *("摔了一跤", "遇到了大学同学", "丢了钱包", "求婚成功了"),
        *("被猫抓伤了", "中了一张彩票", "请大家喝了奶茶"),
    ),
    "achievement": (
        *("拿到了驾照", "通过了日语N2", "升职了", "跑完了半程马拉松"),
        *("考上了研究生", "完成了第一次潜水", "搬进了新家"),
    ),
    "groupevent2": ("组织了一次聚餐", "投票决定了团建地点", "讨论了年会节目", "开了读书会"),
    "eventrole": ("负责订了餐厅", "迟到了半小时", "请大家喝了奶茶", "拍了很多照片", "没能来"),
}
USER_IDS = {name: str(20001 + i) for i, name in enumerate(POOLS["name"])}

# (content, tags): people, preferences, plans and events, several per kind, so that the
# same person or object recurs in differently worded memories.
MEMORY_TEMPLATES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("{name}的生日是{month}月{day}日", ("生日", "{name}")),
    ("{name}住在{city}{district}，离公司大概{minutes}分钟", ("住址", "{name}")),
    ("{name}在{company}做{job}", ("工作", "{name}")),
    ("{name}养了一只{pet}，名字叫{petname}", ("宠物", "{name}")),
    ("{name}的老家在{city}", ("老家", "{name}")),
    ("{name}的{relative}叫{othername}", ("家人", "{name}")),
    ("{name}喜欢吃{food}", ("饮食", "偏好")),
    ("{name}{degree}喜欢吃{food}，尤其是{flavor}的", ("饮食", "偏好")),
    ("{name}不吃{food}", ("饮食", "忌口")),
    ("{name}对{allergen}过敏", ("过敏", "{name}")),
    ("{name}最喜欢的歌手是{singer}", ("音乐", "偏好")),
    ("{name}平时喜欢{hobby}", ("爱好", "{name}")),
    ("{name}{degree}喜欢{hobby}，周末经常去", ("爱好",)),
    ("{name}只喝{drink}", ("饮品", "偏好")),
    ("{name}讨厌{dislike}", ("偏好",)),
    ("{name}{when}要去{city}{purpose}", ("计划", "{name}")),
    ("{name}打算{when}{activity}", ("计划",)),
    ("{name}{when}请假{days}天，{reason}", ("请假", "计划")),
    ("{when}的{groupevent}定在{city}，{name}负责{duty}", ("{groupevent}", "安排")),
    ("{name}{past}在{place}{event}", ("事件", "{name}")),
    ("{name}{past}{achievement}", ("事件", "成就")),
    ("{past}群里{groupevent2}，{name}{eventrole}", ("群事件",)),
)

# Tool-call keywords and whole chat messages (what auto-injection searches with).
QUERY_TEMPLATES: tuple[str, ...] = (
    "{name} 生日",
    "{name}的生日是哪天",
    "{name} 喜欢吃什么",
    "谁不吃{food}",
    "谁对{allergen}过敏",
    "{name} 住在哪",
    "{name} 工作 {company}",
    "{name}的{pet}叫什么",
    "{food} {flavor}",
    "{hobby} {name}",
    "{city} {purpose}",
    "{groupevent} 安排 {duty}",
    "{name} {when} 计划",
    "@小忆 你还记得{name}喜欢吃什么吗",
    "{when}{groupevent}去{city}，大家有什么忌口的吗？",
    "小忆，{name}的生日快到了，送什么礼物好",
    "有人知道{name}最近在忙什么吗，{past}还说要{activity}",
    "周末想去吃{food}，有谁一起，{name}你去不去",
    "{name}是不是说过{when}要去{city}{purpose}",
    "帮我查一下{city}到{othername}家那边的高铁，{when}出发",
    "{past}那个{event}的事后来怎么样了",
)


@dataclass(frozen=True)
class Memory:
    """One memory to save: what the model would pass to the save tool."""

    content: str
    tags: tuple[str, ...]
    user_id: str | None


def slots_of(template: str) -> list[str]:
    return [name for _, name, _, _ in string.Formatter().parse(template) if name]


def fill(rng: random.Random, template: str, picks: dict[str, str]) -> str:
    """`template` with each slot from `picks`, or a fresh random pick from its pool."""
    for slot in slots_of(template):
        if slot not in picks:
            picks[slot] = rng.choice(POOLS[slot])
    return template.format(**picks)


def random_memory(rng: random.Random) -> Memory:
    template, tag_templates = rng.choice(MEMORY_TEMPLATES)
    picks: dict[str, str] = {}
    content = fill(rng, template, picks)
    tags = tuple(fill(rng, tag, picks) for tag in tag_templates)
    user_id = USER_IDS.get(picks.get("name", "")) if rng.random() < 0.7 else None
    return Memory(content, tags, user_id)


def distinct_memories(rng: random.Random, count: int, seen: set[str]) -> list[Memory]:
    """`count` memories whose normalised content is in neither `seen` nor each other (added
    to `seen`), and which the guard would neither refuse nor mask."""
    from nonebot_plugin_aimemory.memory.guard import injection_reason, mask_pii
    from nonebot_plugin_aimemory.memory.service import normalize

    result: list[Memory] = []
    while len(result) < count:
        memory = random_memory(rng)
        key = normalize(memory.content)
        if key in seen:
            continue
        if (
            injection_reason(memory.content) is not None
            or mask_pii(memory.content) != memory.content
        ):
            raise RuntimeError(f"generated memory would not be stored as is: {memory.content}")
        seen.add(key)
        result.append(memory)
    return result


def distinct_queries(rng: random.Random, count: int) -> list[str]:
    """`count` different queries (a repeated one would hit the tokenizer's cache)."""
    queries: dict[str, None] = {}
    while len(queries) < count:
        queries[fill(rng, rng.choice(QUERY_TEMPLATES), {})] = None
    return list(queries)


def stored_records(rng: random.Random, memories: Sequence[Memory]) -> list[MemoryRecord]:
    """The records `save` would write for `memories`, dated over the past year."""
    from nonebot_plugin_aimemory.memory.service import ID_ALPHABET, ID_LENGTH, clean_tags, normalize
    from nonebot_plugin_aimemory.store.database import utc_text
    from nonebot_plugin_aimemory.store.memory_store import MemoryRecord

    ids: set[str] = set()
    while len(ids) < len(memories):
        ids.add("".join(rng.choice(ID_ALPHABET) for _ in range(ID_LENGTH)))
    records = []
    for memory_id, memory in zip(sorted(ids), memories, strict=True):
        moment = NEWEST_MEMORY_AT - timedelta(seconds=rng.randrange(MEMORY_SPREAD_SECONDS))
        stamp = utc_text(moment)
        records.append(
            MemoryRecord(
                id=memory_id,
                content=memory.content,
                normalized=normalize(memory.content),
                tags=clean_tags(memory.tags),
                user_id=memory.user_id,
                source=rng.choice(("tool", "extract")),
                created_at=stamp,
                updated_at=stamp,
            )
        )
    return records


async def insert_all(store: MemoryStore, scope: str, records: Sequence[MemoryRecord]) -> None:
    for record in records:
        await store.insert(scope, record)


async def timed(
    call: Callable[[T], Awaitable[R]],
    inputs: Sequence[T],
    *,
    warmup: int,
    profiler: cProfile.Profile | None = None,
) -> tuple[list[int], list[R]]:
    """Nanoseconds and results of `call` on each input after the first `warmup` ones."""
    gc.collect()
    samples: list[int] = []
    results: list[R] = []
    for index, value in enumerate(inputs):
        measured = index >= warmup
        if profiler is not None and measured:
            profiler.enable()
        start = time.perf_counter_ns()
        result = await call(value)
        elapsed = time.perf_counter_ns() - start
        if profiler is not None and measured:
            profiler.disable()
        if measured:
            samples.append(elapsed)
            results.append(result)
    return samples, results


@dataclass
class Report:
    """Printed figures of one scope size."""

    label: str
    lines: list[str] = field(default_factory=list)

    @property
    def prefix(self) -> str:
        return f"[{self.label:>6}]"

    def latency(self, what: str, samples: Sequence[int]) -> None:
        self.lines.append(
            f"{self.prefix} {what:<34} p50 {ms(percentile(samples, 0.5)):7.3f} ms"
            f"   p99 {ms(percentile(samples, 0.99)):7.3f} ms"
            f"   max {ms(max(samples)):7.3f} ms   (n={len(samples)})"
        )

    def loads(self, what: str, samples: Sequence[int]) -> None:
        self.lines.append(
            f"{self.prefix} {what:<34} median {ms(percentile(samples, 0.5)):8.1f} ms"
            f"   max {ms(max(samples)):8.1f} ms   (n={len(samples)})"
        )

    def note(self, text: str) -> None:
        self.lines.append(f"{self.prefix}   {text}")

    def print(self) -> None:
        print("\n".join(self.lines))


async def time_loads(
    store: MemoryStore,
    scope: str,
    *,
    repeats: int,
    clear_tokenizer_cache: bool,
    profiler: cProfile.Profile | None = None,
) -> list[int]:
    """Load `scope` into a new service (nothing cached) `repeats` times."""
    from nonebot_plugin_aimemory.memory.service import MemoryService
    from nonebot_plugin_aimemory.text import segmenter

    samples = []
    for _ in range(repeats):
        service = MemoryService(store, max_entries=LARGE_ENTRIES * 2)
        if clear_tokenizer_cache:
            segmenter._cut.cache_clear()
        gc.collect()
        if profiler is not None:
            profiler.enable()
        start = time.perf_counter_ns()
        await service.count(scope)
        samples.append(time.perf_counter_ns() - start)
        if profiler is not None:
            profiler.disable()
    return samples


async def measure_search(
    report: Report,
    service: MemoryService,
    scope: str,
    queries: Sequence[str],
    plan: Plan,
    profile: dict[str, cProfile.Profile],
    size: str,
) -> list[int]:
    """Time query search and the listing; returns the query samples."""

    async def search(query: str | None) -> list[object]:
        return list(await service.search(scope, query))

    samples, results = await timed(
        search, queries, warmup=plan.search_warmup, profiler=profile.get(f"search-{size}")
    )
    report.latency("search(scope, query)", samples)
    hit_counts = [len(hits) for hits in results]
    report.note(
        f"queries with a hit: {sum(1 for n in hit_counts if n) / len(hit_counts):.0%}, "
        f"mean hits returned {sum(hit_counts) / len(hit_counts):.1f} (limit 10)"
    )
    listings = [None] * (plan.search_warmup + plan.searches)
    list_samples, _ = await timed(
        search, listings, warmup=plan.search_warmup, profiler=profile.get(f"list-{size}")
    )
    report.latency("search(scope, None) listing", list_samples)
    return samples


async def save_all(
    service: MemoryService,
    scope: str,
    memories: Sequence[Memory],
    *,
    warmup: int,
    profiler: cProfile.Profile | None,
) -> tuple[list[int], int]:
    """Time saving `memories`; returns the samples and how many flagged near-duplicates."""

    async def save(memory: Memory) -> int:
        outcome = await service.save(
            scope, memory.content, tags=memory.tags, user_id=memory.user_id
        )
        if outcome.status != "saved":
            raise RuntimeError(f"save in {scope} returned {outcome.status}: {memory.content}")
        return len(outcome.similar)

    samples, similar_counts = await timed(save, memories, warmup=warmup, profiler=profiler)
    return samples, sum(1 for n in similar_counts if n)


async def measure_small_saves(
    report: Report,
    service: MemoryService,
    store: MemoryStore,
    fill_records: Sequence[MemoryRecord],
    memories: Sequence[Memory],
    plan: Plan,
    profiler: cProfile.Profile | None,
) -> list[int]:
    """Saves against 200..224 live entries: each round refills a new scope with the same 200."""
    samples: list[int] = []
    flagged = 0
    batches = [memories[: plan.save_warmup]]
    rest = memories[plan.save_warmup :]
    batches += [rest[i : i + SAVES_PER_ROUND] for i in range(0, len(rest), SAVES_PER_ROUND)]
    for round_index, batch in enumerate(batches):
        scope = f"{SAVE_SCOPE_PREFIX}{round_index:03d}"
        await insert_all(store, scope, fill_records)
        await service.count(scope)  # load the scope outside the timing
        warmup = len(batch) if round_index == 0 else 0
        round_samples, round_flagged = await save_all(
            service, scope, batch, warmup=warmup, profiler=profiler
        )
        samples += round_samples
        flagged += round_flagged
    report.latency(
        f"save ({len(fill_records)}..{len(fill_records) + SAVES_PER_ROUND - 1} entries)", samples
    )
    report.note(f"saves that flagged near-duplicates: {flagged / len(samples):.0%}")
    return samples


async def run(plan: Plan, work_dir: str, profile_phase: str | None) -> None:
    from nonebot_plugin_aimemory.memory.service import MemoryService
    from nonebot_plugin_aimemory.store.database import Database
    from nonebot_plugin_aimemory.store.memory_store import MemoryStore
    from nonebot_plugin_aimemory.text import segmenter

    started = time.perf_counter()
    segmenter.initialise()
    rng = random.Random(SEED)
    seen: set[str] = set()
    small_fill = distinct_memories(rng, SMALL_ENTRIES, seen)
    large_fill = distinct_memories(rng, plan.large_entries, seen)
    save_count = plan.save_warmup + plan.save_rounds * SAVES_PER_ROUND
    small_saves = distinct_memories(rng, save_count, seen)
    large_saves = distinct_memories(rng, plan.save_warmup + plan.large_saves, seen)
    query_count = plan.search_warmup + plan.searches
    small_queries = distinct_queries(rng, query_count)
    large_queries = distinct_queries(rng, query_count)
    profile = {profile_phase: cProfile.Profile()} if profile_phase else {}
    large = f"{plan.large_entries:,}".replace(",", " ")
    small_report = Report(str(SMALL_ENTRIES))
    large_report = Report(large)

    database = await Database.open(Path(work_dir) / "aimemory.db")
    try:
        store = MemoryStore(database)
        service = MemoryService(store, max_entries=plan.large_entries * 2)

        fill_started = time.perf_counter()
        for memory in small_fill:
            outcome = await service.save(
                SMALL_SCOPE, memory.content, tags=memory.tags, user_id=memory.user_id
            )
            if outcome.status != "saved":
                raise RuntimeError(f"fill save returned {outcome.status}: {memory.content}")
        small_fill_seconds = time.perf_counter() - fill_started
        fill_started = time.perf_counter()
        await insert_all(store, LARGE_SCOPE, stored_records(rng, large_fill))
        large_fill_seconds = time.perf_counter() - fill_started
        print(
            f"memory bench: SQLite at {database.path}, keyword search (no embeddings); "
            f"filled {SMALL_ENTRIES} via save() in {small_fill_seconds:.1f} s and {large} via "
            f"MemoryStore.insert in {large_fill_seconds:.1f} s"
        )

        small_report.loads(
            "load scope, cold (tokenizer cold)",
            await time_loads(
                store, SMALL_SCOPE, repeats=plan.small_loads, clear_tokenizer_cache=True
            ),
        )
        small_report.loads(
            "load scope, cold (tokenizer warm)",
            await time_loads(
                store, SMALL_SCOPE, repeats=plan.small_loads, clear_tokenizer_cache=False
            ),
        )
        small_search = await measure_search(
            small_report, service, SMALL_SCOPE, small_queries, plan, profile, "small"
        )
        fill_records = await service.list(SMALL_SCOPE)
        small_save = await measure_small_saves(
            small_report,
            service,
            store,
            fill_records,
            small_saves,
            plan,
            profile.get("save-small"),
        )
        small_report.print()

        large_report.loads(
            "load scope, cold (tokenizer cold)",
            await time_loads(
                store,
                LARGE_SCOPE,
                repeats=plan.large_loads,
                clear_tokenizer_cache=True,
                profiler=profile.get("load-large"),
            ),
        )
        large_report.loads(
            "load scope, cold (tokenizer warm)",
            await time_loads(
                store, LARGE_SCOPE, repeats=plan.large_loads, clear_tokenizer_cache=False
            ),
        )
        await service.count(LARGE_SCOPE)
        large_search = await measure_search(
            large_report, service, LARGE_SCOPE, large_queries, plan, profile, "large"
        )
        large_save, flagged = await save_all(
            service,
            LARGE_SCOPE,
            large_saves,
            warmup=plan.save_warmup,
            profiler=profile.get("save-large"),
        )
        large_report.latency(f"save ({large} entries, info)", large_save)
        large_report.note(f"saves that flagged near-duplicates: {flagged / len(large_save):.0%}")
        large_report.print()
    finally:
        await database.close()

    for phase, profiler in profile.items():
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(25)
        print(f"--- cProfile of {phase} (measured calls only, by tottime) ---")
        print(out.getvalue())

    search_small_p99 = ms(percentile(small_search, 0.99))
    search_large_p99 = ms(percentile(large_search, 0.99))
    save_small_p99 = ms(percentile(small_save, 0.99))
    print(
        verdict(
            f"search p99 {search_small_p99:.3f} ms <= {TARGET_SEARCH_SMALL_MS} ms at "
            f"{SMALL_ENTRIES}",
            search_small_p99 <= TARGET_SEARCH_SMALL_MS,
        )
    )
    if plan.large_entries == LARGE_ENTRIES:
        print(
            verdict(
                f"search p99 {search_large_p99:.3f} ms <= {TARGET_SEARCH_LARGE_MS} ms at {large}",
                search_large_p99 <= TARGET_SEARCH_LARGE_MS,
            )
        )
    else:
        print(f"target met: n/a (search p99 at {LARGE_ENTRIES}: quick run used {large})")
    print(
        verdict(
            f"save p99 {save_small_p99:.3f} ms <= {TARGET_SAVE_SMALL_MS} ms at {SMALL_ENTRIES}",
            save_small_p99 <= TARGET_SAVE_SMALL_MS,
        )
    )
    print(f"wall time: {time.perf_counter() - started:.1f} s")


def main() -> None:
    run_planned_bench(
        __doc__.splitlines()[0],
        run,
        full_plan=FULL_PLAN,
        quick_plan=QUICK_PLAN,
        profile_phases=PROFILE_PHASES,
    )


if __name__ == "__main__":
    main()
