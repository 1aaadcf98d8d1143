"""Footprint of a real bot process: RSS, CPU per message and start-up time of the plugin,
beside a bare NoneBot with one minimal matcher (issue #16) and, with --peer-python, beside
nonebot-plugin-llmchat (issue #23).

Each bot is a child process started as bot.py starts one (bench/footprint_child.py); this
process is its OneBot implementation over the reverse WebSocket, and the fake OpenAI server
answers "收到～" at once (8k budget). Bots: the plugin on an empty database, the plugin on a
large one (10 000 memories, 100 000 chat-log rows: bench/footprint_db.py, cached under /tmp),
the bare NoneBot, and the peer (PATH: a venv's Python with nonebot-plugin-llmchat,
nonebot2[fastapi,websockets,httpx] and nonebot-adapter-onebot). Each takes 200 addressed turns
(4 groups, 3 private chats), a burst of 2 000 unaddressed messages from 1 000 users, then
1 000 steady turns in blocks taken by all bots in rotating turn. RSS from /proc; CPU is
utime+stime over a phase until the bot is quiet, less its idle rate; start-up the median of
3 starts. Then bench/http_cost.py prints the HTTP client's CPU per call.

Targets (the plugin): RSS after start <= 100 MiB, after the burst <= 130 MiB; CPU per
unaddressed message over the bare NoneBot's <= 0.5 ms; start-up on the large DB <= 1.5 s;
with the peer, its CPU per steady turn >= 15x the plugin's.
Run: python -m bench.footprint [--quick] [--peer-python PATH] [--only BOT] [--profile PREFIX]
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import contextlib
import itertools
import json
import math
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, deque
from collections.abc import AsyncIterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from websockets.asyncio.client import ClientConnection
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake

from bench.footprint_child import PROFILE_VARIABLE
from bench.footprint_db import Layout, cached_database, copy_database
from bench.harness import (
    API_KEY,
    BENCH_SETTINGS,
    POOLS,
    RESULT_PREFIX,
    Bench,
    chat_line,
    fake_llm,
    forget_requests,
    main,
    percentile,
    rss_kib,
    run_child,
)
from bench.http_cost import print_report as print_http_cost
from tests.fakes.openai_server import FakeOpenAI, text

ROOT = Path(__file__).resolve().parents[1]
SELF_ID = 10000
SEND_ACTIONS = frozenset({"send_msg", "send_group_msg", "send_private_msg"})
CLOCK_TICK_MS = 1000 / os.sysconf("SC_CLK_TCK")
CONNECT_RETRY_SECONDS = 0.02
CONNECT_TIMEOUT_SECONDS = 60.0
REPLY_TIMEOUT_SECONDS = 30.0
IDLE_TIMEOUT_SECONDS = 120.0
STOP_TIMEOUT_SECONDS = 15.0
START_SETTLE_SECONDS = 2.0
# Quiet: CPU up by at most one tick in this long (longer than the chat log's 1 s flush).
QUIET_SECONDS = 1.5
CPU_POLL_SECONDS = 0.05
IDLE_RATE_SECONDS = 2.0
STARTUP_RUNS = 3
TURN_GROUPS = 4
PRIVATE_CHATS = 3
SPEAKER_COUNT = 12
FIRST_BURST_USER_ID = 3_000_000
# Upper bounds on the plugin's figures (start-up: on the large database).
TARGETS = {
    "rss_after_start_mib": 100.0,
    "rss_after_burst_mib": 130.0,
    "cpu_per_unaddressed_ms": 0.5,
    "startup_large_db_s": 1.5,
}
PEER_CPU_RATIO_TARGET = 15.0
PEER = "llmchat"
PEER_TARGET = "cpu_per_turn_llmchat_ratio"
BOT_KEYS = ("plugin", "plugin_large_db", "bare", PEER)
# Children still running, killed should this process end without stopping them.
_children: set[subprocess.Popen[bytes]] = set()
_message_ids = itertools.count(10_000)


@dataclass(frozen=True)
class Sizes:
    """How much each bot is given; the steady turns are many, as a few full garbage
    collections of ~75 ms each decide the figure if they land in only 200 turns or not."""

    turns: int
    burst: int
    burst_users: int
    layout: Layout
    steady_turns: int = 1_000
    steady_blocks: int = 10

    @classmethod
    def of(cls, quick: bool) -> Sizes:
        """The sizes of a full or a --quick run."""
        if quick:
            return cls(50, 500, 250, Layout(1_000, 10_000), steady_turns=200, steady_blocks=4)
        return cls(200, 2_000, 1_000, Layout(10_000, 100_000))


@dataclass(frozen=True)
class BotSpec:
    """One bot: a label, the child's kind, its database, the Python that runs it."""

    label: str
    kind: str
    database: Path | None = None
    python: str = sys.executable


