"""The large database of bench/footprint.py, built in a child process through the plugin's
write paths (`MemoryService.save`, the batched `ChatLog` writer) and cached under /tmp by a
hash of the schema module and the sizes (callers copy it: starting on it may migrate it).
80 % of the memories fill group scopes of 200, 20 % personal scopes of 100; the rows span
the last 72 hours.
Run alone: python -m bench.footprint_db --child '{"memories": 1000, "rows": 10000, "out": "/tmp/x.db"}'
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import random
import tempfile
import time
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from bench import harness as h
from bench.memory_search import memories

SCHEMA_FILE = Path(__file__).resolve().parents[1] / "nonebot_plugin_aimemory/store/schema.py"
CACHE_DIR = Path("/tmp/aimemory-footprint-db")
BUILD_VERSION = 1  # bump when what the builder writes changes (the cache key includes it)
MAX_CACHE_AGE_DAYS = 30
GROUP_MEMORIES, PERSONAL_MEMORIES, GROUP_SHARE = 200, 100, 0.8
# Ids of the chats the database holds; the footprint run talks in the same ones.
FIRST_GROUP_ID, FIRST_PERSONAL_USER_ID = 810_000_001, 20_001
FLUSH_EVERY_ROWS, ROWS_SPAN_HOURS = 1000, 72
# Saves refused (a duplicate drawn twice) are redrawn, up to this many times the target.
MAX_DRAWS_FACTOR = 3


@dataclass(frozen=True)
class Layout:
    """How many memories and chat-log rows a database holds, and in which chats."""

    memories: int
    rows: int

    def group_ids(self) -> list[int]:
        """The groups with memories (200 each) and chat-log rows."""
        count = max(1, round(self.memories * GROUP_SHARE / GROUP_MEMORIES))
        return [FIRST_GROUP_ID + i for i in range(count)]

    def personal_user_ids(self) -> list[int]:
        """The speakers with personal memories (100 each)."""
        count = max(1, round(self.memories * (1 - GROUP_SHARE) / PERSONAL_MEMORIES))
        return [FIRST_PERSONAL_USER_ID + i for i in range(count)]


def cached_database(layout: Layout) -> Path:
    """The cached database of `layout`, built first when missing, stale or of another schema."""
    key = f"|{layout.memories}|{layout.rows}|{BUILD_VERSION}".encode()
    digest = hashlib.sha256(SCHEMA_FILE.read_bytes() + key).hexdigest()[:16]
    path = CACHE_DIR / f"footprint-{layout.memories}-{layout.rows}-{digest}.db"
    if path.exists() and time.time() - path.stat().st_mtime < MAX_CACHE_AGE_DAYS * 86_400:
        return path
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    print(f"building the large database ({layout.memories} memories, {layout.rows} rows)…")
    started = time.perf_counter()
    # Built in a folder of its own: the runtime makes a `personas` folder beside the file.
    with tempfile.TemporaryDirectory(prefix="building-", dir=CACHE_DIR) as building_dir:
        out = f"{building_dir}/aimemory.db"
        built = h.run_child("bench.footprint_db", {**asdict(layout), "out": out})
        os.replace(out, path)
    print(f"built {path} in {time.perf_counter() - started:.0f} s ({built['memories']} "
          f"memories, {built['rows']} rows, {built['refused']} redrawn)")  # fmt: skip
    return path


async def fill_memories(runtime: Any, layout: Layout, rng: random.Random) -> tuple[int, int]:
    """Save the layout's memories through MemoryService; (saved, refused)."""
    from nonebot_plugin_aimemory.memory.personal import personal_scope

    service = h.memory_service(runtime)
    first_group = h.group_key(layout.group_ids()[0])
    scopes = [(h.group_key(g), GROUP_MEMORIES, None) for g in layout.group_ids()]
    scopes += [(personal_scope(first_group, str(u)), PERSONAL_MEMORIES, str(u))
               for u in layout.personal_user_ids()]  # fmt: skip
    seen: set[str] = set()
    saved = refused = 0
    for scope, count, owner in scopes:
        target = saved + count
        while saved < target:
            if refused > MAX_DRAWS_FACTOR * layout.memories:
                raise RuntimeError(f"too many refused saves ({refused}); last scope {scope}")
            (memory,) = memories(rng, 1, seen)
            owner_id = owner or memory.user_id
            outcome = await service.save(scope, memory.content, tags=memory.tags, user_id=owner_id)
            if outcome.status == "saved":
                saved += 1
            else:
                refused += 1
    return saved, refused


async def fill_chat_log(runtime: Any, layout: Layout, rng: random.Random) -> None:
    """Log the layout's rows through the ChatLog writer, in batches."""
    writer = h.chat_log_writer(runtime)
    groups = layout.group_ids()
    speakers = [(str(FIRST_PERSONAL_USER_ID + i), name) for i, name in enumerate(h.POOLS["name"])]
    moment = datetime.now(timezone.utc) - timedelta(hours=ROWS_SPAN_HOURS)
    step = timedelta(seconds=ROWS_SPAN_HOURS * 3600 / max(1, layout.rows))
    for index in range(layout.rows):
        moment += step
        key = h.group_key(groups[index % len(groups)])
        length = min(120, 10 + int(rng.expovariate(1 / 28)))
        line = h.chat_line(rng, length, length)
        if rng.random() < 0.05:
            writer.add(h.chat_row(key, moment, "assistant", line))
        else:
            speaker = rng.choice(speakers)
            writer.add(h.chat_row(key, moment, "user", line, speaker, addressed=rng.random() < 0.1))
        if (index + 1) % FLUSH_EVERY_ROWS == 0:
            await writer.flush()
    await writer.flush()


async def run(bench: h.Bench) -> dict[str, Any]:
    """The child process: build the database the spec names; what was written."""
    spec = bench.child or {}
    layout, out = Layout(int(spec["memories"]), int(spec["rows"])), Path(spec["out"])
    await asyncio.to_thread(out.unlink, missing_ok=True)
    rng = random.Random(16)
    with h.fake_llm() as llm:
        async with h.plugin_runtime(llm, out) as runtime:
            saved, refused = await fill_memories(runtime, layout, rng)
            await fill_chat_log(runtime, layout, rng)
    return {"memories": saved, "refused": refused, "rows": layout.rows}


if __name__ == "__main__":
    h.main(__doc__, run)
