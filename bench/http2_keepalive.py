"""Model calls over https, HTTP/2 kept alive against HTTP/1.1 per call (issue #39): per 100
sequential calls through the plugin's own client, TLS handshakes, the caller's CPU and wall time,
against hypercorn with a throwaway CA in another process, on a port offering h2 and one
offering http/1.1 only. On loopback a handshake's round trips cost nothing; to a provider each
costs tens of milliseconds more, which these wall times leave out."""

from __future__ import annotations

import asyncio
import gc
import json
import os
import random
import ssl
import statistics
import sys
import time
from dataclasses import dataclass
from subprocess import PIPE
from typing import Any

from bench import generated_chat as gen
from bench import harness as h

CALLS_PER_BLOCK = 100
BLOCKS_PER_MODE = 5
QUICK_CALLS_PER_BLOCK = 20
SERVING_PREFIX = "SERVING "
COUNTS_PREFIX = "COUNTS "
MODES = ("h2", "http/1.1")
# What each mode's server port offers by ALPN.
ALPN = {"h2": ("h2", "http/1.1"), "http/1.1": ("http/1.1",)}


@dataclass(frozen=True)
class Block:
    """One block of calls: its mode and what the calling process spent on it."""

    mode: str
    calls: int
    cpu_ms: float
    wall_ms: float


async def serve(bench: h.Bench) -> dict[str, Any]:
    """The child: both servers, their URLs and CA file printed; what they saw printed for
    each line read from stdin, until stdin closes."""
    from tests.fakes.h2_model_server import H2Served, serving_h2
    from tests.fakes.tls import ThrowawayCA

    ca = ThrowawayCA.make()
    ca_file = bench.work_dir / "ca.pem"
    ca.ca.cert_pem.write_to_path(str(ca_file))
    async with serving_h2(ca, ALPN["h2"]) as h2, serving_h2(ca, ALPN["http/1.1"]) as h1:
        served: dict[str, H2Served] = {"h2": h2, "http/1.1": h1}

        def counts() -> dict[str, Any]:
            return {
                mode: {"connections": len(s.connections), "requests": len(s.http_versions)}
                for mode, s in served.items()
            }

        urls = {"h2": h2.base_url, "http/1.1": h1.base_url, "ca_file": str(ca_file)}
        print(SERVING_PREFIX + json.dumps(urls), flush=True)
        while await asyncio.to_thread(sys.stdin.readline):
            print(COUNTS_PREFIX + json.dumps(counts()), flush=True)
        return counts()


async def call_block(mode: str, base_url: str, tls: ssl.SSLContext, calls: int) -> Block:
    """`calls` sequential model calls through a new SharedHttp, timed as a whole."""
    from nonebot_plugin_aimemory.engine.llm import Endpoint, LLMClient
    from nonebot_plugin_aimemory.engine.messages import system, user
    from nonebot_plugin_aimemory.engine.shared_http import SharedHttp

    http = SharedHttp(30.0, tls=tls)
    _ = http.client  # made before the clock starts: its connections are what is measured
    client = LLMClient(http, Endpoint(base_url, h.API_KEY, "m"), timeout_seconds=30.0)
    lines = [gen.chat_line(random.Random(i), 40, 80) for i in range(calls)]
    prompts = [[system("你是小忆"), user(line)] for line in lines]
    gc.collect()
    cpu_start, wall_start = time.process_time(), time.perf_counter()
    for messages in prompts:
        await client.complete(messages)
    cpu, wall = time.process_time() - cpu_start, time.perf_counter() - wall_start
    await http.aclose()
    return Block(mode, calls, cpu * 1000, wall * 1000)