@dataclass
class Figures:
    """What was measured of one bot (`*_over_bare_*`: minus the bare bot's)."""

    startup_s: float = 0.0
    startup_runs_s: list[float] = field(default_factory=list)
    startup_cpu_ms: float = 0.0
    rss_at_connection_mib: float = 0.0
    rss_after_start_mib: float = 0.0
    rss_after_turns_mib: float = 0.0
    rss_after_burst_mib: float = 0.0
    idle_cpu_ms_per_s: float = 0.0
    cpu_per_turn_ms: float = 0.0
    cpu_per_unaddressed_ms: float = 0.0
    first_turn_cpu_ms: float = 0.0
    cpu_per_later_turn_ms: float = 0.0
    cpu_per_steady_turn_ms: float = 0.0  # the turns after the burst
    steady_block_cpu_ms: list[float] = field(default_factory=list)  # per turn, per block
    cpu_per_turn_over_bare_ms: float = 0.0
    cpu_per_turn_over_bare_median_ms: float = 0.0  # per block, beside bare's of the round
    cpu_per_turn_over_bare_range_ms: tuple[float, float] = (0.0, 0.0)
    cpu_per_unaddressed_over_bare_ms: float = 0.0
    first_turn_latency_ms: float = 0.0
    latency_p50_ms: float = 0.0
    latency_p99_ms: float = 0.0
    turns_llm_requests: int = 0
    burst_replies: int = 0
    api_calls: dict[str, int] = field(default_factory=dict)


def rss_mib(pid: int) -> float:
    """VmRSS of process `pid` in MiB."""
    return rss_kib(pid) / 1024


def cpu_ms(pid: int) -> float:
    """utime + stime of process `pid` (all its threads) in ms."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) "; field 3 is fields[0]
    return (int(fields[11]) + int(fields[12])) * CLOCK_TICK_MS


class ChildExited(RuntimeError):
    """The bot process ended while it was being measured."""


def check_alive(process: subprocess.Popen[bytes]) -> None:
    """Raise if the child has exited."""
    if process.poll() is not None:
        raise ChildExited(f"the bot exited with code {process.returncode}")


async def wait_until_quiet(process: subprocess.Popen[bytes], min_seconds: float = 0.0) -> float:
    """Wait until the child's CPU rose by at most one tick in QUIET_SECONDS (and at least
    `min_seconds` passed); the seconds waited."""
    started = time.monotonic()
    samples: deque[tuple[float, float]] = deque()
    while True:
        check_alive(process)
        now = time.monotonic()
        samples.append((now, cpu_ms(process.pid)))
        while samples[0][0] < now - QUIET_SECONDS:
            samples.popleft()
        waited = now - started
        covered = samples[-1][0] - samples[0][0] >= QUIET_SECONDS - 2 * CPU_POLL_SECONDS
        quiet = samples[-1][1] - samples[0][1] <= CLOCK_TICK_MS
        if covered and quiet and waited >= max(min_seconds, QUIET_SECONDS):
            return waited
        if waited > IDLE_TIMEOUT_SECONDS:
            raise TimeoutError(f"the bot's CPU never went quiet within {IDLE_TIMEOUT_SECONDS} s")
        await asyncio.sleep(CPU_POLL_SECONDS)


@dataclass(frozen=True)
class Sent:
    """A message the bot sent: when it arrived here, and the call's params."""

    at_ns: int
    params: dict[str, Any]


