"""Chat-log write throughput and FTS5 search latency on a 100 000-message group session.

Runs the plugin's own `ChatLog` / `ChatLogStore` on a real SQLite file in a temporary
directory, opened with `Database.open` (so the real schema, migrations, WAL and
`synchronous=NORMAL` apply), with jieba loaded by `segmenter.initialise()` before any timing.
The messages are varied group chat generated from templates (names, food, games, cities,
tech talk, prices, order numbers, some English lines and short reactions), 10-120 characters,
from ~45 speakers, ~5 % of them the bot's replies; they are generated before the timing.

Measured:
1. Writes, with the FTS index (jieba segmentation runs inside `insert_many`):
   - the production path: `ChatLog.add(row)` for each message, `await ChatLog.flush()` after
     every 200 (the interval flush of a busy group; below FLUSH_BATCH_ROWS, so `add` never
     spawns its own flush), 100 000 messages into session A: rows/s overall and per 10 000,
     flush latency and its segmentation part, and how late a 5 ms timer fires meanwhile
     (segmentation runs on the event loop and blocks it);
   - raw `ChatLogStore.insert_many` in batches of 200 (10 000 rows of session B) and of 1
     (2 000 rows of session C, one addressed turn per write), rows/s each;
   - where the time goes: segmentation inside those writes (timed by wrapping
     `segmenter.segmented`) and segmentation alone (`segmented()` over 20 000 of the same
     messages, tokenizer cache cleared first, as it is before the writes).
2. `ChatLogStore.search(session A, query, 20)` with ~300 distinct queries after a warm-up:
   common and rare Chinese words, two-word phrases, whole sentences, English words, absent
   terms and input full of FTS5 syntax (`"`, `*`, `NEAR(`, `OR`, `-`, `(`, `col:`) - p50 / p99
   overall and per kind, the slowest queries with how many index rows they match, and the
   query plan. Then the same queries in session B (10 000 rows; latency for information)
   to check session binding: they return only B's rows, and a phrase said only in B is found
   in B and not in A.

Targets: >= 2 000 rows/s sustained through `ChatLog` (100 000 messages); search p99 <= 20 ms.
The full run takes about 1-1.5 minutes on 2 (busy) cores; `--quick` (a few seconds) uses 5 000 / 1 000
/ 200 rows and 60 queries, and judges no target.

Run: /tmp/venv/bin/python bench/chat_log.py [--quick] [--profile insert|search]
"""

from __future__ import annotations

import asyncio
import cProfile
import gc
import io
import pstats
import random
import string
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import ms, percentile, run_planned_bench, verdict

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.store.chat_log_store import ChatLogStore, ChatRow
    from nonebot_plugin_aimemory.store.database import Database

SEED = 20261130
TARGET_ROWS_PER_SECOND = 2000.0
TARGET_SEARCH_P99_MS = 20.0
FLUSH_EVERY_ROWS = 200
WINDOW_ROWS = 10_000
SEARCH_LIMIT = 20
SESSION_A = "g:736451029"
SESSION_B = "g:815620374"
SESSION_C = "p:20001"
ONLY_IN_B = "紫藤花园观星会"
NEWEST_ROW_AT = datetime(2026, 11, 30, 14, 5, tzinfo=timezone.utc)
MIN_CHARS = 10
MAX_CHARS = 120
ASSISTANT_SHARE = 0.05
PROFILE_PHASES = ("insert", "search")


@dataclass(frozen=True)
class Plan:
    """Sizes of one run."""

    main_rows: int
    second_rows: int
    single_rows: int
    segment_rows: int
    queries: int
    warmup_queries: int


FULL_PLAN = Plan(100_000, 10_000, 2_000, 20_000, 300, 30)
QUICK_PLAN = Plan(5_000, 1_000, 200, 2_000, 60, 10)

