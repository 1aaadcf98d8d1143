"""Footprint of a real bot process: resident memory, CPU per message and start-up time of
the plugin, beside a bare NoneBot with one minimal matcher (issue #16) and, given
--peer-python, beside nonebot-plugin-llmchat, a popular store plugin doing the same job.

Each bot is a real child process (bench/footprint_child.py), started as bot.py starts one:
NoneBot on the FastAPI driver at 127.0.0.1, the OneBot v11 adapter, then the plugin (the
fake OpenAI server of tests/fakes answering "收到～" at once, an 8k context budget, a
temporary database) or one matcher shaped like the plugin's that replies "收到" to messages
addressed to it. This process is the OneBot implementation: it connects to the reverse
WebSocket, sends OneBot v11 events and answers every API call the bot makes. Three bots in
one run: the plugin on an empty database, the plugin on a large one (10 000 memories saved
through MemoryService, 100 000 chat-log rows through the ChatLog writer; built once by
bench/footprint_db.py, cached under /tmp, copied for each run), and the bare NoneBot; a
fourth with --peer-python PATH: nonebot-plugin-llmchat, run by PATH (the Python of a venv
where it is installed, e.g. `python -m venv /tmp/peer && /tmp/peer/bin/pip install
"nonebot2[fastapi,websockets,httpx]" nonebot-adapter-onebot nonebot-plugin-llmchat`),
configured through LLMCHAT__* variables to answer @ in groups and private chats from the
same fake server, random replies off; it takes the same turns, the same burst and the
same steady rounds.

Per bot, read from /proc/<pid>: VmRSS at the connection, after start (the connection plus
at least 2 s and until the CPU is quiet, so that background loads have finished), after
200 addressed turns (@ in 4 groups and 3 private chats, 12 speakers, each turn sent once
the previous reply, the `send_msg` call, came back) and after a burst of 2 000 unaddressed
messages in one group from 1 000 distinct users, sent all at once. CPU is utime+stime over
a phase, including its wait until the process is quiet again (CPU up by at most one clock
tick in 1.5 s, longer than the chat log's 1 s flush interval, so deferred writes count),
minus the idle rate measured after start over that wait, divided by the messages; the
first turn is also shown alone (what loads on first use). Wall latency event -> reply.
Start-up is process start -> first accepted connection (a try every 20 ms), with the CPU
used by then; the median of 3 starts, as a shared machine makes single starts noisy.

The turns after the burst are taken by all the bots side by side (every bot stays running
after its burst): in rounds, each bot takes its next block of 100 turns in turn, the order
rotating, so a slower spell of this shared machine weighs on every bot alike rather than on
whichever was being measured; the plugin's per-block differences to the bare bot's block
of the same round are shown too (median and range). These turns (1 000, 200 with
--quick, as a few full garbage collections of ~75 ms each land in 200 turns or not) give
the CPU per turn compared below.

Targets (the plugin; start-up on the large database): RSS after start <= 100 MiB, after
the burst <= 130 MiB; CPU <= 0.5 ms per unaddressed message as the plugin's own cost, its
CPU minus the bare NoneBot's in the same run (NoneBot's own handling of one event over
the WebSocket, ~1 ms here, is no plugin's to save); start-up <= 1.5 s; and, with the peer,
at least 15x less CPU per turn after the burst than nonebot-plugin-llmchat (also shown
over the bare NoneBot: (llmchat - bare) / (plugin - bare)). The old target of <= 2.5 ms
per addressed turn over the bare NoneBot is retired (issue #23): no CPU saving is worth
hand-written infrastructure; the figures are still shown.

Then bench/http_cost.py, in a process of its own, measures the CPU one model call's HTTP
exchange costs in Python (raw asyncio streams, httpx kept alive, the plugin's path) and
prints its figures under the table.

--quick: 50 turns, 500 messages from 250 users, a 1 000-memory / 10 000-row database.
About a minute, two with the peer (the first run builds the database: ~40 s more); a full
run takes a few minutes.
Run: python -m bench.footprint [--quick] [--peer-python PATH]
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
from contextlib import asynccontextmanager
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
    chat_line,
    fake_llm,
    forget_requests,
    percentile,
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
QUIET_SECONDS = 1.5
CPU_POLL_SECONDS = 0.05
IDLE_RATE_SECONDS = 2.0
# Start-up is the median of this many starts (the measured run's and more).
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
# At least this many times less CPU per steady turn than the peer, nonebot-plugin-llmchat.
PEER_CPU_RATIO_TARGET = 15.0
PEER = "llmchat"
PEER_TARGET = "cpu_per_turn_llmchat_ratio"
BOT_KEYS = ("plugin", "plugin_large_db", "bare", PEER)
# Children still running, killed should this process end without stopping them.
_children: set[subprocess.Popen[bytes]] = set()


@dataclass(frozen=True)
class Sizes:
    """How much each bot is given."""

    turns: int
    burst: int
    burst_users: int
    layout: Layout
    # After the burst, for the CPU per turn: enough turns that the process's few full
    # garbage collections (~75 ms each in a bare NoneBot) do not decide the figure, in
    # blocks taken by the bots in turn (see run_steady_turns).
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
    """One bot to measure: a label, the child's kind, the database it starts on, and the
    Python that runs it (the peer's is another venv's)."""

    label: str
    kind: str
    database: Path | None = None
    python: str = sys.executable


@dataclass
class Figures:
    """What was measured of one bot."""

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
    # The plugin's own cost: per turn after the burst (steady state; the first turn's
    # one-time loads are shown alone) and per unaddressed message, minus the bare bot's.
    cpu_per_turn_over_bare_ms: float = 0.0
    # The same per block (each beside the bare bot's block of the same round): median, range.
    cpu_per_turn_over_bare_median_ms: float = 0.0
    cpu_per_turn_over_bare_range_ms: tuple[float, float] = (0.0, 0.0)
    cpu_per_unaddressed_over_bare_ms: float = 0.0
    first_turn_latency_ms: float = 0.0
    latency_p50_ms: float = 0.0
    latency_p99_ms: float = 0.0
    turns_llm_requests: int = 0
    burst_replies: int = 0
    api_calls: dict[str, int] = field(default_factory=dict)


# --------------------------------------------------------------------------- /proc


def rss_mib(pid: int) -> float:
    """VmRSS of process `pid` in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS in /proc/{pid}/status")


