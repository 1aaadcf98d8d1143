"""The benches' harness: command line, NoneBot as in tests/conftest.py, the plugin against the
fake OpenAI server, generated chat and memories, process figures, statistics. The plugin's
imports sit inside functions: `init_nonebot` must run first."""

from __future__ import annotations

import argparse
import asyncio
import gc
import inspect
import json
import math
import os
import random
import signal
import string
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from subprocess import PIPE
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

import nonebot
from nonebot.adapters.onebot.v11 import Adapter as OneBotV11Adapter
from nonebot.adapters.onebot.v11 import GroupMessageEvent, Message

from tests.fakes.bot_process import free_port as free_port
from tests.fakes.bots import RecordingBot
from tests.fakes.events import EVENT_TIME, group_message
from tests.fakes.openai_server import FakeOpenAI, Reply, text

if TYPE_CHECKING:  # the plugin's types the benches annotate with, re-exported
    from nonebot_plugin_aimemory.chatlog.writer import ChatLog as ChatLog
    from nonebot_plugin_aimemory.memory.service import MemoryService as MemoryService
    from nonebot_plugin_aimemory.runtime import Runtime as Runtime
    from nonebot_plugin_aimemory.store.chat_log_store import ChatLogStore as ChatLogStore
    from nonebot_plugin_aimemory.store.chat_log_store import ChatRow as ChatRow

T = TypeVar("T")
Responder = Callable[[dict[str, Any]], Reply]
API_KEY = "sk-bench"
RESULT_PREFIX = "BENCH-RESULT "
CLOCK_TICK_MS = 1000 / os.sysconf("SC_CLK_TCK")
# Settings of every bench runtime: the fake LLM, and no memory-review tick inside a run.
BENCH_SETTINGS: dict[str, Any] = {
    "aimemory_api_key": API_KEY,
    "aimemory_model": "gpt-4o-mini",
    "aimemory_request_timeout": 60.0,
    "aimemory_llm_max_retries": 1,
    "aimemory_janitor_interval_seconds": 3600,
    "aimemory_review_tick_seconds": 3600,
}


@dataclass(frozen=True)
class Bench:
    """One run: its size, a scratch directory, the options, a child's spec (`run_child`)."""

    quick: bool
    work_dir: Path
    child: dict[str, Any] | None = None
    args: argparse.Namespace = field(default_factory=argparse.Namespace)


BenchRun = Callable[[Bench], Awaitable["dict[str, Any] | None"]]