# Slot values; a template names its slots as {pool}.
POOLS: dict[str, tuple[str, ...]] = {
    "name": (
        *("小明", "阿强", "老王", "糖糖", "夜猫子", "张伟", "李娜", "王芳", "刘洋", "陈静"),
        *("杨帆", "赵磊", "黄丽", "周洁", "吴敏", "徐涛", "孙悦", "马超", "朱婷", "胡斌"),
        *("郭靖宇", "林小雨", "何雪", "高远", "罗琳", "郑凯", "梁晨", "谢婷婷", "宋佳", "唐宁"),
        *("许多多", "韩梅梅", "阿杰", "大熊", "豆豆", "小鱼", "老李", "咸鱼", "月半", "二狗"),
        *("Kevin", "Amy", "Lily", "Tom", "Jason"),
    ),
    "food": (
        *("火锅", "烧烤", "麻辣烫", "螺蛳粉", "寿司", "披萨", "小龙虾", "红烧肉", "饺子"),
        *("牛肉面", "煎饼果子", "烤鸭", "酸菜鱼", "肠粉", "炸鸡", "冒菜", "生煎", "羊肉串"),
        *("番茄炒蛋", "榴莲", "奶茶", "麻辣香锅", "热干面", "烤冷面", "凉皮", "钵钵鸡"),
    ),
    "city": (
        *("北京", "上海", "杭州", "成都", "重庆", "西安", "南京", "武汉", "广州", "深圳"),
        *("苏州", "长沙", "厦门", "青岛", "大连", "哈尔滨", "昆明", "洛阳", "天津", "宁波"),
    ),
    "place": (
        *("公司楼下", "地铁站", "商场", "食堂", "健身房", "图书馆", "宿舍楼下", "西湖边"),
        *("快递柜", "前台", "会议室", "电梯口", "学校门口", "小区门口"),
    ),
    "when": (
        *("明天", "后天", "周末", "下周三", "周五晚上", "这个月底", "下个月初", "国庆"),
        *("元旦", "春节前", "今晚", "中午", "下班后", "明早八点"),
    ),
    "game": (
        *("王者荣耀", "原神", "英雄联盟", "绝地求生", "我的世界", "星露谷物语", "塞尔达"),
        *("炉石传说", "动物森友会", "艾尔登法环", "CS2", "Dota2", "守望先锋", "斗地主"),
    ),
    "movie": (
        *("流浪地球", "奥本海默", "沙丘", "封神", "孤注一掷", "满江红", "热辣滚烫"),
        *("周处除三害", "飞驰人生", "哪吒", "星际穿越", "盗梦空间", "千与千寻"),
    ),
    "thing": (
        *("机械键盘", "降噪耳机", "电动牙刷", "扫地机器人", "显示器", "空气炸锅", "露营帐篷"),
        *("移动硬盘", "人体工学椅", "咖啡机", "蓝牙音箱", "保温杯", "电子书阅读器", "充电宝"),
    ),
    "device": ("手机", "笔记本", "平板", "耳机", "手表", "路由器", "显卡", "主机"),
    "tech": (
        *("数据库", "服务器", "接口", "前端页面", "登录模块", "缓存", "消息队列", "定时任务"),
        *("单元测试", "CI流水线", "支付回调", "日志系统", "权限校验", "网关"),
    ),
    "error": (
        *("KeyError: 'user_id'", "TimeoutError", "connection refused", "OOM killed"),
        *("502 Bad Gateway", "NullPointerException", "segmentation fault", "disk full"),
        *("ModuleNotFoundError", "permission denied", "deadlock detected"),
    ),
    "en_word": (
        *("deploy", "release", "hotfix", "rollback", "docker", "kubernetes", "python"),
        *("redis", "nginx", "github", "bug", "feature", "review", "merge", "benchmark"),
        *("meeting", "deadline", "weekend", "coffee", "lunch", "typescript", "rust"),
    ),
    "singer": ("周杰伦", "陈奕迅", "林俊杰", "五月天", "邓紫棋", "薛之谦", "王菲", "李健"),
    "app": ("B站", "网易云", "QQ音乐", "爱奇艺", "腾讯视频", "Keep", "小红书", "淘宝"),
    "pet": ("橘猫", "布偶猫", "柯基", "金毛", "柴犬", "仓鼠", "鹦鹉", "乌龟"),
    "course": ("高数", "线代", "大物", "英语", "数据结构", "操作系统", "计网", "概率论"),
    "holiday": ("五一", "十一", "端午", "中秋", "寒假", "暑假", "清明"),
    "weather": ("下大雨", "降温了", "好热", "刮大风", "下雪了", "雾霾很重", "出太阳了"),
    "reaction": (
        *("哈哈哈哈", "笑死", "+1", "收到", "好的好的", "确实", "666", "牛啊", "？？？"),
        *("在吗", "来了来了", "早", "晚安", "没毛病", "绝了", "破防了", "有道理", "羡慕"),
        *("真的假的", "离谱", "冲冲冲", "好耶", "辛苦了", "lol", "ok", "nb", "233"),
    ),
}