def cpu_ms(pid: int) -> float:
    """utime + stime of process `pid` (all its threads) in ms."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) "; field 3 is fields[0]
    return (int(fields[11]) + int(fields[12])) * CLOCK_TICK_MS


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


# --------------------------------------------------------------------------- the OneBot side


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
            return {
                "group_id": group_id,
                "user_id": user_id,
                "nickname": f"群友{user_id}",
                "card": "",
                "role": "member",
                "sex": "unknown",
                "age": 0,
                "join_time": 0,
                "last_sent_time": 0,
                "level": "1",
                "title": "",
            }
        if action == "get_group_info":
            name = f"测试群{group_id}"
            return {"group_id": group_id, "group_name": name, "member_count": 500}
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


_message_ids = itertools.count(10_000)


def group_event(group_id: int, user_id: int, name: str, segments: list[dict[str, Any]]) -> str:
    """A OneBot v11 group message event, as JSON."""
    return json.dumps(
        {
            "time": int(time.time()),
            "self_id": SELF_ID,
            "post_type": "message",
            "message_type": "group",
            "sub_type": "normal",
            "message_id": next(_message_ids),
            "group_id": group_id,
            "user_id": user_id,
            "anonymous": None,
            "message": segments,
            "raw_message": "",
            "font": 0,
            "sender": {"user_id": user_id, "nickname": name, "card": name, "role": "member"},
        },
        ensure_ascii=False,
    )


def private_event(user_id: int, name: str, line: str) -> str:
    """A OneBot v11 private (friend) message event, as JSON."""
    return json.dumps(
        {
            "time": int(time.time()),
            "self_id": SELF_ID,
            "post_type": "message",
            "message_type": "private",
            "sub_type": "friend",
            "message_id": next(_message_ids),
            "user_id": user_id,
            "message": [text_segment(line)],
            "raw_message": line,
            "font": 0,
            "sender": {"user_id": user_id, "nickname": name},
        },
        ensure_ascii=False,
    )


def text_segment(line: str) -> dict[str, Any]:
    """A text segment."""
    return {"type": "text", "data": {"text": line}}


def addressed_turns(sizes: Sizes, rng: random.Random, count: int | None = None) -> list[str]:
    """The addressed turns (`sizes.turns` unless `count`), as event JSON: an @ in a group,
    or a private message."""
    groups = sizes.layout.group_ids()[:TURN_GROUPS]
    speakers = [
        (sizes.layout.personal_user_ids()[0] + i, POOLS["name"][i]) for i in range(SPEAKER_COUNT)
    ]
    private = speakers[:PRIVATE_CHATS]
    at_bot = {"type": "at", "data": {"qq": str(SELF_ID)}}
    events = []
    for _ in range(sizes.turns if count is None else count):
        line = chat_line(rng, 10, 80)
        chat = rng.randrange(len(groups) + len(private))
        if chat < len(groups):
            user_id, name = rng.choice(speakers)
            segments = [at_bot, text_segment(" " + line)]
            events.append(group_event(groups[chat], user_id, name, segments))
        else:
            user_id, name = private[chat - len(groups)]
            events.append(private_event(user_id, name, line))
    return events


def burst_messages(sizes: Sizes, rng: random.Random) -> list[str]:
    """The unaddressed burst in one group, as event JSON: each user sends a few lines."""
    group_id = sizes.layout.group_ids()[0]
    users = [
        (FIRST_BURST_USER_ID + i, f"{rng.choice(POOLS['name'])}{i}")
        for i in range(sizes.burst_users)
    ]
    senders = [users[i % len(users)] for i in range(sizes.burst)]
    rng.shuffle(senders)
    return [
        group_event(group_id, user_id, name, [text_segment(chat_line(rng, 10, 80))])
        for user_id, name in senders
    ]


# --------------------------------------------------------------------------- one bot


def free_port() -> int:
    """A TCP port free on 127.0.0.1 just now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def child_environment(spec: BotSpec, work_dir: Path, llm: FakeOpenAI) -> dict[str, str]:
    """The child's environment: ours without AIMEMORY_* or LLMCHAT_* keys, plus the bench's
    settings (PYTHONPATH: this tree, for bench.footprint_child and the plugin's code)."""
    env = {
        k: v for k, v in os.environ.items() if not k.upper().startswith(("AIMEMORY_", "LLMCHAT_"))
    }
    env.update(
        PYTHONPATH=str(ROOT),
        LOG_LEVEL="WARNING",
        LOCALSTORE_DATA_DIR=str(work_dir / "data"),
        LOCALSTORE_CACHE_DIR=str(work_dir / "cache"),
        LOCALSTORE_CONFIG_DIR=str(work_dir / "config"),
    )
    if spec.kind == "plugin":
        env.update({key.upper(): str(value) for key, value in BENCH_SETTINGS.items()})
        env.update(
            AIMEMORY_API_KEY=API_KEY,
            AIMEMORY_API_BASE=llm.base_url,
            AIMEMORY_MODEL="gpt-4o-mini",
            AIMEMORY_MAX_CONTEXT_TOKENS="8192",
            AIMEMORY_DB_PATH=str(work_dir / "aimemory.db"),
            AIMEMORY_REVIEW_TICK_SECONDS="3600",
        )
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