class OneBotSide:
    """The OneBot implementation's side of the connection: answers every API call the bot
    makes and queues the messages it sends."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.sent: asyncio.Queue[Sent] = asyncio.Queue()
        self.api_calls: Counter[str] = Counter()
        self._message_ids = itertools.count(1)
        self._reader = asyncio.create_task(self._answer_calls())

    async def _answer_calls(self) -> None:
        try:
            async for raw in self.ws:
                frame = json.loads(raw)
                if "action" not in frame:
                    continue
                action, params = str(frame["action"]), frame.get("params") or {}
                self.api_calls[action] += 1
                answer = {"status": "ok", "retcode": 0, "data": self._data(action, params)}
                await self.ws.send(json.dumps({**answer, "echo": frame.get("echo")}))
                if action in SEND_ACTIONS:
                    self.sent.put_nowait(Sent(time.perf_counter_ns(), params))
        except ConnectionClosed:
            pass

    def _data(self, action: str, params: dict[str, Any]) -> dict[str, Any]:
        """Plausible data for the calls the plugin makes; empty for any other call."""
        user_id, group_id = params.get("user_id", 0), params.get("group_id", 0)
        if action in SEND_ACTIONS:
            return {"message_id": next(self._message_ids)}
        if action == "get_login_info":
            return {"user_id": SELF_ID, "nickname": "小忆"}
        if action == "get_group_member_info":
            zeros = dict.fromkeys(("age", "join_time", "last_sent_time"), 0)
            return {"group_id": group_id, "user_id": user_id, "nickname": f"群友{user_id}",
                    "card": "", "role": "member", "sex": "unknown", "level": "1",
                    "title": "", **zeros}  # fmt: skip
        if action == "get_group_info":
            return {"group_id": group_id, "group_name": f"测试群{group_id}", "member_count": 500}
        if action == "get_stranger_info":
            return {"user_id": user_id, "nickname": f"网友{user_id}", "sex": "unknown", "age": 0}
        return {}

    def drain_sent(self) -> int:
        """Forget the messages queued so far; how many there were."""
        count = self.sent.qsize()
        while not self.sent.empty():
            self.sent.get_nowait()
        return count

    async def close(self) -> None:
        """Close the connection and stop answering."""
        await self.ws.close()
        self._reader.cancel()
        await asyncio.gather(self._reader, return_exceptions=True)


def message_event(
    user_id: int, name: str, line: str, group_id: int | None = None, *, at_bot: bool = False
) -> str:
    """A OneBot v11 message event as JSON: in group `group_id` (an @ of the bot first with
    `at_bot`), else a private one."""
    segments = [{"type": "text", "data": {"text": line}}]
    event: dict[str, Any] = {"time": int(time.time()), "self_id": SELF_ID,
                             "post_type": "message", "message_id": next(_message_ids),
                             "user_id": user_id, "font": 0}  # fmt: skip
    if group_id is None:
        sender = {"user_id": user_id, "nickname": name}
        event.update(message_type="private", sub_type="friend", raw_message=line)
    else:
        if at_bot:
            segments.insert(0, {"type": "at", "data": {"qq": str(SELF_ID)}})
        sender = {"user_id": user_id, "nickname": name, "card": name, "role": "member"}
        event.update(message_type="group", sub_type="normal", group_id=group_id)
        event.update(anonymous=None, raw_message="")
    return json.dumps({**event, "message": segments, "sender": sender}, ensure_ascii=False)


def addressed_turns(sizes: Sizes, rng: random.Random, count: int | None = None) -> list[str]:
    """The addressed turns (`sizes.turns` unless `count`): an @ in a group, or a private
    message."""
    groups = sizes.layout.group_ids()[:TURN_GROUPS]
    first_user = sizes.layout.personal_user_ids()[0]
    speakers = [(first_user + i, POOLS["name"][i]) for i in range(SPEAKER_COUNT)]
    private = speakers[:PRIVATE_CHATS]
    events = []
    for _ in range(sizes.turns if count is None else count):
        line = chat_line(rng, 10, 80)
        chat = rng.randrange(len(groups) + len(private))
        if chat < len(groups):
            user_id, name = rng.choice(speakers)
            events.append(message_event(user_id, name, " " + line, groups[chat], at_bot=True))
        else:
            events.append(message_event(*private[chat - len(groups)], line))
    return events


def burst_messages(sizes: Sizes, rng: random.Random) -> list[str]:
    """The unaddressed burst in one group: each user sends a few lines."""
    group_id = sizes.layout.group_ids()[0]
    users = [
        (FIRST_BURST_USER_ID + i, f"{rng.choice(POOLS['name'])}{i}")
        for i in range(sizes.burst_users)
    ]
    senders = [users[i % len(users)] for i in range(sizes.burst)]
    rng.shuffle(senders)
    return [message_event(u, name, chat_line(rng, 10, 80), group_id) for u, name in senders]


def child_environment(spec: BotSpec, work_dir: Path, llm: FakeOpenAI) -> dict[str, str]:
    """The child's environment: ours without AIMEMORY_* or LLMCHAT_* keys, plus the bench's
    settings (PYTHONPATH: this tree, for bench.footprint_child and the plugin's code)."""
    own = ("AIMEMORY_", "LLMCHAT_")
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith(own)}
    env.update(PYTHONPATH=str(ROOT), LOG_LEVEL="WARNING")
    folders = ("data", "cache", "config")
    env.update({f"LOCALSTORE_{name.upper()}_DIR": str(work_dir / name) for name in folders})
    if spec.kind == "plugin":
        env.update({key.upper(): str(value) for key, value in BENCH_SETTINGS.items()})
        env.update(AIMEMORY_API_BASE=llm.base_url, AIMEMORY_MAX_CONTEXT_TOKENS="8192",
                   AIMEMORY_DB_PATH=str(work_dir / "aimemory.db"))  # fmt: skip
    elif spec.kind == PEER:
        # Its documented settings, nested under `llmchat` (NoneBot splits names on "__").
        preset = {"name": "fake", "api_base": llm.base_url, "api_key": API_KEY}
        env.update(
            LLMCHAT__API_PRESETS=json.dumps([{**preset, "model_name": "gpt-4o-mini"}]),
            LLMCHAT__DEFAULT_PRESET="fake",
            LLMCHAT__RANDOM_TRIGGER_PROB="0",
            LLMCHAT__ENABLE_PRIVATE_CHAT="true",
            LLMCHAT__PRIVATE_CHAT_PRESET="fake",
        )
    return env