# Clauses of group chat; a message is one or more of them, with {num}/{price}/{order}/{hour}
# drawn freshly, so long messages rarely repeat while short reactions often do.
CLAUSES: tuple[str, ...] = (
    "{when}去吃{food}吗，{place}新开了一家",
    "@{name} 你那个{tech}的问题解决了没",
    "刚才{game}又输了，队友太坑了",
    "{city}今天{weather}，出门记得带伞",
    "有人看过{movie}吗，评价怎么样",
    "我{when}要去{city}出差，有没有人推荐{food}",
    "这个{thing}才{price}块，比上次便宜多了",
    "{tech}又报错了：{error}",
    "PR #{num} 已经 merge 了，大家 rebase 一下",
    "{name}说{when}的聚餐改到{place}了",
    "笑死，{name}又在群里发表情包",
    "求推荐一款{thing}，预算{price}以内",
    "今天的{course}作业谁写完了，借我参考一下",
    "@{name} 你的快递到了，放在{place}",
    "{name}的{pet}好可爱，叫什么名字",
    "{when}开会，记得把{tech}的方案准备好",
    "{food}和{food}哪个好吃，在线等，挺急的",
    "{city}到{city}的高铁票好难抢",
    "刚下班，累死了，{when}还要加班",
    "周报写了吗，{name}在催了",
    "大家{holiday}都去哪玩",
    "这首{singer}的新歌真好听，循环一下午了",
    "谁有{app}的会员，借我用一下",
    "我的{device}屏幕碎了，修一下要{price}块",
    "{name}生日快乐🎂",
    "订单号{order}，麻烦帮我查一下",
    "{hour}点了还不睡，明天不上班吗",
    "{game}今晚开黑吗，三缺一",
    "{name}你上次推荐的{thing}我买了，确实好用",
    "{city}的{food}真的是一绝，下次还去",
    "今天{place}人好多，排了{num}分钟队",
    "老板说{tech}{when}必须上线",
    "有没有人{when}一起去{city}看{singer}的演唱会",
    "{course}考试{when}，我还一页没看",
    "刚看到新闻说{city}{weather}",
    "我妈又在家族群里转发养生文章了",
    "这周的周报还差两段没写完",
    "快递显示已签收，但我根本没收到",
    "最近在学做饭，昨天第一次做了{food}",
    "有人知道地铁几点停运吗",
)
ENGLISH_CLAUSES: tuple[str, ...] = (
    "anyone up for {game} tonight?",
    "I think the {en_word} is broken again, can someone check the logs",
    "the {en_word} job failed with {error}",
    "LGTM, ship it",
    "who broke the {en_word} build lol",
    "let's do the {en_word} after lunch",
    "see you at the {en_word} meeting",
)
SHORT_CLAUSES: tuple[str, ...] = (
    "{reaction}",
    "{reaction}{reaction}",
    "@{name} {reaction}",
    "{name}：{reaction}",
)
ASSISTANT_CLAUSES: tuple[str, ...] = (
    "我查了一下，{name}之前说过{when}要去{city}，记得提醒他带伞。",
    "根据聊天记录，上次大家讨论的是{food}和{food}，最后定了{place}那家。",
    "{tech}报{error}的话，可以先看看日志里最早的那条错误，再检查配置有没有改过。",
    "好的，我记住了：{name}喜欢{food}，不吃{food}。",
)
_PUNCTUATION = ("，", "。", "！", "？", "～", " ")

