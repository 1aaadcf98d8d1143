"""Footprint of a real bot process: RSS, CPU per message and start-up time of the plugin,
beside a bare NoneBot with one minimal matcher (issue #16) and, with --peer-python, beside
nonebot-plugin-llmchat (issue #23; PATH: a venv's Python with it, nonebot2[fastapi,websockets,
httpx] and nonebot-adapter-onebot).

Each bot is a child process (bench/footprint_child.py) for which this process is the OneBot
implementation; the fake OpenAI server answers "收到～" at once. Each takes 200 addressed
turns, a burst of 2 000 unaddressed messages, then 1 000 steady turns in blocks taken by all
bots in rotating turn. CPU is utime+stime until the bot is quiet, less its idle rate.
Run: python -m bench.footprint [--quick] [--peer-python PATH] [--only BOT] [--profile PREFIX]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import math
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from websockets.asyncio.client import ClientConnection
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake

from bench import harness as h
from bench.footprint_child import PROFILE_VARIABLE
from bench.footprint_db import Layout, cached_database
from tests.fakes.openai_server import FakeOpenAI, text

ROOT = Path(__file__).resolve().parents[1]
SELF_ID = 10000
SEND_ACTIONS = frozenset({"send_msg", "send_group_msg", "send_private_msg"})
CLOCK_TICK_MS = 1000 / os.sysconf("SC_CLK_TCK")
CONNECT_RETRY_SECONDS, CONNECT_TIMEOUT_SECONDS = 0.02, 60.0
REPLY_TIMEOUT_SECONDS, IDLE_TIMEOUT_SECONDS, STOP_TIMEOUT_SECONDS = 30.0, 120.0, 15.0
START_SETTLE_SECONDS, IDLE_RATE_SECONDS, CPU_POLL_SECONDS = 2.0, 2.0, 0.05
# Quiet: CPU up by at most one tick in this long (longer than the chat log's 1 s flush).
QUIET_SECONDS = 1.5
STARTUP_RUNS = 3
TURN_GROUPS, PRIVATE_CHATS, SPEAKER_COUNT = 4, 3, 12
FIRST_BURST_USER_ID = 3_000_000
PEER, PEER_TARGET = "llmchat", "cpu_per_turn_llmchat_ratio"
BOT_KEYS = ("plugin", "plugin_large_db", "bare", PEER)
# Upper bounds on the plugin's figures (start-up: on the large database, CPU: over the bare
# NoneBot's); a lower bound on the peer's CPU per steady turn ÷ the plugin's.
TARGETS = {"rss_after_start_mib": 100.0, "rss_after_burst_mib": 130.0,
           "cpu_per_unaddressed_ms": 0.5, "startup_large_db_s": 1.5, PEER_TARGET: 15.0}  # fmt: skip
_message_ids = itertools.count(10_000)


@dataclass(frozen=True)
class Sizes:
    """How much each bot is given. The steady turns are many: a few full garbage collections
    of ~75 ms each would decide the figure by landing in 200 turns or not."""

    turns: int
    burst: int
    burst_users: int
    layout: Layout
    steady_turns: int = 1_000
    steady_blocks: int = 10


FULL = Sizes(200, 2_000, 1_000, Layout(10_000, 100_000))
QUICK = Sizes(50, 500, 250, Layout(1_000, 10_000), steady_turns=200, steady_blocks=4)


@dataclass(frozen=True)
class BotSpec:
    """One bot: a label, the child's kind, its database, the Python that runs it."""

    label: str
    kind: str
    database: Path | None = None
    python: str = sys.executable


def row(label: str, form: str, target: str | None = None, default: Any = 0.0) -> Any:
    """A figure the table shows as `label`, formatted by `form` ("range": low..high)."""
    return field(default=default, metadata={"row": (label, form, target)})


