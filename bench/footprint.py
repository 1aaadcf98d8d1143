"""Footprint of real bot processes (bench/footprint_child.py; this process is their OneBot
side): the plugin beside a bare NoneBot and, with --peer-python, llmchat; targets in
bench/README.md. CPU is utime+stime until the bot is quiet, less its idle rate."""

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
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from websockets.asyncio.client import ClientConnection
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake

from bench import harness as h
from bench.footprint_db import Layout, build_database
from tests.fakes.bot_process import child_environment, log_tail
from tests.fakes.openai_server import FakeOpenAI, text

FOLDERS = ("data", "cache", "config")
SELF_ID = 10000
SEND_ACTIONS = frozenset({"send_msg", "send_group_msg", "send_private_msg"})
CONNECT_RETRY_SECONDS, CONNECT_TIMEOUT_SECONDS = 0.02, 60.0
REPLY_TIMEOUT_SECONDS, IDLE_TIMEOUT_SECONDS, STOP_TIMEOUT_SECONDS = 30.0, 120.0, 15.0
START_SETTLE_SECONDS, IDLE_RATE_SECONDS = 2.0, 2.0
# Quiet: CPU up by at most one tick in this long (longer than the chat log's 1 s flush).
QUIET_SECONDS = 1.5
STARTUP_RUNS = 3
TURN_GROUPS, PRIVATE_CHATS, SPEAKER_COUNT = 4, 3, 12
FIRST_BURST_USER_ID = 3_000_000
PEER = "llmchat"
RSS_START_MIB, RSS_BURST_MIB, OVER_BARE_MS, STARTUP_S = 100.0, 130.0, 0.5, 1.5
PEER_RATIO = 15.0
_message_ids = itertools.count(10_000)


@dataclass(frozen=True)
class Sizes:
    """How much each bot is given (many steady turns: a few ~75 ms full collections)."""

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


@dataclass
class Figures:
    """What was measured of one bot (the steady turns' CPU, NaN, of a bot not in them)."""

    rss_after_start_mib: float = 0.0
    rss_after_burst_mib: float = 0.0
    cpu_per_unaddressed_ms: float = 0.0
    cpu_per_steady_turn_ms: float = math.nan


def check_alive(process: subprocess.Popen[bytes]) -> None:
    """Raise if the bot has exited."""
    if process.poll() is not None:
        raise ChildProcessError(f"the bot exited with code {process.returncode}")


class Bot:
    """A bot's process, the OneBot side of its connection (answering every call) and figures."""

    def __init__(self, process: subprocess.Popen[bytes], ws: ClientConnection, startup_s: float):
        self.process, self.ws, self.startup_s = process, ws, startup_s
        self.figures = Figures()
        self.idle_ms_per_s = 0.0
        self.steady_events: list[str] = []
        self.steady_cpu_ms = 0.0
        self.block_mark: tuple[float, float] | None = None  # (CPU ms, monotonic s)
        self.sent: asyncio.Queue[None] = asyncio.Queue()
        self._reader = asyncio.create_task(self._answer_calls())

    async def _answer_calls(self) -> None:
        message_ids = itertools.count(1)
        with contextlib.suppress(ConnectionClosed):
            async for raw in self.ws:
                frame = json.loads(raw)
                if "action" not in frame:
                    continue
                sent = frame["action"] in SEND_ACTIONS
                data = {"message_id": next(message_ids)} if sent else {}
                answer = {"status": "ok", "retcode": 0, "data": data, "echo": frame.get("echo")}
                await self.ws.send(json.dumps(answer))
                if sent:
                    self.sent.put_nowait(None)

    def cpu_ms(self) -> float:
        """CPU the bot has used, in ms."""
        return h.cpu_ms(self.process.pid)

    async def wait_until_quiet(self, min_seconds: float = 0.0) -> float:
        """Wait until the CPU rose by at most a tick in QUIET_SECONDS; the seconds waited."""
        started = time.monotonic()
        await asyncio.sleep(min_seconds)
        cpu = self.cpu_ms()
        while True:
            await asyncio.sleep(QUIET_SECONDS)
            check_alive(self.process)
            cpu, cpu_before = self.cpu_ms(), cpu
            if cpu - cpu_before <= h.CLOCK_TICK_MS:
                return time.monotonic() - started
            if time.monotonic() - started > IDLE_TIMEOUT_SECONDS:
                raise TimeoutError(f"the bot's CPU never went quiet in {IDLE_TIMEOUT_SECONDS} s")

    async def busy_ms(self, cpu_before: float) -> float:
        """CPU spent since `cpu_before`, read once the bot is quiet, less its idle rate."""
        waited = await self.wait_until_quiet()
        return max(0.0, self.cpu_ms() - cpu_before - self.idle_ms_per_s / 1000 * waited)

    async def turn(self, event: str) -> None:
        """Send `event` and wait for the bot's next message."""
        await self.ws.send(event)
        try:
            await asyncio.wait_for(self.sent.get(), REPLY_TIMEOUT_SECONDS)
        except asyncio.TimeoutError:
            check_alive(self.process)
            raise TimeoutError(f"no reply within {REPLY_TIMEOUT_SECONDS} s") from None

    def charge_block(self) -> None:
        """Charge the steady block begun at the mark with the CPU since (less idle); mark anew."""
        if self.block_mark is not None:
            cpu_then, then = self.block_mark
            idle_ms = self.idle_ms_per_s * (time.monotonic() - then)
            self.steady_cpu_ms += max(0.0, self.cpu_ms() - cpu_then - idle_ms)
        self.block_mark = (self.cpu_ms(), time.monotonic())

    async def close(self) -> None:
        """Close the connection and stop answering."""
        await self.ws.close()
        self._reader.cancel()
        await asyncio.gather(self._reader, return_exceptions=True)