async def connect(port: int, process: subprocess.Popen[bytes]) -> ClientConnection:
    """Connect as OneBot v11 (reverse WebSocket), a try every CONNECT_RETRY_SECONDS."""
    headers = {"X-Self-ID": str(SELF_ID), "X-Client-Role": "Universal"}
    url = f"ws://127.0.0.1:{port}/onebot/v11/ws"
    deadline = time.monotonic() + CONNECT_TIMEOUT_SECONDS
    while True:
        try:
            return await ws_connect(url, additional_headers=headers, open_timeout=10,
                                    max_size=None, compression=None)  # fmt: skip
        except (OSError, InvalidHandshake, TimeoutError):
            check_alive(process)
            if time.monotonic() > deadline:
                message = f"no OneBot connection within {CONNECT_TIMEOUT_SECONDS} s"
                raise TimeoutError(message) from None
            await asyncio.sleep(CONNECT_RETRY_SECONDS)


async def next_reply(onebot: OneBotSide, process: subprocess.Popen[bytes]) -> Sent:
    """The next message the bot sends (the reply to the turn just sent)."""
    try:
        return await asyncio.wait_for(onebot.sent.get(), REPLY_TIMEOUT_SECONDS)
    except TimeoutError:
        check_alive(process)
        raise TimeoutError(f"no reply within {REPLY_TIMEOUT_SECONDS} s") from None


@dataclass(frozen=True)
class StartedBot:
    """A bot process with the OneBot side connected to it."""

    process: subprocess.Popen[bytes]
    onebot: OneBotSide
    startup_s: float
    startup_cpu_ms: float


async def run_turns(bot: StartedBot, events: list[str], figures: Figures) -> None:
    """Send each turn once the previous reply came back; the first turn's CPU and latency
    are also read alone (what it loads on first use shows there)."""
    bot.onebot.drain_sent()
    pid, latencies = bot.process.pid, []
    cpu_before = cpu_ms(pid)
    for event in events:
        sent_at = time.perf_counter_ns()
        await bot.onebot.ws.send(event)
        latencies.append((await next_reply(bot.onebot, bot.process)).at_ns - sent_at)
        if len(latencies) == 1:
            figures.first_turn_cpu_ms = cpu_ms(pid) - cpu_before
    waited = await wait_until_quiet(bot.process)
    idle = figures.idle_cpu_ms_per_s / 1000 * waited
    total_ms = max(0.0, cpu_ms(pid) - cpu_before - idle)
    figures.cpu_per_turn_ms = total_ms / len(events)
    later = max(0.0, total_ms - figures.first_turn_cpu_ms)
    figures.cpu_per_later_turn_ms = later / max(1, len(events) - 1)
    figures.first_turn_latency_ms = latencies[0] / 1e6
    figures.latency_p50_ms = percentile(latencies, 0.5) / 1e6
    figures.latency_p99_ms = percentile(latencies, 0.99) / 1e6


async def run_burst(bot: StartedBot, events: list[str], figures: Figures) -> None:
    """Send every message at once, then wait until the bot is quiet."""
    bot.onebot.drain_sent()
    cpu_before = cpu_ms(bot.process.pid)
    for event in events:
        await bot.onebot.ws.send(event)
    waited = await wait_until_quiet(bot.process)
    spent = cpu_ms(bot.process.pid) - cpu_before - figures.idle_cpu_ms_per_s / 1000 * waited
    figures.cpu_per_unaddressed_ms = max(0.0, spent) / len(events)
    figures.burst_replies = bot.onebot.drain_sent()