def check_alive(process: subprocess.Popen[bytes]) -> None:
    """Raise if the child has exited."""
    if process.poll() is not None:
        raise ChildExited(f"the bot exited with code {process.returncode}")


class ChildExited(RuntimeError):
    """The bot process ended while it was being measured."""


async def connect(port: int, process: subprocess.Popen[bytes]) -> ClientConnection:
    """Connect as OneBot v11 (reverse WebSocket), a try every CONNECT_RETRY_SECONDS."""
    headers = {"X-Self-ID": str(SELF_ID), "X-Client-Role": "Universal"}
    deadline = time.monotonic() + CONNECT_TIMEOUT_SECONDS
    while True:
        try:
            return await ws_connect(
                f"ws://127.0.0.1:{port}/onebot/v11/ws",
                additional_headers=headers,
                open_timeout=10,
                max_size=None,
                compression=None,
            )
        except (OSError, InvalidHandshake, TimeoutError):
            check_alive(process)
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"no OneBot connection within {CONNECT_TIMEOUT_SECONDS} s"
                ) from None
            await asyncio.sleep(CONNECT_RETRY_SECONDS)


async def next_reply(onebot: OneBotSide, process: subprocess.Popen[bytes]) -> Sent:
    """The next message the bot sends (the reply to the turn just sent)."""
    try:
        return await asyncio.wait_for(onebot.sent.get(), REPLY_TIMEOUT_SECONDS)
    except TimeoutError:
        check_alive(process)
        raise TimeoutError(f"no reply within {REPLY_TIMEOUT_SECONDS} s") from None