def message_event(
    user_id: int, name: str, line: str, group_id: int | None = None, *, at_bot: bool = False
) -> str:
    """A OneBot v11 message event as JSON: in group `group_id` (@ the bot first), or private."""
    segments = [{"type": "text", "data": {"text": line}}]
    sender = {"user_id": user_id, "nickname": name}
    event: dict[str, Any] = {"time": int(time.time()), "self_id": SELF_ID, "font": 0}
    event.update(post_type="message", message_id=next(_message_ids), user_id=user_id)
    if group_id is None:
        event.update(message_type="private", sub_type="friend", raw_message=line)
    else:
        if at_bot:
            segments.insert(0, {"type": "at", "data": {"qq": str(SELF_ID)}})
        sender.update(card=name, role="member")
        event.update(message_type="group", sub_type="normal", group_id=group_id)
        event.update(anonymous=None, raw_message="")
    return json.dumps({**event, "sender": sender, "message": segments}, ensure_ascii=False)


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
    names = [f"{rng.choice(h.POOLS['name'])}{i}" for i in range(sizes.burst_users)]
    users = [(FIRST_BURST_USER_ID + i, name) for i, name in enumerate(names)]
    senders = [users[i % len(users)] for i in range(sizes.burst)]
    rng.shuffle(senders)
    group_id = sizes.layout.group_ids()[0]
    return [message_event(u, name, h.chat_line(rng, 10, 80), group_id) for u, name in senders]


def bot_environment(spec: BotSpec, work_dir: Path, llm: FakeOpenAI) -> dict[str, str]:
    """A test bot's environment (tests/fakes/bot_process.py) without LLMCHAT_* keys either,
    plus the bench's settings for the bot."""
    folders = {f"LOCALSTORE_{name.upper()}_DIR": str(work_dir / name) for name in FOLDERS}
    env = child_environment(LOG_LEVEL="WARNING", **folders)
    env = {key: value for key, value in env.items() if not key.upper().startswith("LLMCHAT_")}
    if spec.kind == "plugin":
        env.update({key.upper(): str(value) for key, value in h.BENCH_SETTINGS.items()})
        env.update(AIMEMORY_API_BASE=llm.base_url, AIMEMORY_MAX_CONTEXT_TOKENS="8192")
        env.update(AIMEMORY_DB_PATH=str(work_dir / "aimemory.db"))
    elif spec.kind == PEER:  # its documented settings, nested under `llmchat` (split on "__")
        preset = {"name": "fake", "api_base": llm.base_url, "api_key": h.API_KEY}
        env.update(LLMCHAT__API_PRESETS=json.dumps([{**preset, "model_name": "gpt-4o-mini"}]))
        env.update(LLMCHAT__DEFAULT_PRESET="fake", LLMCHAT__RANDOM_TRIGGER_PROB="0")
        env.update(LLMCHAT__ENABLE_PRIVATE_CHAT="true", LLMCHAT__PRIVATE_CHAT_PRESET="fake")
    return env


