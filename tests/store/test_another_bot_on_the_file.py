"""Two bots started by one system user share one SQLite file (localstore's data folder):
the second says so at start-up, in Chinese, with what to set (issue #40). On PostgreSQL
several processes are a supported set-up: no warning there."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes.bot_process import bot_process
from tests.fakes.openai_server import FakeOpenAI

WARNING = "另一个机器人进程"


async def started_beside_another_bot(database, log: pytest.LogCaptureFixture) -> list[str]:
    """The warnings a RunningMark logs when another process's fresh mark is there."""
    from nonebot_plugin_aimemory.store.liveness import RUNNING, RunningMark
    from nonebot_plugin_aimemory.store.plugin_state import PluginStateStore
    from nonebot_plugin_aimemory.store.times import utc_now_text

    state = PluginStateStore(database)
    await state.put(RUNNING, f"999999@elsewhere {utc_now_text()}")
    mark = RunningMark(state)
    await mark.renew()
    await mark.renew()  # said once
    return [record.getMessage() for record in log.records if WARNING in record.getMessage()]


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
async def test_another_bot_on_the_database_is_told_on_sqlite_only(
    any_database, backend: str, plugin_log: pytest.LogCaptureFixture
) -> None:
    warnings = await started_beside_another_bot(any_database, plugin_log)
    if backend == "sqlite":
        (warning,) = warnings
        assert "999999@elsewhere" in warning
        assert "AIMEMORY_DB_PATH" in warning
    else:
        assert warnings == []


async def test_a_second_real_bot_on_the_same_file_says_so(tmp_path: Path, llm: FakeOpenAI) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    shared = str(first / "aimemory.db")
    async with (
        bot_process(first, llm),
        bot_process(second, llm, self_id=43, AIMEMORY_DB_PATH=shared),
    ):
        pass
    assert WARNING not in (first / "bot.log").read_text("utf-8")
    assert WARNING in (second / "bot.log").read_text("utf-8")
