"""The one way the tests start a real bot process: the bundled `python bot.py` (or a script
that loads the plugin as it does, or the migration tool) in a child Python, run to its end
(`run_bot`), or kept running with a OneBot client on its real reverse WebSocket
(`bot_process`: killed with SIGKILL, restarted). Each runs with the repository on its path
and without the developer's own AIMEMORY_* settings."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from websockets.asyncio.client import ClientConnection
from websockets.asyncio.client import connect as ws_connect

from .openai_server import FakeOpenAI

ROOT = Path(__file__).resolve().parents[2]
SELF_ID = 10000
ACCESS_TOKEN = "tk"
CONNECT_TIMEOUT_SECONDS = 30.0
SEND_TIMEOUT_SECONDS = 15.0
SEND_ACTIONS = ("send_msg", "send_group_msg", "send_private_msg")


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def environment_without_aimemory_settings() -> dict[str, str]:
    """The test process's environment without the developer's own AIMEMORY_* settings."""
    return {k: v for k, v in os.environ.items() if not k.upper().startswith("AIMEMORY_")}


def child_environment(**settings: str | None) -> dict[str, str]:
    """The environment of a child bot: this process's without its AIMEMORY_* settings, the
    repository on PYTHONPATH, then `settings` (one given None is removed)."""
    environment = {**environment_without_aimemory_settings(), "PYTHONPATH": str(ROOT)}
    for name, value in settings.items():
        if value is None:
            environment.pop(name, None)
        else:
            environment[name] = value
    return environment


def run_bot(
    args: list[str], cwd: Path, *, timeout_seconds: float = 60.0, **settings: str | None
) -> subprocess.CompletedProcess[str]:
    """`python ARGS` in `cwd` (which holds its `.env`), run to its end: its exit code and
    output, captured as text."""
    return subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        env=child_environment(**settings),
        capture_output=True,
        text=True,
        timeout=timeout_seconds,
        check=False,
    )


def private_event(message_id: int, user_id: int, text: str) -> str:
    """A friend's private message as the JSON a OneBot v11 implementation pushes."""
    return json.dumps(
        {
            "time": int(time.time()),
            "self_id": SELF_ID,
            "post_type": "message",
            "message_type": "private",
            "sub_type": "friend",
            "message_id": message_id,
            "user_id": user_id,
            "message": [{"type": "text", "data": {"text": text}}],
            "raw_message": text,
            "font": 0,
            "sender": {"user_id": user_id, "nickname": "小明"},
        }
    )


def group_event(
    message_id: int,
    segments: list[dict[str, Any]],
    *,
    self_id: int = SELF_ID,
    sent_at: int | None = None,
) -> str:
    """A member's message in group 777 as the JSON a OneBot v11 implementation pushes to
    account `self_id` (sent now, unless `sent_at`)."""
    return json.dumps(
        {
            "time": int(time.time()) if sent_at is None else sent_at,
            "self_id": self_id,
            "post_type": "message",
            "message_type": "group",
            "sub_type": "normal",
            "message_id": message_id,
            "group_id": 777,
            "user_id": 2001,
            "anonymous": None,
            "message": segments,
            "raw_message": "",
            "font": 0,
            "sender": {"user_id": 2001, "nickname": "小明", "card": "", "role": "member"},
        }
    )