# fmt: off
@dataclass
class Figures:
    """What was measured of one bot, in the table's order (`*_over_bare_*`: less the bare
    bot's; the per-block ones beside bare's block of the same round)."""

    startup_s: float = row("start-up: process start -> connection (s)", "{:.2f}", "startup_large_db_s")
    startup_cpu_ms: float = row("  CPU used by then (ms)", "{:.0f}")
    rss_at_connection_mib: float = row("RSS at the connection (MiB)", "{:.1f}")
    rss_after_start_mib: float = row("RSS after start (MiB)", "{:.1f}", "rss_after_start_mib")
    rss_after_turns_mib: float = row("RSS after the addressed turns (MiB)", "{:.1f}")
    rss_after_burst_mib: float = row("RSS after the burst (MiB)", "{:.1f}", "rss_after_burst_mib")
    cpu_per_turn_ms: float = row("CPU per addressed turn (ms)", "{:.2f}")
    first_turn_cpu_ms: float = row("  of which the first turn alone (ms)", "{:.0f}")
    cpu_per_later_turn_ms: float = row("  per turn after the first (ms)", "{:.2f}")
    cpu_per_steady_turn_ms: float = row("CPU per turn, 1 000 more after the burst", "{:.2f}")
    cpu_per_turn_over_bare_ms: float = row("  over the bare NoneBot's (ms)", "{:.2f}")
    cpu_per_turn_over_bare_median_ms: float = row("  per block: median over bare", "{:.2f}")
    cpu_per_turn_over_bare_range_ms: tuple[float, float] = row("  per block: range over bare", "range", default=(0.0, 0.0))
    cpu_per_unaddressed_ms: float = row("CPU per unaddressed message (ms)", "{:.3f}")
    cpu_per_unaddressed_over_bare_ms: float = row("  over the bare NoneBot's (ms)", "{:.3f}", "cpu_per_unaddressed_ms")
    latency_p50_ms: float = row("latency event -> reply p50 (ms)", "{:.1f}")
    latency_p99_ms: float = row("latency event -> reply p99 (ms)", "{:.1f}")
    first_turn_latency_ms: float = row("latency of the first turn (ms)", "{:.0f}")
    idle_cpu_ms_per_s: float = row("idle CPU after start (ms/s)", "{:.1f}")
    turns_llm_requests: int = row("LLM requests during the turns", "{}", default=0)
    burst_replies: int = row("messages sent during the burst", "{}", default=0)
    steady_block_cpu_ms: list[float] = field(default_factory=list)  # per turn, per block
# fmt: on


class ChildExited(RuntimeError):
    """The bot process ended while it was being measured."""


def check_alive(process: subprocess.Popen[bytes]) -> None:
    """Raise if the child has exited."""
    if process.poll() is not None:
        raise ChildExited(f"the bot exited with code {process.returncode}")


