"""The large database of bench/footprint.py, built once in a child process through the
plugin's write paths (`MemoryService.save`, the batched `ChatLog` writer) and cached under
/tmp, keyed by a hash of the schema module and the sizes (rebuilt after MAX_CACHE_AGE_DAYS);
callers copy it, since starting on it may migrate it. 80 % of the memories fill group
scopes of 200, 20 % personal scopes of 100; rows are spread over the last few days.

Run alone: python -m bench.footprint_db --child '{"memories": 1000, "rows": 10000, "out": "/tmp/x.db"}'
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import random
import shutil
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from bench.harness import (
    POOLS,
    Bench,
    chat_line,
    chat_log_writer,
    chat_row,
    fake_llm,
    group_key,
    main,
    memory_service,
    plugin_runtime,
    run_child,
)
from bench.memory_search import memories

ROOT = Path(__file__).resolve().parents[1]
SCHEMA_FILE = ROOT / "nonebot_plugin_aimemory" / "store" / "schema.py"
CACHE_DIR = Path("/tmp/aimemory-footprint-db")
# Bump when what the builder writes changes (the cache key includes it).
BUILD_VERSION = 1
MAX_CACHE_AGE_DAYS = 30
GROUP_MEMORIES = 200
PERSONAL_MEMORIES = 100
GROUP_SHARE = 0.8
# Ids of the chats the database holds; the footprint run talks in the same ones.
FIRST_GROUP_ID = 810_000_001
FIRST_PERSONAL_USER_ID = 20_001
FLUSH_EVERY_ROWS = 1000
ROWS_SPAN_HOURS = 72
# Saves refused (a duplicate drawn twice) are redrawn, up to this many times the target.
MAX_DRAWS_FACTOR = 3


@dataclass(frozen=True)
class Layout:
    """How many group and personal scopes a database of `memories` memories fills."""

    memories: int
    rows: int

    @property
    def groups(self) -> int:
        """Group scopes, 200 memories each."""
        return max(1, round(self.memories * GROUP_SHARE / GROUP_MEMORIES))

    @property
    def personal_users(self) -> int:
        """Personal scopes, 100 memories each."""
        return max(1, round(self.memories * (1 - GROUP_SHARE) / PERSONAL_MEMORIES))

    def group_ids(self) -> list[int]:
        """The groups with memories and chat-log rows."""
        return [FIRST_GROUP_ID + i for i in range(self.groups)]

    def personal_user_ids(self) -> list[int]:
        """The speakers with personal memories."""
        return [FIRST_PERSONAL_USER_ID + i for i in range(self.personal_users)]


def cached_database(layout: Layout) -> Path:
    """The cached database of `layout`, built first (in a child process) when missing,
    stale or made from another schema."""
    key = hashlib.sha256(
        SCHEMA_FILE.read_bytes() + f"|{layout.memories}|{layout.rows}|{BUILD_VERSION}".encode()
    ).hexdigest()[:16]
    path = CACHE_DIR / f"footprint-{layout.memories}-{layout.rows}-{key}.db"
    max_age_seconds = MAX_CACHE_AGE_DAYS * 86_400
    if path.exists() and time.time() - path.stat().st_mtime < max_age_seconds:
        return path
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    # Built in a folder of its own: the runtime makes a `personas` folder beside the file.
    building_dir = Path(tempfile.mkdtemp(prefix="building-", dir=CACHE_DIR))
    building = building_dir / "aimemory.db"
    print(f"building the large database ({layout.memories} memories, {layout.rows} rows)…")
    started = time.perf_counter()
    spec = {"memories": layout.memories, "rows": layout.rows, "out": str(building)}
    built = run_child("bench.footprint_db", spec)
    os.replace(building, path)
    shutil.rmtree(building_dir, ignore_errors=True)
    print(
        f"built {path} in {time.perf_counter() - started:.0f} s "
        f"({built['memories']} memories, {built['rows']} rows, {built['refused']} redrawn)"
    )
    return path


def copy_database(source: Path, target: Path) -> None:
    """Copy a database file with its WAL sidecars, if any."""
    for suffix in ("", "-wal", "-shm"):
        extra = Path(f"{source}{suffix}")
        if extra.exists():
            shutil.copyfile(extra, f"{target}{suffix}")


async def fill_memories(runtime: Any, layout: Layout, rng: random.Random) -> tuple[int, int]:
    """Save the layout's memories through MemoryService; (saved, refused)."""
    from nonebot_plugin_aimemory.memory.personal import personal_scope

    service = memory_service(runtime)
    scopes = [(group_key(g), GROUP_MEMORIES, None) for g in layout.group_ids()]
    scopes += [
        (personal_scope(group_key(layout.group_ids()[0]), str(u)), PERSONAL_MEMORIES, str(u))
        for u in layout.personal_user_ids()
    ]
    seen: set[str] = set()
    saved = refused = 0
    for scope, count, owner in scopes:
        in_scope = 0
        while in_scope < count:
            if refused > MAX_DRAWS_FACTOR * layout.memories:
                raise RuntimeError(f"too many refused saves ({refused}); last scope {scope}")
            (memory,) = memories(rng, 1, seen)
            outcome = await service.save(
                scope, memory.content, tags=memory.tags, user_id=owner or memory.user_id
            )
            if outcome.status == "saved":
                in_scope += 1
                saved += 1
            else:
                refused += 1
    return saved, refused


async def fill_chat_log(runtime: Any, layout: Layout, rng: random.Random) -> int:
    """Log the layout's rows through the ChatLog writer, in batches; rows written."""
    writer = chat_log_writer(runtime)
    groups = layout.group_ids()
    speakers = [(str(20_001 + i), name) for i, name in enumerate(POOLS["name"])]
    moment = datetime.now(timezone.utc) - timedelta(hours=ROWS_SPAN_HOURS)
    step_seconds = ROWS_SPAN_HOURS * 3600 / max(1, layout.rows)
    for index in range(layout.rows):
        moment += timedelta(seconds=step_seconds)
        key = group_key(groups[index % len(groups)])
        length = min(120, 10 + int(rng.expovariate(1 / 28)))
        text = chat_line(rng, length, length)
        if rng.random() < 0.05:
            writer.add(chat_row(key, moment, "assistant", text))
        else:
            speaker = rng.choice(speakers)
            addressed = rng.random() < 0.1
            writer.add(chat_row(key, moment, "user", text, speaker, addressed=addressed))
        if (index + 1) % FLUSH_EVERY_ROWS == 0:
            await writer.flush()
    await writer.flush()
    return layout.rows


async def run(bench: Bench) -> dict[str, Any]:
    """The child process: build the database the spec names; what was written."""
    spec = bench.child or {}
    layout = Layout(int(spec["memories"]), int(spec["rows"]))
    out = Path(spec["out"])
    await asyncio.to_thread(out.unlink, missing_ok=True)
    rng = random.Random(16)
    with fake_llm() as llm:
        async with plugin_runtime(llm, out) as runtime:
            saved, refused = await fill_memories(runtime, layout, rng)
            rows = await fill_chat_log(runtime, layout, rng)
    return {"memories": saved, "refused": refused, "rows": rows}


if __name__ == "__main__":
    main(__doc__, run)