# Search queries by kind; {pool} slots are filled from POOLS, {order}/{num} fresh.
QUERY_KINDS: dict[str, tuple[str, ...]] = {
    "common word": (
        *("今天", "大家", "明天", "一下", "什么", "真的", "有人", "我们", "哈哈哈哈", "上次"),
        *("加班", "聚餐", "推荐", "周末", "报错", "好吃", "快递", "会员", "新歌", "作业"),
    ),
    "word": ("{food}", "{city}", "{game}", "{thing}", "{name}", "{movie}", "{singer}", "{tech}"),
    "rare or absent": (
        *("量子纠缠", "马拉松冠军", "紫外线", "区块链", "芭蕾舞", "潜水证", "拔智齿"),
        *("订单号 {order}", "{order}", "PR {num}", "风筝节", "电磁炉", "相亲"),
    ),
    "two words": (
        "{food} {city}",
        "{name} {game}",
        "{tech} 报错",
        "{when} {food}",
        "{thing} 预算",
        "{singer} 演唱会",
        "{name} 生日",
        "{city} 高铁",
        "{course} 考试",
        "{pet} {name}",
    ),
    "sentence": (
        "上次谁说要去{city}吃{food}来着",
        "{name}之前推荐的{thing}是哪个",
        "{game}开黑一般几点",
        "{tech}那个{error}后来怎么修好的",
        "大家{holiday}去哪玩了",
        "{name}什么时候去{city}出差",
        "那家{food}店在{place}哪里",
        "有没有人说过{movie}好不好看",
    ),
    "english": (
        *("deploy", "docker", "python", "bug", "merge", "rollback", "kubernetes", "tonight"),
        *("logs", "LGTM", "TimeoutError", "benchmark", "coffee", "meeting", "redis"),
        *("{en_word} build", "{en_word} failed", "Kevin", "Amy", "nginx 502"),
    ),
    "fts syntax": (
        *('"', '""', "*", "***", "火锅*", "NEAR(火锅 烧烤)", "火锅 OR 烧烤", "火锅 AND 烧烤"),
        *("NOT 加班", "-docker", "(服务器", "服务器)", "tokens:火锅", "session_key:g", "^今天"),
        *('a"b', '"unterminated', "{name}: 在吗", "火锅 + 烧烤", "C++", "c#", "node.js"),
        *("100%", "@{name}", "'", "{food} NEAR {food}", '"{city}" OR "{city}"', "{tech}*"),
        *("rowid:1", "chat_log_fts", "{name} -{name}", "MATCH", "{{}}", ":"),
    ),
}


@dataclass(frozen=True)
class Query:
    """One search input and the kind it stands for."""

    kind: str
    text: str


def fill(rng: random.Random, template: str) -> str:
    """`template` with every slot drawn independently (so "{food}和{food}" names two foods)."""
    pieces: list[str] = []
    for literal, slot, _, _ in string.Formatter().parse(template):
        pieces.append(literal)
        if slot:
            pieces.append(draw(rng, slot))
    return "".join(pieces)


def draw(rng: random.Random, slot: str) -> str:
    if slot == "num":
        return str(rng.randint(2, 9999))
    if slot == "price":
        return str(rng.choice((rng.randint(9, 99), rng.randint(100, 2999))))
    if slot == "order":
        return str(rng.randint(10**11, 10**12 - 1))
    if slot == "hour":
        return str(rng.choice((1, 2, 3, 11, 12)))
    return rng.choice(POOLS[slot])


def message_text(rng: random.Random, *, assistant: bool) -> str:
    """One message of 10-120 characters: mostly short, sometimes a long ramble."""
    target = min(MAX_CHARS, MIN_CHARS + int(rng.expovariate(1 / 28)))
    if assistant:
        clauses = ASSISTANT_CLAUSES
    else:
        roll = rng.random()
        clauses = SHORT_CLAUSES if roll < 0.25 else ENGLISH_CLAUSES if roll < 0.33 else CLAUSES
    text = fill(rng, rng.choice(clauses))
    while len(text) < target:
        addition = rng.choice(_PUNCTUATION) + fill(rng, rng.choice(CLAUSES))
        if len(text) + len(addition) > MAX_CHARS:
            break
        text += addition
    while len(text) < MIN_CHARS:
        text += rng.choice(_PUNCTUATION) + fill(rng, rng.choice(POOLS["reaction"]))
    return text[:MAX_CHARS]


def chat_rows(rng: random.Random, session_key: str, count: int) -> list[ChatRow]:
    """`count` rows of one session, oldest first, ~one a minute up to NEWEST_ROW_AT."""
    from nonebot_plugin_aimemory.store.chat_log_store import ChatRow
    from nonebot_plugin_aimemory.store.database import utc_text

    speakers = [(str(20001 + i), name) for i, name in enumerate(POOLS["name"])]
    moment = NEWEST_ROW_AT - timedelta(minutes=count)
    rows: list[ChatRow] = []
    for _ in range(count):
        moment += timedelta(seconds=rng.randint(1, 119))
        if rng.random() < ASSISTANT_SHARE:
            text = message_text(rng, assistant=True)
            rows.append(ChatRow(session_key, utc_text(moment), "assistant", text))
            continue
        speaker_id, speaker_name = rng.choice(speakers)
        rows.append(
            ChatRow(
                session_key,
                utc_text(moment),
                "user",
                message_text(rng, assistant=False),
                speaker_id=speaker_id,
                speaker_name=speaker_name,
                addressed=rng.random() < 0.1,
            )
        )
    return rows