class Bot:
    """A bot's child process, the OneBot side of its connection (answering every API call,
    queueing when each message the bot sends arrived) and its figures."""

    def __init__(self, process: subprocess.Popen[bytes], ws: ClientConnection, startup_s: float):
        self.process, self.ws, self.startup_s = process, ws, startup_s
        self.startup_cpu_ms = self.cpu_ms()
        self.figures = Figures()
        self.steady_events: list[str] = []
        self.block_mark: tuple[float, float] | None = None  # (CPU ms, monotonic s)
        self.sent_ns: asyncio.Queue[int] = asyncio.Queue()
        self._reader = asyncio.create_task(self._answer_calls())

    async def _answer_calls(self) -> None:
        # The bots here call only the send actions; any other call gets empty data.
        message_ids = itertools.count(1)
        with contextlib.suppress(ConnectionClosed):
            async for raw in self.ws:
                frame = json.loads(raw)
                if "action" not in frame:
                    continue
                action = str(frame["action"])
                data = {"message_id": next(message_ids)} if action in SEND_ACTIONS else {}
                answer = {"status": "ok", "retcode": 0, "data": data, "echo": frame.get("echo")}
                await self.ws.send(json.dumps(answer))
                if action in SEND_ACTIONS:
                    self.sent_ns.put_nowait(time.perf_counter_ns())

    def cpu_ms(self) -> float:
        """utime + stime of the bot (all its threads) in ms."""
        stat = Path(f"/proc/{self.process.pid}/stat").read_text()
        fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) "; field 3 is fields[0]
        return (int(fields[11]) + int(fields[12])) * CLOCK_TICK_MS

    def rss_mib(self) -> float:
        """VmRSS of the bot in MiB."""
        return h.rss_kib(self.process.pid) / 1024

    async def wait_until_quiet(self, min_seconds: float = 0.0) -> float:
        """Wait until the bot's CPU rose by at most one tick in QUIET_SECONDS (and at least
        `min_seconds` passed); the seconds waited."""
        started = time.monotonic()
        samples: deque[tuple[float, float]] = deque()
        while True:
            check_alive(self.process)
            now = time.monotonic()
            samples.append((now, self.cpu_ms()))
            while samples[0][0] < now - QUIET_SECONDS:
                samples.popleft()
            waited = now - started
            covered = samples[-1][0] - samples[0][0] >= QUIET_SECONDS - 2 * CPU_POLL_SECONDS
            quiet = samples[-1][1] - samples[0][1] <= CLOCK_TICK_MS
            if covered and quiet and waited >= max(min_seconds, QUIET_SECONDS):
                return waited
            if waited > IDLE_TIMEOUT_SECONDS:
                raise TimeoutError(
                    f"the bot's CPU never went quiet within {IDLE_TIMEOUT_SECONDS} s"
                )
            await asyncio.sleep(CPU_POLL_SECONDS)

    async def busy_ms(self, cpu_before: float) -> float:
        """CPU spent since `cpu_before`, read once the bot is quiet, less its idle rate."""
        waited = await self.wait_until_quiet()
        idle_ms = self.figures.idle_cpu_ms_per_s / 1000 * waited
        return max(0.0, self.cpu_ms() - cpu_before - idle_ms)

    async def turn(self, event: str) -> int:
        """Send `event`, wait for the bot's next message; the nanoseconds in between."""
        sent_at = time.perf_counter_ns()
        await self.ws.send(event)
        try:
            return await asyncio.wait_for(self.sent_ns.get(), REPLY_TIMEOUT_SECONDS) - sent_at
        except asyncio.TimeoutError:
            check_alive(self.process)
            raise TimeoutError(f"no reply within {REPLY_TIMEOUT_SECONDS} s") from None

    def drain_sent(self) -> int:
        """Forget the messages queued so far; how many there were."""
        count, self.sent_ns = self.sent_ns.qsize(), asyncio.Queue()
        return count

    def charge_block(self, turns: int) -> None:
        """Charge the steady block begun at the mark with what the bot spent since (less
        idle) per turn, and mark the next one."""
        if self.block_mark is not None:
            cpu_then, then = self.block_mark
            idle_ms = self.figures.idle_cpu_ms_per_s * (time.monotonic() - then)
            spent_ms = self.cpu_ms() - cpu_then - idle_ms
            self.figures.steady_block_cpu_ms.append(max(0.0, spent_ms) / turns)
        self.block_mark = (self.cpu_ms(), time.monotonic())

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
    sender = {"user_id": user_id, "nickname": name}
    event: dict[str, Any] = {"time": int(time.time()), "self_id": SELF_ID, "font": 0,
                             "post_type": "message", "message_id": next(_message_ids),
                             "user_id": user_id, "sender": sender}  # fmt: skip
    if group_id is None:
        event.update(message_type="private", sub_type="friend", raw_message=line)
    else:
        if at_bot:
            segments.insert(0, {"type": "at", "data": {"qq": str(SELF_ID)}})
        sender.update(card=name, role="member")
        event.update(message_type="group", sub_type="normal", group_id=group_id,
                     anonymous=None, raw_message="")  # fmt: skip
    return json.dumps({**event, "message": segments}, ensure_ascii=False)


def addressed_turns(layout: Layout, rng: random.Random, count: int) -> list[str]:
    """`count` addressed turns: an @ in a group, or a private message."""
    groups = layout.group_ids()[:TURN_GROUPS]
    first_user = layout.personal_user_ids()[0]
    speakers = [(first_user + i, h.POOLS["name"][i]) for i in range(SPEAKER_COUNT)]
    events = []
    for _ in range(count):
        line = h.chat_line(rng, 10, 80)
        chat = rng.randrange(len(groups) + PRIVATE_CHATS)
        if chat < len(groups):
            user_id, name = rng.choice(speakers)
            events.append(message_event(user_id, name, " " + line, groups[chat], at_bot=True))
        else:  # one of the first PRIVATE_CHATS speakers, in private
            events.append(message_event(*speakers[chat - len(groups)], line))
    return events