async def connect(port: int, process: subprocess.Popen[bytes]) -> ClientConnection:
    """Connect as OneBot v11 (reverse WebSocket), a try every CONNECT_RETRY_SECONDS."""
    url, headers = f"ws://127.0.0.1:{port}/onebot/v11/ws", {"X-Self-ID": str(SELF_ID)}
    headers["X-Client-Role"] = "Universal"
    deadline = time.monotonic() + CONNECT_TIMEOUT_SECONDS
    while True:
        try:
            return await ws_connect(
                url, open_timeout=10, additional_headers=headers, max_size=None, compression=None
            )
        except (OSError, InvalidHandshake, asyncio.TimeoutError):
            check_alive(process)
            if time.monotonic() > deadline:
                message = f"no OneBot connection within {CONNECT_TIMEOUT_SECONDS} s"
                raise TimeoutError(message) from None
            await asyncio.sleep(CONNECT_RETRY_SECONDS)


@contextlib.asynccontextmanager
async def running_bot(spec: BotSpec, llm: FakeOpenAI) -> AsyncIterator[Bot]:
    """The bot of `spec` in a child process on a copy of its database, connected, then stopped;
    one that exits or stalls ends the bench."""
    with tempfile.TemporaryDirectory(prefix="aimemory-footprint-") as folder:
        work_dir, log, port = Path(folder), Path(folder) / "bot.log", h.free_port()
        if spec.database is not None:  # a copy: starting on it may migrate it
            shutil.copyfile(spec.database, work_dir / "aimemory.db")
        command = [spec.python, "-m", "bench.footprint_child", spec.kind, str(port)]
        env = bot_environment(spec, work_dir, llm)
        with log.open("wb") as output:
            started = time.perf_counter()
            process = await asyncio.to_thread(
                subprocess.Popen, command, cwd=work_dir, env=env, stdout=output, stderr=output
            )
        try:
            bot = Bot(process, await connect(port, process), time.perf_counter() - started)
            try:
                yield bot
            finally:
                await bot.close()
        except (ChildProcessError, TimeoutError, ConnectionClosed) as problem:
            message = f"{spec.label}: {problem}\n--- bot output ---\n{log_tail(log)}"
            raise SystemExit(message) from problem
        finally:
            process.terminate()
            try:
                await asyncio.to_thread(process.wait, STOP_TIMEOUT_SECONDS)
            except subprocess.TimeoutExpired:
                process.kill()
                await asyncio.to_thread(process.wait)


async def measure_started_bot(bot: Bot, sizes: Sizes, llm: FakeOpenAI) -> None:
    """Settle and idle rate, RSS; the turns one by one, then the burst all at once: CPU, RSS."""
    await bot.wait_until_quiet(START_SETTLE_SECONDS)
    idle_started = bot.cpu_ms()
    await asyncio.sleep(IDLE_RATE_SECONDS)
    bot.idle_ms_per_s = (bot.cpu_ms() - idle_started) / IDLE_RATE_SECONDS
    bot.figures.rss_after_start_mib = h.rss_kib(bot.process.pid) / 1024
    rng = random.Random(16)
    for event in addressed_turns(sizes.layout, rng, sizes.turns):
        await bot.turn(event)
    await bot.wait_until_quiet()
    llm.requests.clear()
    burst = burst_messages(sizes, rng)
    cpu_before = bot.cpu_ms()
    for event in burst:
        await bot.ws.send(event)
    bot.figures.cpu_per_unaddressed_ms = await bot.busy_ms(cpu_before) / len(burst)
    bot.figures.rss_after_burst_mib = h.rss_kib(bot.process.pid) / 1024
    bot.steady_events = addressed_turns(sizes.layout, rng, sizes.steady_turns)


async def run_steady_turns(bots: list[Bot], sizes: Sizes) -> None:
    """Each round every bot takes its next block, the order rotating (a slow spell of the
    machine weighs on all alike); a block is charged until the bot's next one starts."""
    per_block = sizes.steady_turns // sizes.steady_blocks
    for block in range(sizes.steady_blocks):
        for offset in range(len(bots)):
            bot = bots[(block + offset) % len(bots)]
            bot.charge_block()
            bot.sent = asyncio.Queue()
            for event in bot.steady_events[block * per_block : (block + 1) * per_block]:
                await bot.turn(event)
    for bot in bots:
        await bot.wait_until_quiet()
        bot.charge_block()
        bot.figures.cpu_per_steady_turn_ms = bot.steady_cpu_ms / (per_block * sizes.steady_blocks)


