"""Shared setup for the benchmarks: NoneBot without a network server, the plugin started on a
temporary database against the in-process fake LLM, a Bot whose `send_msg` returns at once,
realistic Chinese chat lines, and the small statistics helpers every bench prints with.

Import this module before anything imports `nonebot_plugin_aimemory`: `init_nonebot` must run
first, exactly as `tests/conftest.py` does it for the test suite.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import random
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import nonebot  # noqa: E402
from nonebot.adapters.onebot.v11 import Adapter, Bot  # noqa: E402

if TYPE_CHECKING:
    from nonebot_plugin_aimemory.runtime import Runtime
    from tests.fakes.harness import PluginHarness
    from tests.fakes.openai_server import FakeOpenAI

Plan = TypeVar("Plan")
SELF_ID = "42"  # matches tests/fakes/events.SELF_ID

# Fragments of everyday group chat; lines are stitched from them to 50-150 characters.
_FRAGMENTS = (
    "今天下班路上看到一家新开的奶茶店",
    "排队的人特别多，我等了快二十分钟",
    "周末要不要一起去爬山，天气预报说是晴天",
    "我刚把项目的接口文档更新了一版",
    "有人知道地铁十号线晚上几点停运吗",
    "昨天那部电影的结局我真的没看懂",
    "猫又把桌上的杯子推下去了，碎了一地",
    "这周的周报还差两段没写完",
    "楼下食堂今天的红烧肉居然还不错",
    "谁有空帮我看看这段 Python 报错",
    "KeyError: 'user_id' 出现在第 42 行",
    "下个月的团建定在杭州，大家有什么想法",
    "我觉得还是先把需求确认清楚再动手比较好",
    "刚才开会说的那个方案，预算大概要多少",
    "明天早上八点半在公司楼下集合",
    "群里有没有人用过那个新出的记账软件",
    "感冒好几天了，嗓子一直不舒服",
    "话说你们平时都用什么输入法",
    "这个价格其实挺划算的，比上次便宜了三十块",
    "我妈又在家族群里转发养生文章了",
    "快递显示已签收，但我根本没收到",
    "最近在学做饭，昨天第一次成功做了番茄炒蛋",
    "服务器又挂了，运维说是磁盘满了",
    "有推荐的机械键盘吗，预算五百以内",
    "考研倒计时一百天，压力好大",
    "这次版本更新把我常用的功能藏到设置里面去了",
    "晚上打游戏吗，三缺一",
    "他说的也有道理，不过我还是有点担心时间来不及",
    "刚看到新闻说明天要降温十度",
    "能不能帮我总结一下刚才大家讨论的重点",
)
_PUNCTUATION = ("，", "。", "！", "？", "……", "～")


def chat_line(rng: random.Random, min_chars: int = 50, max_chars: int = 150) -> str:
    """One realistic Chinese group-chat line of `min_chars`..`max_chars` characters."""
    target = rng.randint(min_chars, max_chars)
    line = ""
    while len(line) < target:
        line += rng.choice(_FRAGMENTS) + rng.choice(_PUNCTUATION)
    return line[:target]


class RecordingBot(Bot):
    """A OneBot v11 bot with no connection: `send_msg` is recorded and answered instantly."""

    def __init__(self, adapter: Adapter, self_id: str = SELF_ID) -> None:
        super().__init__(adapter, self_id)
        self.sent_count = 0
        self.last_sent_ns = 0
        self.last_sent: dict[str, Any] | None = None

    async def call_api(self, api: str, **data: Any) -> Any:
        if api == "send_msg":
            self.last_sent_ns = time.perf_counter_ns()
            self.sent_count += 1
            self.last_sent = data
            return {"message_id": self.sent_count}
        return {}


def init_nonebot(data_dir: str, *, load_plugin: bool = True) -> RecordingBot:
    """Initialise NoneBot as tests/conftest.py does (no server), optionally load the plugin,
    and return a recording bot bound to a OneBot v11 adapter."""
    nonebot.init(
        driver="~none",
        superusers={"10000"},
        nickname={"小忆"},
        command_start={"/", "~"},
        localstore_data_dir=f"{data_dir}/data",
        localstore_cache_dir=f"{data_dir}/cache",
        localstore_config_dir=f"{data_dir}/config",
        log_level="WARNING",
    )
    driver = nonebot.get_driver()
    driver.register_adapter(Adapter)
    if load_plugin and nonebot.load_plugin("nonebot_plugin_aimemory") is None:
        raise SystemExit("nonebot_plugin_aimemory failed to load (see the error logged above)")
    return RecordingBot(nonebot.get_adapter(Adapter))


def run_planned_bench(
    description: str,
    run: Callable[[Plan, str, str | None], Awaitable[None]],
    *,
    full_plan: Plan,
    quick_plan: Plan,
    profile_phases: Sequence[str],
) -> None:
    """The command line of a bench with a full and a `--quick` plan and an optional
    `--profile PHASE`: NoneBot and the plugin initialised in a temporary directory."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help="a few-second smoke run")
    parser.add_argument("--profile", choices=profile_phases, help="cProfile one phase")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="aimemory-bench-") as work_dir:
        init_nonebot(work_dir)
        asyncio.run(run(quick_plan if args.quick else full_plan, work_dir, args.profile))


async def start_plugin(db_path: str, llm: FakeOpenAI, **overrides: Any) -> PluginHarness:
    """Start the plugin's runtime on `db_path` against `llm` (what on_startup would do)."""
    from tests.fakes.harness import PluginHarness

    harness = PluginHarness(db_path=db_path, llm=llm)
    await harness.start(aimemory_request_timeout=60.0, **overrides)
    return harness


def runtime_of(harness: PluginHarness) -> Runtime:
    assert harness.runtime is not None
    return harness.runtime


def clear_llm_records(llm: FakeOpenAI) -> None:
    """Drop the fake's recorded requests (they hold every parsed body and grow memory)."""
    responder = llm.responder
    llm.reset()
    llm.responder = responder


def percentile(values: list[float], fraction: float) -> float:
    """Nearest-rank percentile of `values` (`fraction` in 0..1)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, min(len(ordered), math.ceil(fraction * len(ordered))))
    return ordered[rank - 1]


def ms(nanoseconds: float) -> float:
    return nanoseconds / 1e6


def verdict(label: str, met: bool) -> str:
    return f"target met: {'yes' if met else 'no'} ({label})"