def burst_messages(sizes: Sizes, rng: random.Random) -> list[str]:
    """The unaddressed burst in one group: each user sends a few lines."""
    users = [(FIRST_BURST_USER_ID + i, f"{rng.choice(h.POOLS['name'])}{i}")
             for i in range(sizes.burst_users)]  # fmt: skip
    senders = [users[i % len(users)] for i in range(sizes.burst)]
    rng.shuffle(senders)
    group_id = sizes.layout.group_ids()[0]
    return [message_event(u, name, h.chat_line(rng, 10, 80), group_id) for u, name in senders]


def child_environment(spec: BotSpec, work_dir: Path, llm: FakeOpenAI) -> dict[str, str]:
    """Ours without AIMEMORY_* or LLMCHAT_* keys, plus the bench's settings (PYTHONPATH: this
    tree, for bench.footprint_child and the plugin's code)."""
    own = ("AIMEMORY_", "LLMCHAT_")
    env = {key: value for key, value in os.environ.items() if not key.upper().startswith(own)}
    env.update(PYTHONPATH=str(ROOT), LOG_LEVEL="WARNING")
    for folder in ("data", "cache", "config"):
        env[f"LOCALSTORE_{folder.upper()}_DIR"] = str(work_dir / folder)
    if spec.kind == "plugin":
        env.update({key.upper(): str(value) for key, value in h.BENCH_SETTINGS.items()})
        env.update(AIMEMORY_API_BASE=llm.base_url, AIMEMORY_MAX_CONTEXT_TOKENS="8192",
                   AIMEMORY_DB_PATH=str(work_dir / "aimemory.db"))  # fmt: skip
    elif spec.kind == PEER:  # its documented settings, nested under `llmchat` (split on "__")
        preset = {"name": "fake", "api_base": llm.base_url, "api_key": h.API_KEY,
                  "model_name": "gpt-4o-mini"}  # fmt: skip
        env.update(LLMCHAT__API_PRESETS=json.dumps([preset]), LLMCHAT__DEFAULT_PRESET="fake",
                   LLMCHAT__RANDOM_TRIGGER_PROB="0", LLMCHAT__ENABLE_PRIVATE_CHAT="true",
                   LLMCHAT__PRIVATE_CHAT_PRESET="fake")  # fmt: skip
    return env


async def connect(port: int, process: subprocess.Popen[bytes]) -> ClientConnection:
    """Connect as OneBot v11 (reverse WebSocket), a try every CONNECT_RETRY_SECONDS."""
    headers = {"X-Self-ID": str(SELF_ID), "X-Client-Role": "Universal"}
    deadline = time.monotonic() + CONNECT_TIMEOUT_SECONDS
    while True:
        try:
            return await ws_connect(f"ws://127.0.0.1:{port}/onebot/v11/ws", open_timeout=10,
                                    additional_headers=headers, max_size=None, compression=None)  # fmt: skip
        except (OSError, InvalidHandshake, asyncio.TimeoutError):
            check_alive(process)
            if time.monotonic() > deadline:
                message = f"no OneBot connection within {CONNECT_TIMEOUT_SECONDS} s"
                raise TimeoutError(message) from None
            await asyncio.sleep(CONNECT_RETRY_SECONDS)