async def measure_started_bot(
    bot: StartedBot, sizes: Sizes, llm: FakeOpenAI
) -> tuple[Figures, list[str]]:
    """From the accepted connection on: settle, idle rate, the turns, the burst; with the
    events of the steady turns to come."""
    pid = bot.process.pid
    figures = Figures(rss_at_connection_mib=rss_mib(pid))
    await wait_until_quiet(bot.process, START_SETTLE_SECONDS)
    idle_started = cpu_ms(pid)
    await asyncio.sleep(IDLE_RATE_SECONDS)
    figures.idle_cpu_ms_per_s = (cpu_ms(pid) - idle_started) / IDLE_RATE_SECONDS
    figures.rss_after_start_mib = rss_mib(pid)
    rng = random.Random(16)
    forget_requests(llm)
    await run_turns(bot, addressed_turns(sizes, rng), figures)
    figures.turns_llm_requests = len(llm.chat_requests)
    forget_requests(llm)
    figures.rss_after_turns_mib = rss_mib(pid)
    await run_burst(bot, burst_messages(sizes, rng), figures)
    figures.rss_after_burst_mib = rss_mib(pid)
    return figures, addressed_turns(sizes, rng, sizes.steady_turns)


@dataclass
class SteadyBot:
    """A bot taking part in the steady turns: its process, its events, its idle rate."""

    bot: StartedBot
    events: list[str]
    idle_ms_per_s: float
    per_block: int
    block_cpu_ms: list[float] = field(default_factory=list)  # per turn, per block
    mark: tuple[float, float] | None = None  # (CPU ms, monotonic s) at its block's start

    def charge(self) -> None:
        """Charge the block begun at `mark` with what the bot spent since, less idle."""
        if self.mark is not None:
            cpu_then, then = self.mark
            idle = self.idle_ms_per_s * (time.monotonic() - then)
            spent = cpu_ms(self.bot.process.pid) - cpu_then - idle
            self.block_cpu_ms.append(max(0.0, spent) / self.per_block)


async def run_steady_turns(bots: list[SteadyBot], blocks: int) -> None:
    """The turns after the burst: each round every bot takes its next block, the order
    rotating, so a slower spell of this shared machine weighs on every bot alike. A block
    is charged until the bot's next block starts (deferred writes count); its last, until
    the bot is quiet."""
    for block in range(blocks):
        for offset in range(len(bots)):
            steady = bots[(block + offset) % len(bots)]
            steady.charge()
            steady.mark = (cpu_ms(steady.bot.process.pid), time.monotonic())
            steady.bot.onebot.drain_sent()
            for event in steady.events[block * steady.per_block : (block + 1) * steady.per_block]:
                await steady.bot.onebot.ws.send(event)
                await next_reply(steady.bot.onebot, steady.bot.process)
    for steady in bots:
        await wait_until_quiet(steady.bot.process)
        steady.charge()