async def measure_bots(
    specs: dict[str, BotSpec], sizes: Sizes, large_db: Path
) -> tuple[dict[str, Figures], float]:
    """Start each bot and measure it, the others kept running; the steady turns of plugin and
    peer; then STARTUP_RUNS starts on the large database (the median start-up)."""
    bots: dict[str, Bot] = {}
    with h.fake_llm(lambda body: text("收到～")) as llm:
        async with contextlib.AsyncExitStack() as running:
            for key, spec in specs.items():
                print(f"measuring {spec.label}…", flush=True)
                bots[key] = await running.enter_async_context(running_bot(spec, llm))
                await measure_started_bot(bots[key], sizes, llm)
            if PEER in bots:
                print(f"the steady turns, {sizes.steady_blocks} blocks each…", flush=True)
                await run_steady_turns([bots["plugin"], bots[PEER]], sizes)
        large = BotSpec("plugin, large DB", "plugin", large_db)
        startups = []
        for _ in range(STARTUP_RUNS):
            async with running_bot(large, llm) as bot:
                startups.append(bot.startup_s)
    return {specs[key].label: bot.figures for key, bot in bots.items()}, statistics.median(startups)


def print_report(figures: dict[str, Figures], startup_s: float, sizes: Sizes, quick: bool) -> None:
    """Each bot's figures, a line per target, then the bench's verdict line."""
    print(f"{sizes.turns} addressed turns, {sizes.burst} messages from {sizes.burst_users} users")
    for label, f in figures.items():
        steady = f.cpu_per_steady_turn_ms
        print(
            f"{label}: RSS after start {f.rss_after_start_mib:.1f} MiB, after the burst "
            f"{f.rss_after_burst_mib:.1f} MiB; CPU per unaddressed message "
            f"{f.cpu_per_unaddressed_ms:.3f} ms"
            + ("" if math.isnan(steady) else f"; per turn after the burst {steady:.2f} ms")
        )
    layout = sizes.layout
    print(
        f"start-up on a database of {layout.memories} memories and {layout.rows} chat-log rows "
        f"(process start -> connection): {startup_s:.2f} s, the median of {STARTUP_RUNS}"
    )
    plugin, peer = figures["plugin"], figures.get(PEER)
    over_bare = plugin.cpu_per_unaddressed_ms - figures["bare NoneBot"].cpu_per_unaddressed_ms
    checks = [
        ("RSS after start", plugin.rss_after_start_mib, "<=", RSS_START_MIB, "MiB"),
        ("RSS after the burst", plugin.rss_after_burst_mib, "<=", RSS_BURST_MIB, "MiB"),
        ("CPU per unaddressed message over bare", over_bare, "<=", OVER_BARE_MS, "ms"),
        ("start-up on the large DB", startup_s, "<=", STARTUP_S, "s"),
    ]
    if peer is not None:
        ratio = peer.cpu_per_steady_turn_ms / max(plugin.cpu_per_steady_turn_ms, 1e-9)
        checks.append((f"CPU per turn, {PEER} ÷ plugin", ratio, ">=", PEER_RATIO, "x"))
    met = []
    for label, value, sign, goal, unit in checks:
        met.append(value <= goal if sign == "<=" else value >= goal)
        print(
            f"target {label} {value:.3g} {sign} {goal:g} {unit}: {'met' if met[-1] else 'NOT met'}"
        )
    note = "" if peer is not None else f"; {PEER} not measured (no --peer-python)"
    h.verdict(f"issue #16 footprint{note}", all(met), quick=quick)


async def run(bench: h.Bench) -> None:
    """Measure the bots (the peer with --peer-python) and print the report."""
    specs = {"plugin": BotSpec("plugin", "plugin"), "bare": BotSpec("bare NoneBot", "bare")}
    if bench.args.peer_python:
        specs[PEER] = BotSpec(PEER, PEER, python=bench.args.peer_python)
    sizes = QUICK if bench.quick else FULL
    large_db = bench.work_dir / "large" / "aimemory.db"  # the runtime adds a folder beside
    await build_database(sizes.layout, large_db)
    figures, startup_s = await measure_bots(specs, sizes, large_db)
    print_report(figures, startup_s, sizes, bench.quick)


def executable(path: str) -> str:
    """`path` made absolute, symlinks kept (a venv's Python is one): the child starts elsewhere."""
    if not os.access(path, os.X_OK):
        raise argparse.ArgumentTypeError(f"{path}: not an executable")
    return os.path.abspath(path)


def options(parser: argparse.ArgumentParser) -> None:
    """--peer-python."""
    help = f"measure nonebot-plugin-{PEER} too, run by PATH: the Python of a venv with it"
    parser.add_argument("--peer-python", metavar="PATH", type=executable, help=help)


if __name__ == "__main__":
    h.main(__doc__, run, options, load_plugin=False)