def main(
    doc: str | None,
    run: BenchRun,
    options: Callable[[argparse.ArgumentParser], object] | None = None,
    *,
    load_plugin: bool = True,
) -> None:
    """Every bench's command line; a child (`--child SPEC`) prints its result for the parent."""
    parser = argparse.ArgumentParser(description=(doc or "").strip().split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run of a few seconds")
    parser.add_argument("--child", type=json.loads, help=argparse.SUPPRESS)
    if options is not None:
        options(parser)
    args = parser.parse_args()
    child: dict[str, Any] | None = args.child
    with tempfile.TemporaryDirectory(prefix="aimemory-bench-") as work_dir:
        init_nonebot(work_dir, load_plugin=(child or {}).get("load_plugin", load_plugin))
        bench = Bench(args.quick, Path(work_dir), child, args)
        try:
            result = asyncio.run(stopped_by_signals(run(bench)))
        except (KeyboardInterrupt, asyncio.CancelledError):
            raise SystemExit(f"{parser.prog}: interrupted") from None
    if child is not None:
        print(RESULT_PREFIX + json.dumps(result), flush=True)


async def stopped_by_signals(run: Awaitable[T]) -> T:
    """`run`, cancelled by SIGTERM or SIGHUP as by Ctrl-C (so child processes are stopped)."""
    task, loop = asyncio.current_task(), asyncio.get_running_loop()
    if task is not None:
        for stop_signal in (signal.SIGTERM, signal.SIGHUP):
            loop.add_signal_handler(stop_signal, task.cancel)
    return await run


async def run_child(module: str, spec: dict[str, Any]) -> dict[str, Any]:
    """The result of `python -m <module> --child <spec>`, run in a fresh process."""
    command = [sys.executable, "-m", module, "--child", json.dumps(spec)]
    child = await asyncio.create_subprocess_exec(*command, stdout=PIPE, stderr=PIPE)
    try:
        out, err = (output.decode() for output in await child.communicate())
    finally:
        if child.returncode is None:  # cancelled
            child.kill()
            await child.wait()
    if child.returncode != 0:
        sys.stderr.write(out + err)
        raise SystemExit(f"{module} {spec} failed with exit code {child.returncode}")
    for line in out.splitlines():
        if line.startswith(RESULT_PREFIX):
            return json.loads(line.removeprefix(RESULT_PREFIX))
    raise SystemExit(f"{module} {spec} printed no result")


def init_nonebot(work_dir: str, *, load_plugin: bool = True) -> None:
    """NoneBot as tests/conftest.py sets it up (no server), with the plugin if `load_plugin`."""
    nonebot.init(
        driver="~fastapi+~httpx+~websockets",
        superusers={"10000"},
        nickname={"小忆"},
        command_start={"/", "~"},
        onebot_access_token="test-token",
        localstore_data_dir=f"{work_dir}/data",
        localstore_cache_dir=f"{work_dir}/cache",
        localstore_config_dir=f"{work_dir}/config",
        log_level="WARNING",
    )
    nonebot.get_driver().register_adapter(OneBotV11Adapter)
    if load_plugin and nonebot.load_plugin("nonebot_plugin_aimemory") is None:
        raise SystemExit("nonebot_plugin_aimemory failed to load (see the error above)")


class CountingBot(RecordingBot):
    """A bot answering every call at once that counts what it sent and times the last send."""

    def __init__(self) -> None:
        super().__init__()
        self.sent_count = self.last_sent_ns = 0

    async def call_api(self, api: str, **data: Any) -> Any:
        if api == "send_msg":
            self.sent_count += 1
            self.last_sent_ns = time.perf_counter_ns()
            return {"message_id": self.sent_count}
        return {"role": "member"} if api == "get_group_member_info" else None


@contextmanager
def fake_llm(responder: Responder | None = None) -> Iterator[FakeOpenAI]:
    """The fake OpenAI server of tests/fakes on 127.0.0.1, answering with `responder`."""
    with FakeOpenAI(api_key=API_KEY) as llm:
        if responder is not None:
            llm.responder = responder
        yield llm


@asynccontextmanager
async def plugin_runtime(llm: FakeOpenAI, db_path: Path, **settings: Any) -> AsyncIterator[Runtime]:
    """The plugin's runtime on `db_path` against `llm`, installed and stopped as NoneBot does."""
    from nonebot_plugin_aimemory.config import Config
    from nonebot_plugin_aimemory.runtime import Runtime, install_runtime

    config = Config(**{**BENCH_SETTINGS, "aimemory_api_base": llm.base_url, **settings})
    runtime = await Runtime.start(config, str(db_path))
    install_runtime(runtime)
    try:
        yield runtime
    finally:
        install_runtime(None)
        await runtime.stop()


@asynccontextmanager
async def plugin(
    bench: Bench, reply: str | Responder | None = None, db: str = "aimemory.db", **settings: Any
) -> AsyncIterator[tuple[FakeOpenAI, Runtime]]:
    """`fake_llm` answering `reply` (a text or a responder), and `plugin_runtime` on `db`."""
    responder = (lambda body: text(reply)) if isinstance(reply, str) else reply
    with fake_llm(responder) as llm:
        async with plugin_runtime(llm, bench.work_dir / db, **settings) as runtime:
            yield llm, runtime


def group_key(group_id: int) -> str:
    """The plugin's session key of a group."""
    from nonebot_plugin_aimemory.scopes import Scope

    return str(Scope.group(group_id))


async def prefill_history(runtime: Runtime, key: str, pairs: Sequence[tuple[str, str]]) -> None:
    """Store (user, assistant) exchanges as session `key`'s history before it is loaded."""
    from nonebot_plugin_aimemory.engine.messages import Message

    roles = ("user", "assistant")
    messages = [Message(r, t) for pair in pairs for r, t in zip(roles, pair, strict=True)]
    await runtime.history.append(key, messages)


def memory_service(runtime: Runtime) -> MemoryService:
    """The long-term memory service (it exists with a database only)."""
    from nonebot_plugin_aimemory.memory.feature import LongTermMemory

    if not isinstance(runtime.memory, LongTermMemory):
        raise RuntimeError("long-term memory is off: the runtime has no database")
    return runtime.memory.service


def chat_log_writer(runtime: Runtime) -> ChatLog:
    """The chat log's batched writer (it exists with a database only)."""
    from nonebot_plugin_aimemory.chatlog.feature import RecordedChat

    if not isinstance(runtime.chat_log, RecordedChat):
        raise RuntimeError("the chat log is off: the runtime has no database")
    return runtime.chat_log.writer


def chat_row(
    session_key: str,
    at: datetime,
    role: str,
    text: str,
    speaker: tuple[str, str] | None = None,
    *,
    addressed: bool = False,
) -> ChatRow:
    """One chat-log row; `speaker` is (QQ number, name) of a user's line."""
    from nonebot_plugin_aimemory.store.chat_log_store import ChatRow
    from nonebot_plugin_aimemory.store.times import utc_text

    speaker_id, speaker_name = speaker or (None, None)
    return ChatRow(session_key, utc_text(at), role, text, speaker_id, speaker_name, addressed)


def logged_rows(
    rng: random.Random, keys: Sequence[str], moments: Iterable[datetime]
) -> list[ChatRow]:
    """A chat-log row at each moment, round-robin over `keys`: 5 % the bot's, 10 % addressed."""
    speakers = [(str(20001 + i), name) for i, name in enumerate(POOLS["name"])]
    rows = []
    for index, moment in enumerate(moments):
        key, length = keys[index % len(keys)], min(120, 10 + int(rng.expovariate(1 / 28)))
        line = chat_line(rng, length, length)
        if rng.random() < 0.05:
            rows.append(chat_row(key, moment, "assistant", line))
        else:
            speaker = rng.choice(speakers)
            rows.append(chat_row(key, moment, "user", line, speaker, addressed=rng.random() < 0.1))
    return rows


SPEAKERS = (("小明", 2001), ("阿强", 2002), ("Lily", 2003), ("老王", 2004), ("糖糖", 2005))
# Slot values of the chat, memory and query templates (a template names a slot {pool}).
POOLS: dict[str, tuple[str, ...]] = {
    pool: tuple(words.split())
    for pool, words in {
        "name": "小明 阿强 Lily 老王 糖糖 夜猫子 张伟 李娜 王芳 刘洋 陈静 杨帆 赵磊 黄丽 周洁 "
        "吴敏 徐涛 孙悦 马超 朱婷 郭靖宇 林小雨 何雪 高远 罗琳 郑凯 梁晨 谢婷婷 宋佳 唐宁 "
        "韩梅梅 阿杰 大熊 豆豆 小鱼 老李 Kevin Amy Tom Jason",
        "food": "火锅 烧烤 麻辣烫 螺蛳粉 寿司 披萨 小龙虾 红烧肉 饺子 牛肉面 煎饼果子 烤鸭 "
        "酸菜鱼 肠粉 炸鸡 冒菜 生煎 羊肉串 番茄炒蛋 榴莲 奶茶 热干面 凉皮 香菜 芒果",
        "city": "北京 上海 杭州 成都 重庆 西安 南京 武汉 广州 深圳 苏州 长沙 厦门 青岛 大连 "
        "哈尔滨 昆明 洛阳 天津 宁波",
        "place": "公司楼下 地铁站 商场 食堂 健身房 图书馆 西湖边 快递柜 会议室 电梯口 学校门口 "
        "小区门口 老家 机场",
        "when": "明天 后天 周末 下周三 周五晚上 这个月底 下个月初 国庆 元旦 春节前 今晚 下班后 "
        "明早八点 十二月中旬",
        "past": "昨天 上周 上个月 前天 去年 今年三月 上周末",
        "game": "王者荣耀 原神 英雄联盟 我的世界 星露谷物语 塞尔达 斗地主",
        "movie": "流浪地球 奥本海默 沙丘 封神 满江红 哪吒 星际穿越 千与千寻",
        "thing": "机械键盘 降噪耳机 电动牙刷 扫地机器人 显示器 空气炸锅 露营帐篷 移动硬盘 "
        "人体工学椅 咖啡机 蓝牙音箱 保温杯 充电宝",
        "tech": "数据库 服务器 接口 前端页面 登录模块 缓存 消息队列 定时任务 单元测试 CI流水线 "
        "支付回调 日志系统 网关",
        "error": "KeyError TimeoutError ConnectionRefusedError OOMKilled 502 segfault ENOSPC",
        "en_word": "deploy release hotfix rollback docker kubernetes python redis nginx github "
        "bug review merge meeting deadline",
        "singer": "周杰伦 陈奕迅 林俊杰 五月天 邓紫棋 薛之谦 王菲 李健",
        "pet": "橘猫 布偶猫 英短 柯基 金毛 柴犬 仓鼠 鹦鹉 乌龟 兔子",
        "hobby": "爬山 打羽毛球 游泳 弹吉他 拍照 跑步 钓鱼 下围棋 追番",
        "weather": "下大雨 降温了 好热 刮大风 下雪了 雾霾很重 出太阳了",
        "reaction": "哈哈哈哈 笑死 +1 收到 好的好的 确实 666 牛啊 ？？？ 在吗 来了来了 晚安 "
        "没毛病 绝了 破防了 有道理 离谱 好耶",
    }.items()
}
# Clauses of group chat; a line is one or more, {num}/{price}/{order} drawn fresh each time.
CLAUSES: tuple[str, ...] = (
    *("{when}去吃{food}吗，{place}新开了一家", "@{name} 你那个{tech}的问题解决了没"),
    *("刚才{game}又输了，队友太坑了", "{city}今天{weather}，出门记得带伞"),
    *("有人看过{movie}吗，评价怎么样", "我{when}要去{city}出差，有没有人推荐{food}"),
    *("这个{thing}才{price}块，比上次便宜多了", "{tech}又报错了：{error}"),
    *("PR #{num} 已经 merge 了，大家 rebase 一下", "{name}说{when}的聚餐改到{place}了"),
    *("求推荐一款{thing}，预算{price}以内", "@{name} 你的快递到了，放在{place}"),
    *("{name}的{pet}好可爱，叫什么名字", "{when}开会，记得把{tech}的方案准备好"),
    *("{food}和{food}哪个好吃，在线等，挺急的", "{city}到{city}的高铁票好难抢"),
    *("这首{singer}的新歌真好听，循环一下午了", "订单号{order}，麻烦帮我查一下"),
    *("{name}你上次推荐的{thing}我买了，确实好用", "今天{place}人好多，排了{num}分钟队"),
    *("有没有人{when}一起去{city}看{singer}的演唱会", "我妈又在家族群里转发养生文章了"),
    *("快递显示已签收，但我根本没收到", "最近在学做饭，{past}第一次做了{food}"),
    *("周末要不要一起去{hobby}，天气预报说是晴天", "anyone up for {game} tonight?"),
    *("the {en_word} job failed with {error}", "{reaction}", "@{name} {reaction}"),
)
PUNCTUATION = ("，", "。", "！", "？", "……", "～", " ")
USER_IDS = {name: str(20001 + i) for i, name in enumerate(POOLS["name"])}
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
        content = fill(rng, template, picks)
        if content not in seen:
            seen.add(content)
            tags = tuple(fill(rng, tag, picks) for tag in tag_templates)
            owned = "name" in picks and rng.random() < 0.7
            result.append(Memory(content, tags, USER_IDS.get(picks["name"]) if owned else None))
    return result


def distinct(rng: random.Random, templates: Sequence[str], count: int) -> list[str]:
    """`count` distinct fills of `templates` (a repeated query would hit a cache)."""
    found: dict[str, None] = {}
    while len(found) < count:
        found[fill(rng, rng.choice(templates))] = None
    return list(found)


def addressed(
    content: str | Message, group_id: int, rng: random.Random, sent_at: int = EVENT_TIME
) -> GroupMessageEvent:
    """A group message to the bot (`to_me`, as an @ or a reply makes it) from a SPEAKER."""
    name, user_id = rng.choice(SPEAKERS)
    return group_message(
        content, group_id=group_id, user_id=user_id, card=name, to_me=True, event_time=sent_at
    )


def draw(rng: random.Random, slot: str) -> str:
    """One value of `slot`: a pool entry, or a fresh number for num/price/order."""
    if slot == "num":
        return str(rng.randint(2, 9999))
    if slot == "price":
        return str(rng.choice((rng.randint(9, 99), rng.randint(100, 2999))))
    if slot == "order":
        return str(rng.randint(10**11, 10**12 - 1))
    return rng.choice(POOLS[slot])


def fill(rng: random.Random, template: str, picks: dict[str, str] | None = None) -> str:
    """`template` with its slots drawn; with `picks`, a slot repeats the value first drawn."""
    pieces: list[str] = []
    for literal, slot, _, _ in string.Formatter().parse(template):
        pieces.append(literal)
        if slot and picks is None:
            pieces.append(draw(rng, slot))
        elif slot and picks is not None:
            if slot not in picks:
                picks[slot] = draw(rng, slot)
            pieces.append(picks[slot])
    return "".join(pieces)


def chat_line(rng: random.Random, min_chars: int = 10, max_chars: int = 150) -> str:
    """One group-chat line of `min_chars`..`max_chars` characters, clauses joined up."""
    target = rng.randint(min_chars, max_chars)
    line = fill(rng, rng.choice(CLAUSES))
    while len(line) < target:
        line += rng.choice(PUNCTUATION) + fill(rng, rng.choice(CLAUSES))
    return line[:target]


def rss_kib(pid: int | str = "self") -> int:
    """VmRSS of process `pid` (this one by default) in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS in /proc/{pid}/status")


def cpu_ms(pid: int) -> float:
    """utime + stime of process `pid` (all its threads) in ms."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) "; field 3 is fields[0]
    return (int(fields[11]) + int(fields[12])) * CLOCK_TICK_MS


async def timed(
    call: Callable[[T], object],
    inputs: Sequence[T],
    warmup: int = 0,
    clock: Callable[[], int] = time.perf_counter_ns,
) -> list[int]:
    """`clock` nanoseconds of `call` (awaited if async) on each input after `warmup` of them."""
    samples: list[int] = []
    kept: list[object] = []  # freed after the run, not inside the next call's timing
    for index, value in enumerate(inputs):
        if index == warmup:
            gc.collect()
            samples.clear()
        start = clock()
        result = call(value)
        kept.append(await result if inspect.isawaitable(result) else result)
        samples.append(clock() - start)
    return samples


def percentile(values: Sequence[float], fraction: float) -> float:
    """Nearest-rank percentile of `values` (`fraction` in 0..1)."""
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[max(1, min(len(ordered), math.ceil(fraction * len(ordered)))) - 1]


def ms(nanoseconds: float) -> float:
    """Nanoseconds as milliseconds."""
    return nanoseconds / 1e6


def latency(label: str, samples_ns: Sequence[int]) -> str:
    """`label: p50 … ms  p99 … ms  (n=…)` of samples in nanoseconds."""
    p50, p99 = ms(percentile(samples_ns, 0.5)), ms(percentile(samples_ns, 0.99))
    return f"{label:<40} p50 {p50:8.3f} ms   p99 {p99:8.3f} ms   (n={len(samples_ns)})"


def verdict(label: str, met: bool, *, quick: bool = False) -> None:
    """Print a bench's closing line: whether a target is met, and what was compared."""
    note = "; quick run, smaller than the target's run" if quick else ""
    print(f"target met: {'yes' if met else 'no'} ({label}{note})")
