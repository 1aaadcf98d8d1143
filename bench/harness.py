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
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from subprocess import PIPE
from typing import TYPE_CHECKING, Any, TypeVar

import nonebot
from nonebot.adapters.onebot.v11 import Adapter as OneBotV11Adapter

from bench.generated_chat import POOLS, chat_line
from tests.fakes.bot_process import free_port as free_port
from tests.fakes.bots import RecordingBot
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
Options = Callable[[argparse.ArgumentParser], object]  # adds a bench's own options
Speaker = tuple[str, str] | None  # (QQ number, name) of a chat line's speaker


def main(
    doc: str | None, run: BenchRun, options: Options | None = None, *, load_plugin: bool = True
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
async def plugin_runtime(
    llm: FakeOpenAI | str,
    db_path: Path,
    started: Callable[[Runtime], object] | None = None,
    **settings: Any,
) -> AsyncIterator[Runtime]:
    """The plugin's runtime on `db_path` against `llm` (the fake, or an API base), changed by
    `started` if given, installed and stopped as NoneBot does."""
    from nonebot_plugin_aimemory.config import Config
    from nonebot_plugin_aimemory.runtime import Runtime, install_runtime

    base_url = llm if isinstance(llm, str) else llm.base_url
    config = Config(**{**BENCH_SETTINGS, "aimemory_api_base": base_url, **settings})
    runtime = await Runtime.start(config, str(db_path))
    if started is not None:
        started(runtime)
    install_runtime(runtime)
    try:
        yield runtime
    finally:
        install_runtime(None)
        await runtime.stop()


@asynccontextmanager
async def plugin(
    db_path: Path, reply: str | Responder | None = None, **settings: Any
) -> AsyncIterator[tuple[FakeOpenAI, Runtime]]:
    """`fake_llm` answering `reply` (a text or a responder), and `plugin_runtime` on it."""
    responder = (lambda body: text(reply)) if isinstance(reply, str) else reply
    with fake_llm(responder) as llm:
        async with plugin_runtime(llm, db_path, **settings) as runtime:
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
    key: str, at: datetime, role: str, text: str, speaker: Speaker = None, addressed: bool = False
) -> ChatRow:
    """One chat-log row of session `key`; `speaker` is (QQ number, name) of a user's line."""
    from nonebot_plugin_aimemory.store.chat_log_store import ChatRow
    from nonebot_plugin_aimemory.store.times import utc_text

    speaker_id, speaker_name = speaker or (None, None)
    return ChatRow(key, utc_text(at), role, text, speaker_id, speaker_name, addressed)


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