async def run(bench: h.Bench) -> dict[str, Any] | None:
    if bench.child is not None:
        return await serve(bench)
    calls = QUICK_CALLS_PER_BLOCK if bench.quick else CALLS_PER_BLOCK
    blocks_per_mode = 1 if bench.quick else BLOCKS_PER_MODE
    command = [sys.executable, "-m", "bench.http2_keepalive", "--child", '{"load_plugin": false}']
    server = await asyncio.create_subprocess_exec(*command, stdin=PIPE, stdout=PIPE)
    try:
        urls: dict[str, str] = await printed(server, SERVING_PREFIX)  # once it took connections
        tls = ssl.create_default_context(cafile=urls["ca_file"])
        for mode in MODES:  # imports and first-use costs, not measured
            await call_block(mode, urls[mode], tls, 2)
        before = await server_counts(server)
        blocks = []
        for _ in range(blocks_per_mode):
            for mode in MODES:  # alternating, so drift in the machine's load hits both
                blocks.append(await call_block(mode, urls[mode], tls, calls))
        after = await server_counts(server)
        assert server.stdin is not None
        server.stdin.close()
        await server.wait()
    finally:
        if server.returncode is None:
            server.kill()
            await server.wait()
    counts = {
        mode: {key: after[mode][key] - before[mode][key] for key in after[mode]} for mode in MODES
    }
    report(blocks, counts, quick=bench.quick)
    return None


async def server_counts(server: asyncio.subprocess.Process) -> dict[str, dict[str, int]]:
    """The connections and requests each of the child's servers has seen so far."""
    assert server.stdin is not None
    server.stdin.write(b"counts\n")
    await server.stdin.drain()
    return await printed(server, COUNTS_PREFIX)


async def printed(server: asyncio.subprocess.Process, prefix: str) -> Any:
    """The JSON of the child's next output line starting with `prefix`."""
    assert server.stdout is not None
    while line := (await server.stdout.readline()).decode():
        if line.startswith(prefix):
            return json.loads(line.removeprefix(prefix))
    raise SystemExit(f"the server child ended before printing {prefix.strip()}")


def report(blocks: list[Block], counts: dict[str, dict[str, int]], *, quick: bool) -> None:
    """Per 100 calls: handshakes, CPU and wall time (median over blocks); the verdict."""
    per_100: dict[str, dict[str, float]] = {}
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    blocks_per_mode = len(blocks) // len(MODES)
    print(f"{blocks_per_mode} blocks per mode, alternating; load average {load} (2 cores)")
    print(f"{'mode':<10} {'handshakes':>10} {'CPU ms':>8} {'wall ms':>8}   (per 100 calls)")
    for mode in MODES:
        mine = [b for b in blocks if b.mode == mode]
        scale = [100 / b.calls for b in mine]
        served = counts[mode]
        per_100[mode] = {
            "handshakes": 100 * served["connections"] / served["requests"],
            "cpu": statistics.median(b.cpu_ms * s for b, s in zip(mine, scale, strict=True)),
            "wall": statistics.median(b.wall_ms * s for b, s in zip(mine, scale, strict=True)),
        }
        row = per_100[mode]
        print(f"{mode:<10} {row['handshakes']:>10.1f} {row['cpu']:>8.1f} {row['wall']:>8.1f}")
    kept, per_call = per_100["h2"], per_100["http/1.1"]
    print(
        f"HTTP/2 kept alive saves {per_call['cpu'] - kept['cpu']:.1f} ms CPU and "
        f"{per_call['wall'] - kept['wall']:.1f} ms wall per 100 calls "
        f"({per_call['cpu'] / kept['cpu']:.2f}× and {per_call['wall'] / kept['wall']:.2f}×)"
    )
    met = (
        kept["handshakes"] <= 1.0 * 100 / min(b.calls for b in blocks)
        and per_call["handshakes"] >= 99.0
        and kept["cpu"] < per_call["cpu"]
        and kept["wall"] < per_call["wall"]
    )
    label = "one handshake per block over HTTP/2, one per call over HTTP/1.1; CPU and wall lower"
    h.verdict(label, met, quick=quick)


if __name__ == "__main__":
    h.main(__doc__, run)
