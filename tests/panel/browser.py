"""A real headless Chromium driven over the DevTools protocol with `websockets` (no browser
automation package needed): launch it (in a time zone of the test's choosing), open a page
and read its HTTP status, type, press keys, click where an element is, read the page with
JavaScript and take screenshots. The panel itself is served
by uvicorn on 127.0.0.1 from the test's event loop, so the browser, the panel and the bot
share one runtime."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
from websockets.asyncio.client import ClientConnection, connect

from tests.fakes.bot_process import free_port

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
_DEVTOOLS = re.compile(r"DevTools listening on (ws://\S+)")


def chromium_binary() -> str | None:
    """The Chromium to drive: `CHROMIUM` if set, else the first on PATH."""
    if explicit := os.environ.get("CHROMIUM"):
        return explicit if shutil.which(explicit) else None
    return next((found for name in CHROMIUM_NAMES if (found := shutil.which(name))), None)


class BrowserError(AssertionError):
    """The page did not do what the test waited for."""


class Page:
    """One tab over its DevTools WebSocket."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._events: list[dict[str, Any]] = []
        self._reader = asyncio.get_running_loop().create_task(self._read())

    async def _read(self) -> None:
        async for raw in self.ws:
            message = json.loads(raw)
            waiting = self._waiting.pop(message.get("id", -1), None)
            if waiting is not None and not waiting.done():
                waiting.set_result(message)
            elif "method" in message:
                self._events.append(message)

    async def send(self, method: str, **params: Any) -> dict[str, Any]:
        message_id = next(self._ids)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[message_id] = future
        await self.ws.send(json.dumps({"id": message_id, "method": method, "params": params}))
        answer = await asyncio.wait_for(future, 15)
        if "error" in answer:
            raise BrowserError(f"{method}: {answer['error']}")
        return answer.get("result", {})

    async def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression (promises awaited)."""
        result = await self.send(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    async def wait_for(self, expression: str, timeout_seconds: float = 10.0) -> Any:
        """Poll an expression until it is truthy (a page loading meanwhile is fine)."""
        deadline = asyncio.get_running_loop().time() + timeout_seconds
        last_error: Exception | None = None
        while asyncio.get_running_loop().time() < deadline:
            try:
                value = await self.evaluate(expression)
                if value:
                    return value
            except BrowserError as error:
                last_error = error
            await asyncio.sleep(0.05)
        page = await self.evaluate("document.body ? document.body.innerText : ''")
        raise BrowserError(f"timed out waiting for {expression} ({last_error}); page:\n{page}")

    async def goto(self, url: str) -> None:
        await self.send("Page.navigate", url=url)
        await self.wait_for(
            f"location.href === {json.dumps(url)} && document.readyState === 'complete'"
        )

    async def goto_status(self, url: str) -> int:
        """Open `url`; the HTTP status its document was served with."""
        await self.send("Network.enable")
        seen = len(self._events)
        await self.goto(url)
        statuses = [
            int(event["params"]["response"]["status"])
            for event in self._events[seen:]
            if event["method"] == "Network.responseReceived"
            and event["params"].get("type") == "Document"
            and event["params"]["response"]["url"] == url
        ]
        await self.send("Network.disable")
        if not statuses:
            raise BrowserError(f"no response seen for {url}")
        return statuses[-1]

    async def click(self, selector: str) -> None:
        """A real mouse click in the middle of the element."""
        box = await self.wait_for(
            f"""(() => {{
                const el = document.querySelector({json.dumps(selector)});
                if (!el) return null;
                el.scrollIntoView({{block: 'center'}});
                const r = el.getBoundingClientRect();
                return r.width && r.height ? {{x: r.x + r.width / 2, y: r.y + r.height / 2}} : null;
            }})()"""
        )
        for kind in ("mousePressed", "mouseReleased"):
            await self.send(
                "Input.dispatchMouseEvent",
                type=kind,
                x=box["x"],
                y=box["y"],
                button="left",
                clickCount=1,
            )

    async def type_into(self, selector: str, text: str) -> None:
        """Focus the field, select what it holds and type `text` over it."""
        await self.wait_for(
            f"(() => {{ const el = document.querySelector({json.dumps(selector)});"
            " if (!el) return false; el.focus(); el.select && el.select(); return true; })()"
        )
        await self.send("Input.insertText", text=text)

    async def press_enter(self) -> None:
        for kind in ("keyDown", "keyUp"):
            await self.send(
                "Input.dispatchKeyEvent",
                type=kind,
                key="Enter",
                code="Enter",
                windowsVirtualKeyCode=13,
                nativeVirtualKeyCode=13,
                **({"text": "\r"} if kind == "keyDown" else {}),
            )

    async def screenshot(self, path: Path) -> Path:
        shot = await self.send("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        await asyncio.to_thread(path.write_bytes, base64.b64decode(shot["data"]))
        return path

    async def close(self) -> None:
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._reader
        await self.ws.close()


@contextlib.asynccontextmanager
async def chromium_page(
    binary: str, width: int = 420, height: int = 900, time_zone: str | None = None
) -> AsyncIterator[Page]:
    """A fresh headless Chromium (own profile, phone-sized window) and its first tab; with
    `time_zone`, its clock runs in that zone (`TZ`), whatever the machine's is."""
    profile = tempfile.mkdtemp(prefix="aimemory-chromium-")
    process = await asyncio.create_subprocess_exec(
        binary,
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-extensions",
        "--disable-background-networking",
        "--remote-debugging-address=127.0.0.1",
        "--remote-debugging-port=0",
        f"--user-data-dir={profile}",
        f"--window-size={width},{height}",
        "about:blank",
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "TZ": time_zone} if time_zone else None,
    )
    try:
        browser_url = await _devtools_url(process)
        port = int(browser_url.split(":")[2].split("/")[0])
        async with httpx.AsyncClient() as client:
            targets = (await client.get(f"http://127.0.0.1:{port}/json/list")).json()
        page_url = next(t["webSocketDebuggerUrl"] for t in targets if t["type"] == "page")
        ws = await connect(page_url, max_size=64 * 1024 * 1024)
        page = Page(ws)
        try:
            await page.send("Page.enable")
            await page.send("Runtime.enable")
            yield page
        finally:
            await page.close()
    finally:
        if process.returncode is None:
            process.terminate()
            try:
                await asyncio.wait_for(process.wait(), 10)
            except asyncio.TimeoutError:
                process.kill()
                await process.wait()
        shutil.rmtree(profile, ignore_errors=True)