@dataclass(frozen=True)
class TurnPhase:
    """CPU and latencies of the addressed turns."""

    cpu_per_turn_ms: float
    first_turn_cpu_ms: float
    latencies_ns: list[int]


async def run_turns(
    onebot: OneBotSide, process: subprocess.Popen[bytes], events: list[str], idle_rate: float
) -> TurnPhase:
    """Send each turn once the previous reply came back. The first turn's CPU is also
    read alone (event sent -> reply; what it loads on first use shows there)."""
    onebot.drain_sent()
    latencies: list[int] = []
    cpu_before = cpu_ms(process.pid)
    first_turn_cpu_ms = 0.0
    for event in events:
        sent_at = time.perf_counter_ns()
        await onebot.ws.send(event)
        latencies.append((await next_reply(onebot, process)).at_ns - sent_at)
        if len(latencies) == 1:
            first_turn_cpu_ms = cpu_ms(process.pid) - cpu_before
    waited = await wait_until_quiet(process)
    spent = max(0.0, cpu_ms(process.pid) - cpu_before - idle_rate * waited)
    return TurnPhase(spent / len(events), first_turn_cpu_ms, latencies)


async def run_burst(
    onebot: OneBotSide, process: subprocess.Popen[bytes], events: list[str], idle_rate: float
) -> tuple[float, int]:
    """Send every message at once, then wait until the bot is quiet; (CPU ms per message,
    messages the bot sent meanwhile)."""
    onebot.drain_sent()
    cpu_before = cpu_ms(process.pid)
    for event in events:
        await onebot.ws.send(event)
    waited = await wait_until_quiet(process)
    spent = cpu_ms(process.pid) - cpu_before - idle_rate * waited
    return max(0.0, spent) / len(events), onebot.drain_sent()


async def measure_started_bot(
    process: subprocess.Popen[bytes], onebot: OneBotSide, sizes: Sizes, llm: FakeOpenAI
) -> tuple[Figures, list[str]]:
    """From the accepted connection on: settle, the turns, the burst; with the events of
    the steady turns to come."""
    pid = process.pid
    figures = Figures(rss_at_connection_mib=rss_mib(pid))
    await wait_until_quiet(process, START_SETTLE_SECONDS)
    idle_started = cpu_ms(pid)
    await asyncio.sleep(IDLE_RATE_SECONDS)
    figures.idle_cpu_ms_per_s = (cpu_ms(pid) - idle_started) / IDLE_RATE_SECONDS
    figures.rss_after_start_mib = rss_mib(pid)

    rng = random.Random(16)
    forget_requests(llm)
    turns = await run_turns(
        onebot, process, addressed_turns(sizes, rng), figures.idle_cpu_ms_per_s / 1000
    )
    figures.turns_llm_requests = len(llm.chat_requests)
    forget_requests(llm)
    figures.cpu_per_turn_ms = turns.cpu_per_turn_ms
    figures.first_turn_cpu_ms = turns.first_turn_cpu_ms
    later_turns = max(1, len(turns.latencies_ns) - 1)
    total_ms = turns.cpu_per_turn_ms * len(turns.latencies_ns)
    figures.cpu_per_later_turn_ms = max(0.0, total_ms - turns.first_turn_cpu_ms) / later_turns
    figures.first_turn_latency_ms = turns.latencies_ns[0] / 1e6
    figures.latency_p50_ms = percentile(turns.latencies_ns, 0.5) / 1e6
    figures.latency_p99_ms = percentile(turns.latencies_ns, 0.99) / 1e6
    figures.rss_after_turns_mib = rss_mib(pid)

    figures.cpu_per_unaddressed_ms, figures.burst_replies = await run_burst(
        onebot, process, burst_messages(sizes, rng), figures.idle_cpu_ms_per_s / 1000
    )
    figures.rss_after_burst_mib = rss_mib(pid)
    figures.api_calls = dict(onebot.api_calls)
    return figures, addressed_turns(sizes, rng, sizes.steady_turns)


