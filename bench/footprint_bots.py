"""A bot process of bench/footprint.py and its OneBot side: the child started on a copy of its
database, connected over a reverse WebSocket whose every API call is answered here, its CPU
read from /proc and the figures measured of it."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import math
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from websockets.asyncio.client import ClientConnection
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake

from bench import harness as h
from tests.fakes.bot_process import child_environment, log_tail

FOLDERS = ("data", "cache", "config")
SELF_ID = 10000
SEND_ACTIONS = frozenset({"send_msg", "send_group_msg", "send_private_msg"})
CONNECT_RETRY_SECONDS, CONNECT_TIMEOUT_SECONDS = 0.02, 60.0
REPLY_TIMEOUT_SECONDS, IDLE_TIMEOUT_SECONDS, STOP_TIMEOUT_SECONDS = 30.0, 120.0, 15.0
# Quiet: CPU up by at most one tick in this long (longer than the chat log's 1 s flush).
QUIET_SECONDS = 1.5
PEER = "llmchat"


@dataclass(frozen=True)
class ModelServer:
    """Where the bots reach the fake model: its API base, and the CA file their TLS trusts
    (None for plain http)."""

    base_url: str
    ca_file: Path | None = None


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


def bot_environment(spec: BotSpec, work_dir: Path, model: ModelServer) -> dict[str, str]:
    """A test bot's environment (tests/fakes/bot_process.py) without LLMCHAT_* keys either,
    plus the bench's settings for the bot; over TLS, `model`'s CA file as SSL_CERT_FILE (read
    by both bots' HTTP clients, as a system's trust store would be)."""
    folders = {f"LOCALSTORE_{name.upper()}_DIR": str(work_dir / name) for name in FOLDERS}
    env = child_environment(LOG_LEVEL="WARNING", **folders)
    env = {key: value for key, value in env.items() if not key.upper().startswith("LLMCHAT_")}
    if model.ca_file is not None:
        env.update(SSL_CERT_FILE=str(model.ca_file))
    if spec.kind == "plugin":
        env.update({key.upper(): str(value) for key, value in h.BENCH_SETTINGS.items()})
        env.update(AIMEMORY_API_BASE=model.base_url, AIMEMORY_MAX_CONTEXT_TOKENS="8192")
        env.update(AIMEMORY_DB_PATH=str(work_dir / "aimemory.db"))
    elif spec.kind == PEER:  # its documented settings, nested under `llmchat` (split on "__")
        preset = {"name": "fake", "api_base": model.base_url, "api_key": h.API_KEY}
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
async def running_bot(spec: BotSpec, model: ModelServer) -> AsyncIterator[Bot]:
    """The bot of `spec` in a child process on a copy of its database, connected, then stopped;
    one that exits or stalls ends the bench."""
    with tempfile.TemporaryDirectory(prefix="aimemory-footprint-") as folder:
        work_dir, log, port = Path(folder), Path(folder) / "bot.log", h.free_port()
        if spec.database is not None:  # a copy: starting on it may migrate it
            shutil.copyfile(spec.database, work_dir / "aimemory.db")
        command = [spec.python, "-m", "bench.footprint_child", spec.kind, str(port)]
        env = bot_environment(spec, work_dir, model)
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
