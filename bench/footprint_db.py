"""The large database of bench/footprint.py, built in a child process through the plugin's
write paths: 80 % of the memories in groups of 200, 20 % personal (100 each), 72 h of rows."""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from bench import generated_chat as gen
from bench import harness as h

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


async def build_database(layout: Layout, path: Path) -> None:
    """Build the database of `layout` at `path`, in a child process (it loads the plugin)."""
    print(f"building a database of {layout.memories} memories, {layout.rows} rows…", flush=True)
    started = time.perf_counter()
    await h.run_child("bench.footprint_db", {**asdict(layout), "out": str(path)})
    print(f"built in {time.perf_counter() - started:.0f} s", flush=True)


async def fill_memories(runtime: Any, layout: Layout, rng: random.Random) -> int:
    """Save the layout's memories through MemoryService (a refused one is redrawn); how many."""
    from nonebot_plugin_aimemory.memory.personal import personal_scope

    service = h.memory_service(runtime)
    first_group = h.group_key(layout.group_ids()[0])
    scopes: list[tuple[str, int, str | None]] = [
        (h.group_key(g), GROUP_MEMORIES, None) for g in layout.group_ids()
    ]
    for user in map(str, layout.personal_user_ids()):
        scopes.append((personal_scope(first_group, user), PERSONAL_MEMORIES, user))
    seen: set[str] = set()
    saved = refused = 0
    for scope, count, owner in scopes:
        target = saved + count
        while saved < target:
            if refused > MAX_DRAWS_FACTOR * layout.memories:
                raise RuntimeError(f"too many refused saves ({refused}); last scope {scope}")
            (memory,) = gen.memories(rng, 1, seen)
            status = await gen.save(
                service, scope, memory._replace(user_id=owner or memory.user_id)
            )
            saved += status == "saved"
            refused += status != "saved"
    return saved


async def fill_chat_log(runtime: Any, layout: Layout, rng: random.Random) -> None:
    """Log the layout's rows through the ChatLog writer, in batches."""
    writer, keys = h.chat_log_writer(runtime), [h.group_key(g) for g in layout.group_ids()]
    first = datetime.now(timezone.utc) - timedelta(hours=ROWS_SPAN_HOURS)
    step = timedelta(seconds=ROWS_SPAN_HOURS * 3600 / max(1, layout.rows))
    rows = h.logged_rows(rng, keys, (first + step * (i + 1) for i in range(layout.rows)))
    for index, row in enumerate(rows, start=1):
        writer.add(row)
        if index % FLUSH_EVERY_ROWS == 0:
            await writer.flush()
    await writer.flush()


async def run(bench: h.Bench) -> dict[str, Any]:
    """The child process: build the database the spec names; what was written."""
    spec = bench.child or {}
    layout, out = Layout(int(spec["memories"]), int(spec["rows"])), Path(spec["out"])
    await asyncio.to_thread(out.parent.mkdir, parents=True, exist_ok=True)
    rng = random.Random(16)
    async with h.plugin(out) as (_, runtime):
        saved = await fill_memories(runtime, layout, rng)
        await fill_chat_log(runtime, layout, rng)
    return {"memories": saved, "rows": layout.rows}


if __name__ == "__main__":
    h.main(__doc__, run)