@dataclass
class SteadyBot:
    """A bot taking part in the steady turns: its process, its events, its idle rate."""

    process: subprocess.Popen[bytes]
    onebot: OneBotSide
    events: list[str]
    idle_ms_per_s: float
    per_block: int
    block_cpu_ms: list[float] = field(default_factory=list)  # per turn, per block


async def run_steady_turns(bots: list[SteadyBot], blocks: int) -> None:
    """The turns after the burst, in `blocks` rounds: each round every bot takes its next
    block of turns, one bot after the other (the order rotating). A bot's block is charged
    the CPU from its start to the start of its next block (deferred writes that ran while
    the other bots took theirs count), less its idle rate; its last, until it is quiet.
    Side by side in time, a slower spell of this shared machine weighs on every bot alike
    rather than on whichever was measured then."""
    marks: list[tuple[float, float] | None] = [None] * len(bots)
    for block in range(blocks):
        for offset in range(len(bots)):
            index = (block + offset) % len(bots)
            bot = bots[index]
            _charge(bot, marks[index])
            marks[index] = (cpu_ms(bot.process.pid), time.monotonic())
            bot.onebot.drain_sent()
            for event in bot.events[block * bot.per_block : (block + 1) * bot.per_block]:
                await bot.onebot.ws.send(event)
                await next_reply(bot.onebot, bot.process)
    for bot, mark in zip(bots, marks, strict=True):
        await wait_until_quiet(bot.process)
        _charge(bot, mark)


def _charge(bot: SteadyBot, mark: tuple[float, float] | None) -> None:
    """Charge the block begun at `mark` (CPU ms, monotonic s) with what the bot spent since."""
    if mark is None:
        return
    cpu_then, then = mark
    spent = cpu_ms(bot.process.pid) - cpu_then - bot.idle_ms_per_s * (time.monotonic() - then)
    bot.block_cpu_ms.append(max(0.0, spent) / bot.per_block)


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


def log_tail(log: Path, chars: int = 3000) -> str:
    """The end of the child's output."""
    return log.read_text(errors="replace")[-chars:] if log.exists() else ""


@dataclass(frozen=True)
class StartedBot:
    """A bot process with the OneBot side connected to it."""

    process: subprocess.Popen[bytes]
    onebot: OneBotSide
    startup_s: float
    startup_cpu_ms: float


@asynccontextmanager
async def running_bot(spec: BotSpec, llm: FakeOpenAI) -> AsyncIterator[StartedBot]:
    """The bot of `spec` in a child process on a copy of its database, connected; stopped
    at the end. A bot that exits or stops answering ends the bench with its output."""
    with tempfile.TemporaryDirectory(prefix="aimemory-footprint-") as folder:
        work_dir = Path(folder)
        if spec.database is not None:
            copy_database(spec.database, work_dir / "aimemory.db")
        port, log = free_port(), work_dir / "bot.log"
        command = [spec.python, "-m", "bench.footprint_child", spec.kind, str(port)]
        with log.open("wb") as output:
            started = time.perf_counter()
            process = await asyncio.to_thread(
                subprocess.Popen,
                command,
                cwd=work_dir,
                env=child_environment(spec, work_dir, llm),
                stdout=output,
                stderr=subprocess.STDOUT,
            )
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
            raise SystemExit(
                f"{spec.label}: {problem}\n--- bot output ---\n{log_tail(log)}"
            ) from problem
        finally:
            await stop(process)


async def more_startups(
    spec: BotSpec, llm: FakeOpenAI, figures: Figures, first: StartedBot
) -> None:
    """Time STARTUP_RUNS - 1 more starts of `spec`; the median with the first one's."""
    startups = [(first.startup_s, first.startup_cpu_ms)]
    for _ in range(STARTUP_RUNS - 1):
        async with running_bot(spec, llm) as bot:
            startups.append((bot.startup_s, bot.startup_cpu_ms))
    figures.startup_runs_s = [wall for wall, _ in startups]
    figures.startup_s = statistics.median(figures.startup_runs_s)
    figures.startup_cpu_ms = statistics.median(cpu for _, cpu in startups)


