"""Footprint of real bot processes (bench/footprint_child.py; this process is their OneBot
side, bench/footprint_bots.py): the plugin beside a bare NoneBot and, with --peer-python,
llmchat; targets in bench/README.md. CPU is utime+stime until the bot is quiet, less its idle
rate."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import itertools
import json
import math
import os
import random
import statistics
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import generated_chat as gen
from bench import harness as h
from bench.footprint_bots import (
    PEER,
    SELF_ID,
    Bot,
    BotSpec,
    Figures,
    ModelServer,
    running_bot,
)
from bench.footprint_db import Layout, build_database
from bench.footprint_tls import tls_front
from tests.fakes.openai_server import FakeOpenAI, text

START_SETTLE_SECONDS, IDLE_RATE_SECONDS = 2.0, 2.0
STARTUP_RUNS = 3
TURN_GROUPS, PRIVATE_CHATS, SPEAKER_COUNT = 4, 3, 12
FIRST_BURST_USER_ID = 3_000_000
RSS_START_MIB, RSS_BURST_MIB, OVER_BARE_MS, STARTUP_S = 100.0, 130.0, 0.5, 1.5
PEER_RATIO = 12.0
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
    speakers = [(first_user + i, gen.POOLS["name"][i]) for i in range(SPEAKER_COUNT)]
    events = []
    for _ in range(count):
        line = gen.chat_line(rng, 10, 80)
        chat = rng.randrange(len(groups) + PRIVATE_CHATS)
        if chat < len(groups):
            user_id, name = rng.choice(speakers)
            events.append(message_event(user_id, name, " " + line, groups[chat], at_bot=True))
        else:  # one of the first PRIVATE_CHATS speakers, in private
            events.append(message_event(*speakers[chat - len(groups)], line))
    return events


def burst_messages(sizes: Sizes, rng: random.Random) -> list[str]:
    """The unaddressed burst in one group: each user sends a few lines."""
    names = [f"{rng.choice(gen.POOLS['name'])}{i}" for i in range(sizes.burst_users)]
    users = [(FIRST_BURST_USER_ID + i, name) for i, name in enumerate(names)]
    senders = [users[i % len(users)] for i in range(sizes.burst)]
    rng.shuffle(senders)
    group_id = sizes.layout.group_ids()[0]
    return [message_event(u, name, gen.chat_line(rng, 10, 80), group_id) for u, name in senders]


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


@contextlib.asynccontextmanager
async def model_server(bench: h.Bench) -> AsyncIterator[tuple[FakeOpenAI, ModelServer]]:
    """The fake model, over plain http or (--tls) behind TLS and HTTP/2."""
    with h.fake_llm(lambda body: text("收到～")) as llm:
        if not bench.args.tls:
            yield llm, ModelServer(llm.base_url)
            return
        async with tls_front(llm, bench.work_dir) as front:
            yield llm, front


async def measure_bots(
    bench: h.Bench, specs: dict[str, BotSpec], sizes: Sizes, large_db: Path
) -> tuple[dict[str, Figures], float]:
    """Start each bot and measure it, the others kept running; with the peer, the steady turns
    of all of them; then STARTUP_RUNS starts on the large database (the median start-up)."""
    bots: dict[str, Bot] = {}
    async with model_server(bench) as (llm, model):
        async with contextlib.AsyncExitStack() as running:
            for key, spec in specs.items():
                print(f"measuring {spec.label}…", flush=True)
                bots[key] = await running.enter_async_context(running_bot(spec, model))
                await measure_started_bot(bots[key], sizes, llm)
            if PEER in bots:
                print(f"the steady turns, {sizes.steady_blocks} blocks each…", flush=True)
                await run_steady_turns(list(bots.values()), sizes)
        large = BotSpec("plugin, large DB", "plugin", large_db)
        startups = []
        for _ in range(STARTUP_RUNS):
            async with running_bot(large, model) as bot:
                startups.append(bot.startup_s)
    return {specs[key].label: bot.figures for key, bot in bots.items()}, statistics.median(startups)


def print_report(figures: dict[str, Figures], startup_s: float, sizes: Sizes, quick: bool) -> None:
    """Each bot's figures, a line per target, then the bench's verdict line."""
    print(f"{sizes.turns} addressed turns, {sizes.burst} messages from {sizes.burst_users} users")
    if importlib.util.find_spec("trio") is not None:  # nothing we install requires it
        print("note: trio is installed here, and httpcore imports it when it is (~3.5 MiB)")
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
        print_over_bare(plugin, peer, figures["bare NoneBot"])
        checks.append((f"CPU per turn, {PEER} ÷ plugin", ratio, ">=", PEER_RATIO, "x"))
    met = []
    for label, value, sign, goal, unit in checks:
        met.append(value <= goal if sign == "<=" else value >= goal)
        print(
            f"target {label} {value:.3g} {sign} {goal:g} {unit}: {'met' if met[-1] else 'NOT met'}"
        )
    note = "" if peer is not None else f"; {PEER} not measured (no --peer-python)"
    h.verdict(f"issue #16 footprint{note}", all(met), quick=quick)


def print_over_bare(plugin: Figures, peer: Figures, bare: Figures) -> None:
    """Each bot's CPU per turn beyond what NoneBot and one send cost (the bare bot's)."""
    own = [f.cpu_per_steady_turn_ms - bare.cpu_per_steady_turn_ms for f in (plugin, peer)]
    print(
        f"CPU per turn beyond the bare NoneBot's {bare.cpu_per_steady_turn_ms:.2f} ms: plugin "
        f"{own[0]:.2f} ms, {PEER} {own[1]:.2f} ms ({own[1] / max(own[0], 1e-9):.2f}x)"
    )


async def run(bench: h.Bench) -> None:
    """Measure the bots (the peer with --peer-python) and print the report."""
    specs = {"plugin": BotSpec("plugin", "plugin"), "bare": BotSpec("bare NoneBot", "bare")}
    if bench.args.peer_python:
        specs[PEER] = BotSpec(PEER, PEER, python=bench.args.peer_python)
    sizes = QUICK if bench.quick else FULL
    large_db = bench.work_dir / "large" / "aimemory.db"  # the runtime adds a folder beside
    await build_database(sizes.layout, large_db)
    figures, startup_s = await measure_bots(bench, specs, sizes, large_db)
    print_report(figures, startup_s, sizes, bench.quick)


def executable(path: str) -> str:
    """`path` made absolute, symlinks kept (a venv's Python is one): the child starts elsewhere."""
    if not os.access(path, os.X_OK):
        raise argparse.ArgumentTypeError(f"{path}: not an executable")
    return os.path.abspath(path)


def options(parser: argparse.ArgumentParser) -> None:
    """--peer-python, --tls."""
    help = f"measure nonebot-plugin-{PEER} too, run by PATH: the Python of a venv with it"
    parser.add_argument("--peer-python", metavar="PATH", type=executable, help=help)
    help = "reach the fake model over TLS and HTTP/2, as providers are (default: plain http)"
    parser.add_argument("--tls", action="store_true", help=help)


if __name__ == "__main__":
    h.main(__doc__, run, options, load_plugin=False)