async def _devtools_url(process: asyncio.subprocess.Process) -> str:
    """Read Chromium's stderr until it says where DevTools listens."""
    assert process.stderr is not None
    seen: list[str] = []
    while True:
        line = await asyncio.wait_for(process.stderr.readline(), 30)
        if not line:
            raise BrowserError("chromium exited before DevTools listened:\n" + "".join(seen))
        text = line.decode("utf-8", "replace")
        seen.append(text)
        if match := _DEVTOOLS.search(text):
            # Keep draining stderr so Chromium never blocks on a full pipe.
            asyncio.get_running_loop().create_task(_drain(process.stderr))
            return match.group(1)


async def _drain(stream: asyncio.StreamReader) -> None:
    while await stream.readline():
        pass


@contextlib.asynccontextmanager
async def serving(app: Any, **options: Any) -> AsyncIterator[str]:
    """`app` served by uvicorn on 127.0.0.1 from this event loop (uvicorn's defaults, as
    NoneBot runs it, logging warnings only, unless `options` say otherwise); yields its
    root URL."""
    import uvicorn

    port = free_port()
    settings = {"log_level": "warning", **options}
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, lifespan="off", **settings)
    )
    task = asyncio.get_running_loop().create_task(server.serve())
    try:
        while not server.started:
            if task.done():
                task.result()
            await asyncio.sleep(0.01)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 10)