async def measure_bots(
    specs: dict[str, BotSpec], sizes: Sizes, llm: FakeOpenAI
) -> dict[str, Figures]:
    """Each bot in its own process: start, settle, turns and burst one bot after the
    other, every bot kept running; then the steady turns of all of them side by side;
    then more starts of each."""
    results: dict[str, Figures] = {}
    steady: dict[str, SteadyBot] = {}
    started: dict[str, StartedBot] = {}
    async with contextlib.AsyncExitStack() as running:
        for key, spec in specs.items():
            print(f"measuring {spec.label}…", flush=True)
            bot = await running.enter_async_context(running_bot(spec, llm))
            results[key], events = await measure_started_bot(bot.process, bot.onebot, sizes, llm)
            idle = results[key].idle_cpu_ms_per_s
            per_block = len(events) // sizes.steady_blocks
            steady[key] = SteadyBot(bot.process, bot.onebot, events, idle, per_block)
            started[key] = bot
        print(f"the steady turns of every bot, {sizes.steady_blocks} blocks each…", flush=True)
        await run_steady_turns(list(steady.values()), sizes.steady_blocks)
        for key, bot in steady.items():
            results[key].steady_block_cpu_ms = bot.block_cpu_ms
            results[key].cpu_per_steady_turn_ms = statistics.fmean(bot.block_cpu_ms)
            results[key].api_calls = dict(bot.onebot.api_calls)
    for key, spec in specs.items():
        await more_startups(spec, llm, results[key], started[key])
    return results


@atexit.register
def _kill_children() -> None:
    for process in list(_children):
        if process.poll() is None:
            process.kill()


# --------------------------------------------------------------------------- report

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
    (
        "CPU per unaddressed message (ms)",
        "cpu_per_unaddressed_ms",
        "{:.3f}",
        None,
    ),
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
TARGET_NOTES = {"startup_large_db_s": " (large DB)"}
LABEL_WIDTH = 40
COLUMN_WIDTH = 18


@dataclass(frozen=True)
class PeerRatio:
    """How many times the peer's CPU per steady turn is the plugin's: overall, per block
    (each beside the plugin's block of the same round), and both over the bare NoneBot's
    (None without the bare bot, or when the plugin's own cost is not above zero)."""

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
    """The peer's CPU per steady turn over the plugin's (on the empty database); None
    unless both were measured."""
    plugin, peer = results.get("plugin"), results.get(PEER)
    if plugin is None or peer is None:
        return None
    blocks = [
        _times(theirs, mine)
        for theirs, mine in zip(peer.steady_block_cpu_ms, plugin.steady_block_cpu_ms, strict=True)
    ]
    over_bare = None
    if "bare" in results and plugin.cpu_per_turn_over_bare_ms > 0:
        over_bare = peer.cpu_per_turn_over_bare_ms / plugin.cpu_per_turn_over_bare_ms
    return PeerRatio(
        _times(peer.cpu_per_steady_turn_ms, plugin.cpu_per_steady_turn_ms),
        statistics.median(blocks),
        (min(blocks), max(blocks)),
        over_bare,
    )


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


def target_text(target: str) -> str:
    """A target as its verdict line states it."""
    if target == PEER_TARGET:
        return f"{target} >= {PEER_CPU_RATIO_TARGET:g}x"
    return f"{target} <= {TARGETS[target]:g}"


def _cell(value: Any, form: str) -> str:
    if form == "range":
        low, high = value
        return f"{low:.2f}..{high:.2f}"
    return form.format(value)


def print_table(results: dict[str, Figures], labels: dict[str, str], sizes: Sizes) -> None:
    """The figures of every bot side by side, the targets beside."""
    columns = list(results)
    print()
    header = "".join(f"{labels[c]:>{COLUMN_WIDTH}}" for c in columns)
    print(f"{'':<{LABEL_WIDTH}}{header}   target")
    for label, name, form, target in ROWS:
        cells = "".join(
            f"{_cell(getattr(results[c], name), form):>{COLUMN_WIDTH}}" for c in columns
        )
        goal = f"<= {TARGETS[target]:g}{TARGET_NOTES.get(target, '')}" if target else ""
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
        differences = [
            mine - theirs
            for mine, theirs in zip(
                figures.steady_block_cpu_ms, bare.steady_block_cpu_ms, strict=True
            )
        ]
        figures.cpu_per_turn_over_bare_median_ms = statistics.median(differences)
        figures.cpu_per_turn_over_bare_range_ms = (min(differences), max(differences))
        figures.cpu_per_unaddressed_over_bare_ms = (
            figures.cpu_per_unaddressed_ms - bare.cpu_per_unaddressed_ms
        )