@dataclass
class BotProcess:
    """A running `bot.py` and the OneBot connection to it."""

    process: asyncio.subprocess.Process
    ws: ClientConnection
    log_path: Path
    port: int

    async def next_send(self, *, answer: bool = False) -> dict[str, Any]:
        """Answer the bot's API calls until it asks to send a message; that call's params,
        returned the moment it arrives (answered as sent only with `answer`)."""
        while True:
            data = json.loads(await asyncio.wait_for(self.ws.recv(), SEND_TIMEOUT_SECONDS))
            if "action" not in data:
                continue
            sent = data["action"] in SEND_ACTIONS
            if sent and not answer:
                return data["params"]
            result = {"message_id": 555} if sent else {}
            reply = {"status": "ok", "retcode": 0, "data": result, "echo": data.get("echo")}
            await self.ws.send(json.dumps(reply))
            if sent:
                return data["params"]

    async def stop(self) -> None:
        """Disconnect, then SIGTERM, as a service manager stops a bot: shutdown hooks run."""
        await self.ws.close()
        self.process.terminate()
        await asyncio.wait_for(self.process.wait(), 15)

    async def kill(self) -> None:
        """SIGKILL: no shutdown hook runs, nothing is flushed."""
        self.process.kill()
        await asyncio.wait_for(self.process.wait(), 15)

    async def sends_within(
        self, seconds: float, *, expected: int | None = None
    ) -> list[dict[str, Any]]:
        """Answer the bot's API calls for `seconds` (or until it sent `expected` messages);
        the params of every message it sent."""
        sent: list[dict[str, Any]] = []
        deadline = asyncio.get_running_loop().time() + seconds
        while (left := deadline - asyncio.get_running_loop().time()) > 0:
            if expected is not None and len(sent) >= expected:
                break
            try:
                data = json.loads(await asyncio.wait_for(self.ws.recv(), left))
            except asyncio.TimeoutError:
                break
            if "action" not in data:
                continue
            is_send = data["action"] in SEND_ACTIONS
            if is_send:
                sent.append(data["params"])
            result = {"message_id": 555} if is_send else {}
            reply = {"status": "ok", "retcode": 0, "data": result, "echo": data.get("echo")}
            await self.ws.send(json.dumps(reply))
        return sent

    def log_tail(self) -> str:
        """The end of the process's output, for a failure's message."""
        return log_tail(self.log_path)


@contextlib.asynccontextmanager
async def bot_process(
    folder: Path, llm: FakeOpenAI, *, self_id: int = SELF_ID, **env: str
) -> AsyncIterator[BotProcess]:
    """`python bot.py` in `folder` (a copy of the repository's), its database
    `folder/aimemory.db`, its log `folder/bot.log`, connected as account `self_id`;
    killed on exit if still running."""
    shutil.copy(ROOT / "bot.py", folder / "bot.py")
    shutil.copy(ROOT / ".env.example", folder / ".env.example")
    port = free_port()
    environment = child_environment(
        **{
            "LOCALSTORE_DATA_DIR": str(folder / "data"),
            "PORT": str(port),
            "ONEBOT_ACCESS_TOKEN": ACCESS_TOKEN,
            "AIMEMORY_API_BASE": llm.base_url,
            "AIMEMORY_API_KEY": "sk-test",
            "AIMEMORY_DB_PATH": str(folder / "aimemory.db"),
            **env,
        }
    )
    log_path = folder / "bot.log"
    with log_path.open("wb") as log:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "bot.py",
            cwd=folder,
            env=environment,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        ws = await _connect(port, process, log_path, self_id)
        try:
            yield BotProcess(process, ws, log_path, port)
        finally:
            await ws.close()
    finally:
        if process.returncode is None:
            process.kill()
            await asyncio.wait_for(process.wait(), 15)


async def _connect(
    port: int, process: asyncio.subprocess.Process, log_path: Path, self_id: int
) -> ClientConnection:
    headers = {
        "X-Self-ID": str(self_id),
        "X-Client-Role": "Universal",
        "Authorization": f"Bearer {ACCESS_TOKEN}",
    }
    deadline = time.monotonic() + CONNECT_TIMEOUT_SECONDS
    while True:
        try:
            return await ws_connect(
                f"ws://127.0.0.1:{port}/onebot/v11/ws", additional_headers=headers
            )
        except OSError as exc:
            if process.returncode is not None or time.monotonic() > deadline:
                raise AssertionError(
                    f"bot.py did not accept the connection:\n{log_tail(log_path)}"
                ) from exc
            await asyncio.sleep(0.2)


def log_tail(log_path: Path, chars: int = 3000) -> str:
    """The last `chars` characters of a log file."""
    return log_path.read_text(encoding="utf-8", errors="replace")[-chars:]