@contextlib.asynccontextmanager
async def running_bot(spec: BotSpec, llm: FakeOpenAI) -> AsyncIterator[Bot]:
    """The bot of `spec` in a child process on a copy of its database, connected; stopped
    (SIGTERM, SIGKILL if need be) at the end. A bot that exits or stalls ends the bench."""
    with tempfile.TemporaryDirectory(prefix="aimemory-footprint-") as folder:
        work_dir, log = Path(folder), Path(folder) / "bot.log"
        if spec.database is not None:  # a copy: starting on it may migrate it
            shutil.copyfile(spec.database, work_dir / "aimemory.db")
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = int(probe.getsockname()[1])
        command = [spec.python, "-m", "bench.footprint_child", spec.kind, str(port)]
        env = child_environment(spec, work_dir, llm)
        with log.open("wb") as output:
            started = time.perf_counter()
            process = await asyncio.to_thread(subprocess.Popen, command, cwd=work_dir, env=env,
                                              stdout=output, stderr=subprocess.STDOUT)  # fmt: skip
        try:
            bot = Bot(process, await connect(port, process), time.perf_counter() - started)
            try:
                yield bot
            finally:
                await bot.close()
        except (ChildExited, TimeoutError, ConnectionClosed) as problem:
            output_tail = log.read_text(errors="replace")[-3000:]
            message = f"{spec.label}: {problem}\n--- bot output ---\n{output_tail}"
            raise SystemExit(message) from problem
        finally:
            process.terminate()
            try:
                await asyncio.to_thread(process.wait, STOP_TIMEOUT_SECONDS)
            except subprocess.TimeoutExpired:
                process.kill()
                await asyncio.to_thread(process.wait)


async def measure_started_bot(bot: Bot, sizes: Sizes, llm: FakeOpenAI) -> None:
    """From the accepted connection on: settle, idle rate, the turns (each once the previous
    reply came back; the first one's CPU also alone, to show what loads on first use), the
    burst (all at once); then the events of the steady turns."""
    figures = bot.figures
    figures.rss_at_connection_mib = bot.rss_mib()
    await bot.wait_until_quiet(START_SETTLE_SECONDS)
    idle_started = bot.cpu_ms()
    await asyncio.sleep(IDLE_RATE_SECONDS)
    figures.idle_cpu_ms_per_s = (bot.cpu_ms() - idle_started) / IDLE_RATE_SECONDS
    figures.rss_after_start_mib = bot.rss_mib()
    rng = random.Random(16)
    turns = addressed_turns(sizes.layout, rng, sizes.turns)
    h.forget_requests(llm)
    bot.drain_sent()
    cpu_before = bot.cpu_ms()
    latencies = [await bot.turn(turns[0])]
    figures.first_turn_cpu_ms = bot.cpu_ms() - cpu_before
    latencies += [await bot.turn(event) for event in turns[1:]]
    total_ms = await bot.busy_ms(cpu_before)
    figures.cpu_per_turn_ms = total_ms / len(turns)
    later_ms = max(0.0, total_ms - figures.first_turn_cpu_ms)
    figures.cpu_per_later_turn_ms = later_ms / max(1, len(turns) - 1)
    figures.first_turn_latency_ms = h.ms(latencies[0])
    figures.latency_p50_ms = h.ms(h.percentile(latencies, 0.5))
    figures.latency_p99_ms = h.ms(h.percentile(latencies, 0.99))
    figures.turns_llm_requests = len(llm.chat_requests)
    h.forget_requests(llm)
    figures.rss_after_turns_mib = bot.rss_mib()
    burst = burst_messages(sizes, rng)
    bot.drain_sent()
    cpu_before = bot.cpu_ms()
    for event in burst:
        await bot.ws.send(event)
    figures.cpu_per_unaddressed_ms = await bot.busy_ms(cpu_before) / len(burst)
    figures.burst_replies = bot.drain_sent()
    figures.rss_after_burst_mib = bot.rss_mib()
    bot.steady_events = addressed_turns(sizes.layout, rng, sizes.steady_turns)


async def run_steady_turns(bots: list[Bot], sizes: Sizes) -> None:
    """The turns after the burst: each round every bot takes its next block, the order
    rotating, so a slower spell of this shared machine weighs on every bot alike. A block is
    charged until the bot's next block starts (deferred writes count); its last, until quiet."""
    per_block = sizes.steady_turns // sizes.steady_blocks
    for block in range(sizes.steady_blocks):
        for offset in range(len(bots)):
            bot = bots[(block + offset) % len(bots)]
            bot.charge_block(per_block)
            bot.drain_sent()
            for event in bot.steady_events[block * per_block : (block + 1) * per_block]:
                await bot.turn(event)
    for bot in bots:
        await bot.wait_until_quiet()
        bot.charge_block(per_block)
        bot.figures.cpu_per_steady_turn_ms = statistics.fmean(bot.figures.steady_block_cpu_ms)