async def run(quick: bool, only: list[str], peer_python: str | None) -> None:
    """Build or reuse the large database, measure the bots (the peer with `peer_python`),
    then the HTTP client's cost, and print the report."""
    sizes = Sizes.of(quick)
    large_db = cached_database(sizes.layout)
    all_specs = {
        "plugin": BotSpec("plugin", "plugin"),
        "plugin_large_db": BotSpec("plugin, large DB", "plugin", large_db),
        "bare": BotSpec("bare NoneBot", "bare"),
    }
    if peer_python:
        all_specs[PEER] = BotSpec(PEER, PEER, python=peer_python)
    keys = [key for key in BOT_KEYS if key in only and key in all_specs]
    specs = [all_specs[key] for key in keys]
    with fake_llm(lambda body: text("收到～")) as llm:
        results = await measure_bots(dict(zip(keys, specs, strict=True)), sizes, llm)
    print("the HTTP client's CPU per request (bench.http_cost)…", flush=True)
    http_cost = await asyncio.to_thread(run_child, "bench.http_cost", {"quick": quick})
    subtract_bare(results)
    ratio = peer_ratio(results)
    print_table(results, dict(zip(keys, (s.label for s in specs), strict=True)), sizes)
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
        met = summary["met"] = verdicts(results, ratio)
        for target, ok in met.items():
            print(f"target {target_text(target)}: {'met' if ok else 'NOT met'}")
        notes = [] if ratio is not None else [f"{PEER} not measured"]
        if quick:
            notes.append("quick run, smaller than the target's run")
        note = "".join(f"; {n}" for n in notes)
        print(f"target met: {'yes' if all(met.values()) else 'no'} (issue #16 footprint{note})")
    print(RESULT_PREFIX + json.dumps(summary, ensure_ascii=False), flush=True)


async def run_until_stopped(quick: bool, only: list[str], peer_python: str | None) -> None:
    """`run`, cancelled by SIGTERM or SIGHUP as by Ctrl-C, so that the bots are stopped."""
    task, loop = asyncio.current_task(), asyncio.get_running_loop()
    if task is not None:
        for stop_signal in (signal.SIGTERM, signal.SIGHUP):
            loop.add_signal_handler(stop_signal, task.cancel)
    await run(quick, only, peer_python)


def main() -> None:
    """The command line: `--quick` for a smaller run, `--peer-python` for the peer."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smaller run of a minute or so")
    parser.add_argument(
        "--profile",
        metavar="PREFIX",
        help="profile each bot under cProfile (slower; figures not comparable), stats to "
        "PREFIX.<kind>.<pid>.prof",
    )
    parser.add_argument(
        "--only", choices=BOT_KEYS, action="append", help="measure only this bot (repeatable)"
    )
    parser.add_argument(
        "--peer-python",
        metavar="PATH",
        help=f"measure nonebot-plugin-{PEER} too, run by PATH: the Python of a venv where it "
        "is installed (with nonebot2[fastapi,websockets,httpx] and nonebot-adapter-onebot)",
    )
    args = parser.parse_args()
    if args.peer_python:
        if not os.access(args.peer_python, os.X_OK):
            parser.error(f"--peer-python {args.peer_python}: not an executable")
        # Absolute (the child starts in a temporary directory), symlinks kept (a venv's is one).
        args.peer_python = os.path.abspath(args.peer_python)
    if PEER in (args.only or ()) and not args.peer_python:
        parser.error(f"--only {PEER} needs --peer-python")
    if args.profile:
        os.environ[PROFILE_VARIABLE] = str(Path(args.profile).resolve())
    try:
        asyncio.run(run_until_stopped(args.quick, args.only or list(BOT_KEYS), args.peer_python))
    except (KeyboardInterrupt, asyncio.CancelledError):
        raise SystemExit("footprint: interrupted; the bots were stopped") from None


if __name__ == "__main__":
    main()