def search_queries(rng: random.Random, count: int, known_orders: Sequence[str]) -> list[Query]:
    """`count` distinct queries spread over the kinds; rare ones include order numbers that
    occur once in session A (`known_orders`)."""
    per_kind = max(1, count // len(QUERY_KINDS))
    queries: dict[str, Query] = {}
    for kind, templates in QUERY_KINDS.items():
        wanted = len(queries) + per_kind
        ordered = list(templates)
        attempts = 0
        while len(queries) < wanted and attempts < per_kind * 50:
            template = ordered[attempts] if attempts < len(ordered) else rng.choice(templates)
            attempts += 1
            if "{order}" in template and known_orders and rng.random() < 0.5:
                template = template.replace("{order}", rng.choice(known_orders))
            text = fill(rng, template)
            queries.setdefault(text, Query(kind, text))
    rest = [kind for kind in QUERY_KINDS if kind not in ("common word", "fts syntax")]
    while len(queries) < count:
        kind = rng.choice(rest)
        text = fill(rng, rng.choice(QUERY_KINDS[kind]))
        queries.setdefault(text, Query(kind, text))
    return list(queries.values())[:count]


@dataclass
class SegmentTimer:
    """Time spent in `segmenter.segmented` while installed (wraps the module attribute that
    `ChatLogStore.insert_many` calls)."""

    total_ns: int = 0

    @contextmanager
    def installed(self) -> Iterator[SegmentTimer]:
        from nonebot_plugin_aimemory.text import segmenter

        original = segmenter.segmented

        def timed_segmented(text: str) -> str:
            start = time.perf_counter_ns()
            try:
                return original(text)
            finally:
                self.total_ns += time.perf_counter_ns() - start

        segmenter.segmented = timed_segmented  # type: ignore[assignment]
        try:
            yield self
        finally:
            segmenter.segmented = original  # type: ignore[assignment]


@dataclass
class LoopLagProbe:
    """How late a 5 ms timer fires while installed: how long the event loop was blocked."""

    interval_seconds: float = 0.005
    lags_ns: list[int] = field(default_factory=list)

    @contextmanager
    def running(self) -> Iterator[LoopLagProbe]:
        task = asyncio.ensure_future(self._tick())
        try:
            yield self
        finally:
            task.cancel()

    async def _tick(self) -> None:
        while True:
            started = time.perf_counter_ns()
            await asyncio.sleep(self.interval_seconds)
            late = time.perf_counter_ns() - started - int(self.interval_seconds * 1e9)
            self.lags_ns.append(max(0, late))


@dataclass
class WriteResult:
    """Figures of one write phase."""

    label: str
    rows: int
    seconds: float
    segment_ns: int
    batch_ns: list[int] = field(default_factory=list)
    batch_segment_ns: list[int] = field(default_factory=list)
    windows: list[float] = field(default_factory=list)
    loop_lag_ns: list[int] = field(default_factory=list)

    @property
    def rows_per_second(self) -> float:
        return self.rows / self.seconds

    def lines(self) -> list[str]:
        share = self.segment_ns / 1e9 / self.seconds
        out = [
            f"{self.label:<44} {self.rows:>7} rows in {self.seconds:6.2f} s = "
            f"{self.rows_per_second:7.0f} rows/s   (segmentation {share:.0%} of it, "
            f"{self.segment_ns / 1e3 / self.rows:.0f} us/row)"
        ]
        if self.batch_ns:
            out.append(
                f"{'':<44} per write: p50 {ms(percentile(self.batch_ns, 0.5)):6.2f} ms   "
                f"p99 {ms(percentile(self.batch_ns, 0.99)):6.2f} ms   "
                f"max {ms(max(self.batch_ns)):6.2f} ms"
            )
        if self.batch_segment_ns and len(self.batch_segment_ns) < self.rows:
            out.append(
                f"{'':<44} of which segmentation:     "
                f"p50 {ms(percentile(self.batch_segment_ns, 0.5)):6.2f} ms   "
                f"max {ms(max(self.batch_segment_ns)):6.2f} ms"
            )
        if self.loop_lag_ns:
            out.append(
                f"{'':<44} event loop lag (5 ms timer): "
                f"p99 {ms(percentile(self.loop_lag_ns, 0.99)):6.2f} ms   "
                f"max {ms(max(self.loop_lag_ns)):6.2f} ms"
            )
        if len(self.windows) > 1:
            rates = "  ".join(f"{rate:.0f}" for rate in self.windows)
            out.append(f"{'':<44} rows/s per {WINDOW_ROWS} rows: {rates}")
        return out


async def write_through_chat_log(
    store: ChatLogStore, database: Database, rows: Sequence[ChatRow]
) -> WriteResult:
    """The production path: `add` each row, `flush` every FLUSH_EVERY_ROWS."""
    from nonebot_plugin_aimemory.chatlog.writer import ChatLog
    from nonebot_plugin_aimemory.store.review_store import ReviewStore

    chat_log = ChatLog(store, ReviewStore(database), flush_seconds=1.0, keep_days=30)
    timer = SegmentTimer()
    batch_ns: list[int] = []
    batch_segment_ns: list[int] = []
    windows: list[float] = []
    probe = LoopLagProbe()
    gc.collect()
    with timer.installed(), probe.running():
        started = window_started = time.perf_counter()
        for index, row in enumerate(rows, start=1):
            chat_log.add(row, review=row.role == "assistant")
            if index % FLUSH_EVERY_ROWS == 0 or index == len(rows):
                flush_started = time.perf_counter_ns()
                segment_before = timer.total_ns
                await chat_log.flush()
                batch_ns.append(time.perf_counter_ns() - flush_started)
                batch_segment_ns.append(timer.total_ns - segment_before)
            if index % WINDOW_ROWS == 0:
                now = time.perf_counter()
                windows.append(WINDOW_ROWS / (now - window_started))
                window_started = now
        seconds = time.perf_counter() - started
    await chat_log.close()
    return WriteResult(
        f"ChatLog.add + flush every {FLUSH_EVERY_ROWS} (A)",
        len(rows),
        seconds,
        timer.total_ns,
        batch_ns,
        batch_segment_ns,
        windows,
        probe.lags_ns,
    )


async def write_raw(
    store: ChatLogStore, rows: Sequence[ChatRow], batch_rows: int, label: str
) -> WriteResult:
    """`insert_many` in batches of `batch_rows`."""
    timer = SegmentTimer()
    batch_ns: list[int] = []
    batch_segment_ns: list[int] = []
    gc.collect()
    with timer.installed():
        started = time.perf_counter()
        for first in range(0, len(rows), batch_rows):
            batch_started = time.perf_counter_ns()
            segment_before = timer.total_ns
            await store.insert_many(rows[first : first + batch_rows])
            batch_ns.append(time.perf_counter_ns() - batch_started)
            batch_segment_ns.append(timer.total_ns - segment_before)
        seconds = time.perf_counter() - started
    return WriteResult(label, len(rows), seconds, timer.total_ns, batch_ns, batch_segment_ns)


def segmentation_alone(rows: Sequence[ChatRow]) -> tuple[float, float]:
    """Rows/s and us/row of `segmented()` alone, tokenizer cache cleared first."""
    from nonebot_plugin_aimemory.text import segmenter

    segmenter._cut.cache_clear()
    gc.collect()
    started = time.perf_counter_ns()
    for row in rows:
        segmenter.segmented(row.text)
    elapsed = time.perf_counter_ns() - started
    return len(rows) / (elapsed / 1e9), elapsed / 1e3 / len(rows)


@dataclass
class SearchSample:
    """One timed search."""

    query: Query
    ns: int
    hits: int


async def time_searches(
    store: ChatLogStore, session_key: str, queries: Sequence[Query], warmup: Sequence[Query]
) -> list[SearchSample]:
    for query in warmup:
        await store.search(session_key, query.text, SEARCH_LIMIT)
    gc.collect()
    samples = []
    for query in queries:
        started = time.perf_counter_ns()
        rows = await store.search(session_key, query.text, SEARCH_LIMIT)
        elapsed = time.perf_counter_ns() - started
        if any(row.session_key != session_key for row in rows):
            raise RuntimeError(f"search in {session_key} returned another session's rows")
        samples.append(SearchSample(query, elapsed, len(rows)))
    return samples


def latency_line(label: str, values: Sequence[int]) -> str:
    return (
        f"{label:<28} p50 {ms(percentile(list(values), 0.5)):7.2f} ms   "
        f"p99 {ms(percentile(list(values), 0.99)):7.2f} ms   "
        f"max {ms(max(values)):7.2f} ms   (n={len(values)})"
    )


async def explain_slowest(
    database: Database, session_key: str, samples: Sequence[SearchSample], count: int
) -> list[str]:
    """The slowest queries with how many index rows their FTS query matches, and the plan
    SQLite uses for the search statement (captured from `Database.read`)."""
    from nonebot_plugin_aimemory.store.chat_log_store import ChatLogStore, fts_query

    lines = []
    slowest = sorted(samples, key=lambda s: s.ns, reverse=True)[:count]
    for sample in slowest:
        match = fts_query(session_key, sample.query.text)
        if match is None:
            continue
        total = await database.read(
            "SELECT count(*) FROM chat_log_fts WHERE chat_log_fts MATCH ?", (match,)
        )
        lines.append(
            f"  {ms(sample.ns):7.2f} ms  {sample.query.kind:<14} {sample.query.text!r:<26} "
            f"matches {int(total[0][0]):>6} index rows  (FTS query {match[:60]})"
        )
    captured: list[tuple[str, tuple[Any, ...]]] = []
    original = database.read

    async def capturing_read(sql: str, params: Any = ()) -> list[Any]:
        captured.append((sql, tuple(params)))
        return await original(sql, params)

    database.read = capturing_read  # type: ignore[method-assign]
    try:
        await ChatLogStore(database).search(session_key, slowest[0].query.text, SEARCH_LIMIT)
    finally:
        database.read = original  # type: ignore[method-assign]
    sql, params = captured[0]
    plan = await database.read(f"EXPLAIN QUERY PLAN {sql}", params)
    lines.append("  query plan of ChatLogStore.search:")
    lines += [f"    {row[3]}" for row in plan]
    return lines


async def check_session_binding(
    store: ChatLogStore, queries: Sequence[Query]
) -> tuple[list[SearchSample], bool]:
    """Searches in session B (none may return A's or C's rows: `time_searches` raises), and
    the phrase said only in B: found in B, not in A. Returns B's samples and the phrase check."""
    samples = await time_searches(store, SESSION_B, queries, ())
    in_b = await store.search(SESSION_B, ONLY_IN_B, SEARCH_LIMIT)
    in_a = await store.search(SESSION_A, ONLY_IN_B, SEARCH_LIMIT)
    phrase_ok = any(ONLY_IN_B in row.text for row in in_b) and not in_a
    return samples, phrase_ok


def print_profile(profiler: cProfile.Profile, phase: str) -> None:
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(20)
    print(f"--- cProfile of {phase} (main thread; SQLite runs in aiosqlite's thread) ---")
    print(out.getvalue())


async def run(plan: Plan, work_dir: str, profile_phase: str | None) -> None:
    from nonebot_plugin_aimemory.store.chat_log_store import ChatLogStore, ChatRow
    from nonebot_plugin_aimemory.store.database import Database
    from nonebot_plugin_aimemory.text import segmenter

    started = time.perf_counter()
    init_started = time.perf_counter()
    segmenter.initialise()
    init_seconds = time.perf_counter() - init_started
    rng = random.Random(SEED)
    rows_a = chat_rows(rng, SESSION_A, plan.main_rows)
    rows_b = chat_rows(rng, SESSION_B, plan.second_rows)
    middle = len(rows_b) // 2
    rows_b[middle] = ChatRow(
        SESSION_B, rows_b[middle].created_at, "user", f"周六晚上{ONLY_IN_B}，有人一起吗", "20001"
    )
    rows_c = chat_rows(rng, SESSION_C, plan.single_rows)
    orders = [
        word for row in rows_a if "订单号" in row.text for word in row.text.split("订单号")[1:]
    ]
    known_orders = [order[:12] for order in orders if order[:12].isdigit()]
    queries = search_queries(rng, plan.queries + plan.warmup_queries, known_orders)
    rng.shuffle(queries)
    warmup, queries = queries[: plan.warmup_queries], queries[plan.warmup_queries :]
    chars = [len(row.text) for row in rows_a]
    print(
        f"chat-log bench: jieba loaded in {init_seconds:.1f} s; session A {len(rows_a)} "
        f"messages of {min(chars)}-{max(chars)} chars (mean {sum(chars) / len(chars):.0f}), "
        f"B {len(rows_b)}, C {len(rows_c)}; {len(queries)} queries (+{len(warmup)} warm-up)"
    )

    seg_rate, seg_us = segmentation_alone(rows_a[: plan.segment_rows])
    segmenter._cut.cache_clear()
    profiler = cProfile.Profile() if profile_phase else None

    database = await Database.open(Path(work_dir) / "aimemory.db")
    try:
        store = ChatLogStore(database)
        if profiler is not None and profile_phase == "insert":
            profiler.enable()
        through_log = await write_through_chat_log(store, database, rows_a)
        if profiler is not None and profile_phase == "insert":
            profiler.disable()
        cache = segmenter._cut.cache_info()
        batched = await write_raw(
            store, rows_b, FLUSH_EVERY_ROWS, "insert_many, batches of 200 (B)"
        )
        single = await write_raw(store, rows_c, 1, "insert_many, batches of 1 (C)")
        pages = await database.read(
            "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()"
        )
        size_mb = int(pages[0][0]) / 2**20
        print(f"\nWrites (database {size_mb:.0f} MB after all of them):")
        for result in (through_log, batched, single):
            print("\n".join(result.lines()))
        print(
            f"{'segmented() alone, cache cleared':<44} {plan.segment_rows:>7} rows"
            f"{'':>18}{seg_rate:7.0f} rows/s   ({seg_us:.0f} us/row; tokenizer cache hit "
            f"rate during the A writes {cache.hits / max(1, cache.hits + cache.misses):.0%})"
        )
        without_segmentation = through_log.rows / (
            through_log.seconds - through_log.segment_ns / 1e9
        )
        print(
            f"{'ChatLog path without its segmentation':<44} {'':>29}"
            f"{without_segmentation:7.0f} rows/s   (SQLite + aiosqlite round trips)"
        )

        if profiler is not None and profile_phase == "search":
            profiler.enable()
        samples = await time_searches(store, SESSION_A, queries, warmup)
        if profiler is not None and profile_phase == "search":
            profiler.disable()
        print(f"\nSearch in session A ({len(rows_a)} rows; limit {SEARCH_LIMIT}):")
        print(latency_line("all queries", [s.ns for s in samples]))
        for kind in QUERY_KINDS:
            kind_samples = [s for s in samples if s.query.kind == kind]
            if kind_samples:
                hits = sum(1 for s in kind_samples if s.hits) / len(kind_samples)
                print(
                    latency_line(f"  {kind}", [s.ns for s in kind_samples])
                    + f"  with hits {hits:.0%}"
                )
        worst = max(samples, key=lambda s: s.ns)
        print(f"worst query: {worst.query.text!r} ({worst.query.kind}) {ms(worst.ns):.2f} ms")
        print("slowest queries:")
        print("\n".join(await explain_slowest(database, SESSION_A, samples, 6)))

        b_samples, phrase_ok = await check_session_binding(store, queries)
        hits = sum(s.hits for s in b_samples)
        bound = phrase_ok and hits > 0
        print(f"\nSearch in session B ({len(rows_b)} rows, same database; for information):")
        print(latency_line("all queries", [s.ns for s in b_samples]))
        print(
            f"session binding: {len(b_samples)} queries in B returned {hits} rows, all of B; "
            f"{ONLY_IN_B!r} (said only in B) found in B and not in A: "
            f"{'yes' if phrase_ok else 'NO'} -> {'bound' if bound else 'NOT BOUND'}"
        )
    finally:
        await database.close()

    if profiler is not None and profile_phase is not None:
        print_profile(profiler, profile_phase)

    p99 = ms(percentile([s.ns for s in samples], 0.99))
    rate = through_log.rows_per_second
    if plan == FULL_PLAN:
        print(
            verdict(
                f"{rate:.0f} rows/s >= {TARGET_ROWS_PER_SECOND:.0f} through ChatLog, "
                f"{through_log.rows} rows",
                rate >= TARGET_ROWS_PER_SECOND,
            )
        )
        print(
            verdict(
                f"search p99 {p99:.2f} ms <= {TARGET_SEARCH_P99_MS:.0f} ms at {len(rows_a)} rows",
                p99 <= TARGET_SEARCH_P99_MS,
            )
        )
    else:
        print(f"target met: n/a (quick run: {rate:.0f} rows/s, search p99 {p99:.2f} ms)")
    if not bound:
        raise SystemExit("search is not bound to its session")
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