async def measure_bots(
    specs: dict[str, BotSpec], sizes: Sizes, llm: FakeOpenAI
) -> dict[str, Figures]:
    """Each bot in its own process: start, settle, turns and burst one bot after the other,
    every bot kept running; then the steady turns of all of them side by side; then
    STARTUP_RUNS - 1 more starts of each (start-up: the median of all)."""
    bots: dict[str, Bot] = {}
    async with contextlib.AsyncExitStack() as running:
        for key, spec in specs.items():
            print(f"measuring {spec.label}…", flush=True)
            bots[key] = await running.enter_async_context(running_bot(spec, llm))
            await measure_started_bot(bots[key], sizes, llm)
        print(f"the steady turns of every bot, {sizes.steady_blocks} blocks each…", flush=True)
        await run_steady_turns(list(bots.values()), sizes)
    for key, spec in specs.items():
        startups = [(bots[key].startup_s, bots[key].startup_cpu_ms)]
        for _ in range(STARTUP_RUNS - 1):
            async with running_bot(spec, llm) as bot:
                startups.append((bot.startup_s, bot.startup_cpu_ms))
        bots[key].figures.startup_s = statistics.median(wall for wall, _ in startups)
        bots[key].figures.startup_cpu_ms = statistics.median(cpu for _, cpu in startups)
    return {key: bot.figures for key, bot in bots.items()}


def subtract_bare(results: dict[str, Figures]) -> None:
    """Each bot's CPU per turn (overall, per block) and per unaddressed message over bare's."""
    if (bare := results.get("bare")) is None:
        return
    for figures in results.values():
        pairs = zip(figures.steady_block_cpu_ms, bare.steady_block_cpu_ms, strict=True)
        differences = [mine - theirs for mine, theirs in pairs]
        figures.cpu_per_turn_over_bare_median_ms = statistics.median(differences)
        figures.cpu_per_turn_over_bare_range_ms = (min(differences), max(differences))
        steady, unaddressed = figures.cpu_per_steady_turn_ms, figures.cpu_per_unaddressed_ms
        figures.cpu_per_turn_over_bare_ms = steady - bare.cpu_per_steady_turn_ms
        figures.cpu_per_unaddressed_over_bare_ms = unaddressed - bare.cpu_per_unaddressed_ms


def print_table(results: dict[str, Figures], labels: dict[str, str], sizes: Sizes) -> None:
    """The figures of every bot side by side, the targets beside."""
    label_width, column_width = 40, 18
    header = "".join(f"{labels[key]:>{column_width}}" for key in results)
    print(f"\n{'':<{label_width}}{header}   target")
    for figure in (f for f in fields(Figures) if "row" in f.metadata):
        label, form, target = figure.metadata["row"]
        values = [getattr(figures, figure.name) for figures in results.values()]
        shown = [f"{v[0]:.2f}..{v[1]:.2f}" if form == "range" else form.format(v) for v in values]
        cells = "".join(f"{cell:>{column_width}}" for cell in shown)
        note = " (large DB)" if target == "startup_large_db_s" else ""
        goal = f"<= {TARGETS[target]:g}{note}" if target else ""
        print(f"{label:<{label_width}}{cells}   {goal}")
    print(f"({sizes.turns} addressed turns, {sizes.burst} unaddressed messages from "
          f"{sizes.burst_users} users; large DB {sizes.layout.memories} memories, "
          f"{sizes.layout.rows} chat-log rows; start-up figures the median of {STARTUP_RUNS} starts)")  # fmt: skip