async def stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM (NoneBot shuts down cleanly), SIGKILL if it does not end in time."""
    if process.poll() is None:
        process.terminate()
        try:
            await asyncio.to_thread(process.wait, STOP_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            await asyncio.to_thread(process.wait)
    _children.discard(process)


@contextlib.asynccontextmanager
async def running_bot(spec: BotSpec, llm: FakeOpenAI) -> AsyncIterator[StartedBot]:
    """The bot of `spec` in a child process on a copy of its database, connected; stopped
    at the end. A bot that exits or stops answering ends the bench with its output."""
    with tempfile.TemporaryDirectory(prefix="aimemory-footprint-") as folder:
        work_dir = Path(folder)
        if spec.database is not None:
            copy_database(spec.database, work_dir / "aimemory.db")
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = int(probe.getsockname()[1])
        log = work_dir / "bot.log"
        command = [spec.python, "-m", "bench.footprint_child", spec.kind, str(port)]
        env = child_environment(spec, work_dir, llm)
        with log.open("wb") as output:
            started = time.perf_counter()
            process = await asyncio.to_thread(subprocess.Popen, command, cwd=work_dir, env=env,
                                              stdout=output, stderr=subprocess.STDOUT)  # fmt: skip
        _children.add(process)
        try:
            ws = await connect(port, process)
            startup_s, startup_cpu = time.perf_counter() - started, cpu_ms(process.pid)
            onebot = OneBotSide(ws)
            try:
                yield StartedBot(process, onebot, startup_s, startup_cpu)
            finally:
                await onebot.close()
        except (ChildExited, TimeoutError, ConnectionClosed) as problem:
            output_tail = log.read_text(errors="replace")[-3000:] if log.exists() else ""
            message = f"{spec.label}: {problem}\n--- bot output ---\n{output_tail}"
            raise SystemExit(message) from problem
        finally:
            await stop(process)


async def measure_bots(
    specs: dict[str, BotSpec], sizes: Sizes, llm: FakeOpenAI
) -> dict[str, Figures]:
    """Each bot in its own process: start, settle, turns and burst one bot after the
    other, every bot kept running; then the steady turns of all of them side by side;
    then STARTUP_RUNS - 1 more starts of each (the median start-up of all)."""
    results: dict[str, Figures] = {}
    steady: dict[str, SteadyBot] = {}
    first_starts: dict[str, tuple[float, float]] = {}
    async with contextlib.AsyncExitStack() as running:
        for key, spec in specs.items():
            print(f"measuring {spec.label}…", flush=True)
            bot = await running.enter_async_context(running_bot(spec, llm))
            first_starts[key] = (bot.startup_s, bot.startup_cpu_ms)
            results[key], events = await measure_started_bot(bot, sizes, llm)
            per_block = len(events) // sizes.steady_blocks
            steady[key] = SteadyBot(bot, events, results[key].idle_cpu_ms_per_s, per_block)
        print(f"the steady turns of every bot, {sizes.steady_blocks} blocks each…", flush=True)
        await run_steady_turns(list(steady.values()), sizes.steady_blocks)
        for key, bot in steady.items():
            results[key].steady_block_cpu_ms = bot.block_cpu_ms
            results[key].cpu_per_steady_turn_ms = statistics.fmean(bot.block_cpu_ms)
            results[key].api_calls = dict(bot.bot.onebot.api_calls)
    for key, spec in specs.items():
        startups = [first_starts[key]]
        for _ in range(STARTUP_RUNS - 1):
            async with running_bot(spec, llm) as bot:
                startups.append((bot.startup_s, bot.startup_cpu_ms))
        figures = results[key]
        figures.startup_runs_s = [wall for wall, _ in startups]
        figures.startup_s = statistics.median(figures.startup_runs_s)
        figures.startup_cpu_ms = statistics.median(cpu for _, cpu in startups)
    return results


@atexit.register
def _kill_children() -> None:
    for process in list(_children):
        if process.poll() is None:
            process.kill()


# (label, Figures field, format, target key or None)
ROWS: tuple[tuple[str, str, str, str | None], ...] = (
    ("start-up: process start -> connection (s)", "startup_s", "{:.2f}", "startup_large_db_s"),
    ("  CPU used by then (ms)", "startup_cpu_ms", "{:.0f}", None),
    ("RSS at the connection (MiB)", "rss_at_connection_mib", "{:.1f}", None),
    ("RSS after start (MiB)", "rss_after_start_mib", "{:.1f}", "rss_after_start_mib"),
    ("RSS after the addressed turns (MiB)", "rss_after_turns_mib", "{:.1f}", None),
    ("RSS after the burst (MiB)", "rss_after_burst_mib", "{:.1f}", "rss_after_burst_mib"),
    ("CPU per addressed turn (ms)", "cpu_per_turn_ms", "{:.2f}", None),
    ("  of which the first turn alone (ms)", "first_turn_cpu_ms", "{:.0f}", None),
    ("  per turn after the first (ms)", "cpu_per_later_turn_ms", "{:.2f}", None),
    ("CPU per turn, 1 000 more after the burst", "cpu_per_steady_turn_ms", "{:.2f}", None),
    ("  over the bare NoneBot's (ms)", "cpu_per_turn_over_bare_ms", "{:.2f}", None),
    ("  per block: median over bare", "cpu_per_turn_over_bare_median_ms", "{:.2f}", None),
    ("  per block: range over bare", "cpu_per_turn_over_bare_range_ms", "range", None),
    ("CPU per unaddressed message (ms)", "cpu_per_unaddressed_ms", "{:.3f}", None),
    (
        "  over the bare NoneBot's (ms)",
        "cpu_per_unaddressed_over_bare_ms",
        "{:.3f}",
        "cpu_per_unaddressed_ms",
    ),
    ("latency event -> reply p50 (ms)", "latency_p50_ms", "{:.1f}", None),
    ("latency event -> reply p99 (ms)", "latency_p99_ms", "{:.1f}", None),
    ("latency of the first turn (ms)", "first_turn_latency_ms", "{:.0f}", None),
    ("idle CPU after start (ms/s)", "idle_cpu_ms_per_s", "{:.1f}", None),
    ("LLM requests during the turns", "turns_llm_requests", "{}", None),
    ("messages sent during the burst", "burst_replies", "{}", None),
)
LABEL_WIDTH = 40
COLUMN_WIDTH = 18


@dataclass(frozen=True)
class PeerRatio:
    """The peer's CPU per steady turn over the plugin's: overall, per block (beside the
    plugin's block of the same round), and over the bare NoneBot's (None without it, or
    when the plugin's own cost is not above zero)."""

    overall: float
    block_median: float
    block_range: tuple[float, float]
    over_bare: float | None

    @property
    def met(self) -> bool:
        """Whether the peer spends at least PEER_CPU_RATIO_TARGET times the plugin's CPU."""
        return self.overall >= PEER_CPU_RATIO_TARGET


def _times(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator > 0 else math.inf


def peer_ratio(results: dict[str, Figures]) -> PeerRatio | None:
    """The peer's ratio to the plugin on the empty database; None unless both ran."""
    plugin, peer = results.get("plugin"), results.get(PEER)
    if plugin is None or peer is None:
        return None
    pairs = zip(peer.steady_block_cpu_ms, plugin.steady_block_cpu_ms, strict=True)
    blocks = [_times(theirs, mine) for theirs, mine in pairs]
    over_bare = None
    if "bare" in results and plugin.cpu_per_turn_over_bare_ms > 0:
        over_bare = peer.cpu_per_turn_over_bare_ms / plugin.cpu_per_turn_over_bare_ms
    overall = _times(peer.cpu_per_steady_turn_ms, plugin.cpu_per_steady_turn_ms)
    return PeerRatio(overall, statistics.median(blocks), (min(blocks), max(blocks)), over_bare)


def print_peer_ratio(ratio: PeerRatio | None, peer_python: str | None) -> None:
    """The lines comparing the plugin's CPU per turn with the peer's."""
    if ratio is None:
        why = "--only left it or the plugin out" if peer_python else "no --peer-python"
        print(f"CPU per turn: the peer ({PEER}) was not measured ({why})")
        return
    verdict = "met" if ratio.met else "NOT met"
    print(
        f"CPU per turn: {PEER} ÷ plugin = {ratio.overall:.1f}× "
        f"(target ≥ {PEER_CPU_RATIO_TARGET:g}×): {verdict}"
    )
    low, high = ratio.block_range
    print(
        f"  per block, beside the plugin's of the same round: median {ratio.block_median:.1f}×, "
        f"range {low:.1f}×..{high:.1f}×"
    )
    if ratio.over_bare is not None:
        print(
            f"  over the bare NoneBot: ({PEER} − bare) ÷ (plugin − bare) = {ratio.over_bare:.1f}×"
        )


def verdicts(results: dict[str, Figures], ratio: PeerRatio | None) -> dict[str, bool]:
    """Each target, checked on the plugin (start-up: on the large database); the peer's
    ratio when the peer was measured."""
    plugin, large = results["plugin"], results["plugin_large_db"]
    met = {
        "rss_after_start_mib": plugin.rss_after_start_mib <= TARGETS["rss_after_start_mib"],
        "rss_after_burst_mib": plugin.rss_after_burst_mib <= TARGETS["rss_after_burst_mib"],
        "cpu_per_unaddressed_ms": plugin.cpu_per_unaddressed_over_bare_ms
        <= TARGETS["cpu_per_unaddressed_ms"],
        "startup_large_db_s": large.startup_s <= TARGETS["startup_large_db_s"],
    }
    if ratio is not None:
        met[PEER_TARGET] = ratio.met
    return met


def print_table(results: dict[str, Figures], labels: dict[str, str], sizes: Sizes) -> None:
    """The figures of every bot side by side, the targets beside."""
    print()
    header = "".join(f"{labels[c]:>{COLUMN_WIDTH}}" for c in results)
    print(f"{'':<{LABEL_WIDTH}}{header}   target")
    for label, name, form, target in ROWS:
        values = [getattr(figures, name) for figures in results.values()]
        shown = [f"{v[0]:.2f}..{v[1]:.2f}" if form == "range" else form.format(v) for v in values]
        cells = "".join(f"{cell:>{COLUMN_WIDTH}}" for cell in shown)
        note = " (large DB)" if target == "startup_large_db_s" else ""
        goal = f"<= {TARGETS[target]:g}{note}" if target else ""
        print(f"{label:<{LABEL_WIDTH}}{cells}   {goal}")
    print(
        f"({sizes.turns} addressed turns, {sizes.burst} unaddressed messages from "
        f"{sizes.burst_users} users; large DB {sizes.layout.memories} memories, "
        f"{sizes.layout.rows} chat-log rows; start-up figures the median of {STARTUP_RUNS} starts)"
    )


def subtract_bare(results: dict[str, Figures]) -> None:
    """Each bot's CPU per turn and per unaddressed message over the bare NoneBot's."""
    bare = results.get("bare")
    if bare is None:
        return
    for figures in results.values():
        figures.cpu_per_turn_over_bare_ms = (
            figures.cpu_per_steady_turn_ms - bare.cpu_per_steady_turn_ms
        )
        pairs = zip(figures.steady_block_cpu_ms, bare.steady_block_cpu_ms, strict=True)
        differences = [mine - theirs for mine, theirs in pairs]
        figures.cpu_per_turn_over_bare_median_ms = statistics.median(differences)
        figures.cpu_per_turn_over_bare_range_ms = (min(differences), max(differences))
        figures.cpu_per_unaddressed_over_bare_ms = (
            figures.cpu_per_unaddressed_ms - bare.cpu_per_unaddressed_ms
        )


def print_verdicts(met: dict[str, bool], measured_peer: bool, quick: bool) -> None:
    """A line per target, then the bench's verdict line."""
    for target, ok in met.items():
        goal = (
            f">= {PEER_CPU_RATIO_TARGET:g}x" if target == PEER_TARGET else f"<= {TARGETS[target]:g}"
        )
        print(f"target {target} {goal}: {'met' if ok else 'NOT met'}")
    notes = [] if measured_peer else [f"{PEER} not measured"]
    if quick:
        notes.append("quick run, smaller than the target's run")
    note = "".join(f"; {n}" for n in notes)
    print(f"target met: {'yes' if all(met.values()) else 'no'} (issue #16 footprint{note})")


def options(parser: argparse.ArgumentParser) -> None:
    """--profile, --only, --peer-python."""
    parser.add_argument("--profile", metavar="PREFIX", help="profile each bot under cProfile "
                        "(figures not comparable), stats to PREFIX.<kind>.<pid>.prof")  # fmt: skip
    parser.add_argument(
        "--only", choices=BOT_KEYS, action="append", help="measure only this bot (repeatable)"
    )
    parser.add_argument("--peer-python", metavar="PATH", help=f"measure nonebot-plugin-{PEER} "
                        "too, run by PATH: the Python of a venv where it is installed")  # fmt: skip


def checked_options(args: argparse.Namespace) -> str | None:
    """Check --peer-python and --only, export --profile; the peer's Python, absolute (the
    child starts in a temporary directory; symlinks kept, a venv's is one)."""
    if PEER in (args.only or ()) and not args.peer_python:
        raise SystemExit(f"--only {PEER} needs --peer-python")
    if args.profile:
        os.environ[PROFILE_VARIABLE] = str(Path(args.profile).resolve())
    if args.peer_python and not os.access(args.peer_python, os.X_OK):
        raise SystemExit(f"--peer-python {args.peer_python}: not an executable")
    return os.path.abspath(args.peer_python) if args.peer_python else None


async def run(bench: Bench) -> None:
    """Build or reuse the large database, measure the bots (the peer with --peer-python),
    then the HTTP client's cost, and print the report."""
    quick, peer_python = bench.quick, checked_options(bench.args)
    only = bench.args.only or list(BOT_KEYS)
    task, loop = asyncio.current_task(), asyncio.get_running_loop()
    if task is not None:  # SIGTERM or SIGHUP as Ctrl-C, so that the bots are stopped
        for stop_signal in (signal.SIGTERM, signal.SIGHUP):
            loop.add_signal_handler(stop_signal, task.cancel)
    sizes = Sizes.of(quick)
    all_specs = {
        "plugin": BotSpec("plugin", "plugin"),
        "plugin_large_db": BotSpec("plugin, large DB", "plugin", cached_database(sizes.layout)),
        "bare": BotSpec("bare NoneBot", "bare"),
    }
    if peer_python:
        all_specs[PEER] = BotSpec(PEER, PEER, python=peer_python)
    specs = {key: all_specs[key] for key in BOT_KEYS if key in only and key in all_specs}
    with fake_llm(lambda body: text("收到～")) as llm:
        results = await measure_bots(specs, sizes, llm)
    print("the HTTP client's CPU per request (bench.http_cost)…", flush=True)
    http_cost = await asyncio.to_thread(run_child, "bench.http_cost", {"quick": quick})
    subtract_bare(results)
    ratio = peer_ratio(results)
    print_table(results, {key: spec.label for key, spec in specs.items()}, sizes)
    print_peer_ratio(ratio, peer_python)
    print_http_cost(http_cost)
    summary: dict[str, Any] = {
        "quick": quick,
        "sizes": {"turns": sizes.turns, "burst": sizes.burst, "burst_users": sizes.burst_users},
        "targets": {**TARGETS, PEER_TARGET: PEER_CPU_RATIO_TARGET},
        "peer_ratio": None if ratio is None else asdict(ratio),
        "http_cost": http_cost,
        **{key: asdict(figures) for key, figures in results.items()},
    }
    if any(key not in results for key in BOT_KEYS if key != PEER):
        print("verdicts need every bot (no --only)")
    else:
        summary["met"] = verdicts(results, ratio)
        print_verdicts(summary["met"], ratio is not None, quick)
    print(RESULT_PREFIX + json.dumps(summary, ensure_ascii=False), flush=True)


if __name__ == "__main__":
    main(__doc__, run, options, load_plugin=False)