def print_peer_ratio(results: dict[str, Figures], peer_python: str | None) -> float | None:
    """The lines comparing the peer's CPU per steady turn with the plugin's (on the empty
    database): overall, per block, over bare's; the overall ratio, None unless both ran."""
    plugin, peer = results.get("plugin"), results.get(PEER)
    if plugin is None or peer is None:
        why = "--only left it or the plugin out" if peer_python else "no --peer-python"
        print(f"CPU per turn: the peer ({PEER}) was not measured ({why})")
        return None

    def times(numerator: float, denominator: float) -> float:
        return numerator / denominator if denominator > 0 else math.inf

    ratio = times(peer.cpu_per_steady_turn_ms, plugin.cpu_per_steady_turn_ms)
    goal = TARGETS[PEER_TARGET]
    outcome = "met" if ratio >= goal else "NOT met"
    print(f"CPU per turn: {PEER} ÷ plugin = {ratio:.1f}× (target ≥ {goal:g}×): {outcome}")
    pairs = zip(peer.steady_block_cpu_ms, plugin.steady_block_cpu_ms, strict=True)
    blocks = [times(theirs, mine) for theirs, mine in pairs]
    print(f"  per block, beside the plugin's of the same round: median {statistics.median(blocks):.1f}×, "
          f"range {min(blocks):.1f}×..{max(blocks):.1f}×")  # fmt: skip
    if "bare" in results and plugin.cpu_per_turn_over_bare_ms > 0:
        over_bare = peer.cpu_per_turn_over_bare_ms / plugin.cpu_per_turn_over_bare_ms
        print(f"  over the bare NoneBot: ({PEER} − bare) ÷ (plugin − bare) = {over_bare:.1f}×")
    return ratio


def print_verdicts(results: dict[str, Figures], ratio: float | None, quick: bool) -> None:
    """A line per target, then the bench's verdict line."""
    plugin = results["plugin"]
    values = {"rss_after_start_mib": plugin.rss_after_start_mib,
              "rss_after_burst_mib": plugin.rss_after_burst_mib,
              "cpu_per_unaddressed_ms": plugin.cpu_per_unaddressed_over_bare_ms,
              "startup_large_db_s": results["plugin_large_db"].startup_s}  # fmt: skip
    met = {target: value <= TARGETS[target] for target, value in values.items()}
    if ratio is not None:
        met[PEER_TARGET] = ratio >= TARGETS[PEER_TARGET]
    for target, ok in met.items():
        goal = f">= {TARGETS[target]:g}x" if target == PEER_TARGET else f"<= {TARGETS[target]:g}"
        print(f"target {target} {goal}: {'met' if ok else 'NOT met'}")
    peer_note = "" if ratio is not None else f"; {PEER} not measured"
    h.verdict(f"issue #16 footprint{peer_note}", all(met.values()), quick=quick)


def options(parser: argparse.ArgumentParser) -> None:
    """--profile, --only, --peer-python."""
    parser.add_argument("--profile", metavar="PREFIX", help="profile each bot under cProfile "
                        "(figures not comparable), stats to PREFIX.<kind>.<pid>.prof")  # fmt: skip
    parser.add_argument("--only", choices=BOT_KEYS, action="append",
                        help="measure only this bot (repeatable)")  # fmt: skip
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


async def run(bench: h.Bench) -> None:
    """Build or reuse the large database, measure the bots (the peer with --peer-python) and
    print the report."""
    peer_python, only = checked_options(bench.args), bench.args.only or BOT_KEYS
    task, loop = asyncio.current_task(), asyncio.get_running_loop()
    if task is not None:  # SIGTERM or SIGHUP as Ctrl-C, so that the bots are stopped
        for stop_signal in (signal.SIGTERM, signal.SIGHUP):
            loop.add_signal_handler(stop_signal, task.cancel)
    sizes = QUICK if bench.quick else FULL
    specs = {
        "plugin": BotSpec("plugin", "plugin"),
        "plugin_large_db": BotSpec("plugin, large DB", "plugin", cached_database(sizes.layout)),
        "bare": BotSpec("bare NoneBot", "bare"),
    }
    if peer_python:
        specs[PEER] = BotSpec(PEER, PEER, python=peer_python)
    specs = {key: spec for key, spec in specs.items() if key in only}
    with h.fake_llm(lambda body: text("收到～")) as llm:
        results = await measure_bots(specs, sizes, llm)
    subtract_bare(results)
    print_table(results, {key: spec.label for key, spec in specs.items()}, sizes)
    ratio = print_peer_ratio(results, peer_python)
    if any(key not in results for key in BOT_KEYS if key != PEER):
        print("verdicts need every bot (no --only)")
    else:
        print_verdicts(results, ratio, bench.quick)


if __name__ == "__main__":
    h.main(__doc__, run, options, load_plugin=False)
