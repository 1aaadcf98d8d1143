"""Two real `python bot.py` processes on one PostgreSQL database: a memory saved through
one is found by the next turn in the other, and two processes serving one account say so
in their logs."""

from __future__ import annotations

from pathlib import Path

from tests.fakes.bot_process import bot_process, log_tail, private_event
from tests.fakes.openai_server import FakeOpenAI, text, tool_calls


async def test_two_processes_share_what_they_remember(
    tmp_path: Path, llm: FakeOpenAI, postgres_url: str
) -> None:
    first_dir, second_dir = tmp_path / "first", tmp_path / "second"
    first_dir.mkdir()
    second_dir.mkdir()
    llm.script(
        tool_calls(("memory_save", {"content": "小明喜欢周末爬山"})),
        text("记住了"),
        tool_calls(("memory_search", {"query": "爬山"})),
        text("你喜欢周末爬山"),
    )
    settings = {"AIMEMORY_DATABASE_URL": postgres_url}
    async with bot_process(first_dir, llm, **settings) as first:
        async with bot_process(second_dir, llm, **settings) as second:
            await first.ws.send(private_event(1, 3001, "记住我喜欢周末爬山"))
            assert (await first.next_send(answer=True))["message"][-1]["data"]["text"] == "记住了"
            await second.ws.send(private_event(2, 3001, "我喜欢干什么"))
            answer = await second.next_send(answer=True)
            logs = log_tail(first.log_path, 50_000) + log_tail(second.log_path, 50_000)
            await second.stop()
        await first.stop()

    assert answer["message"][-1]["data"]["text"] == "你喜欢周末爬山"
    found = llm.chat_requests[-1]["messages"][-1]
    assert found["role"] == "tool"
    assert "小明喜欢周末爬山" in found["content"]
    # Both processes answer as the same account: the later one logs it.
    assert "is also served by another process" in logs
    assert postgres_url.split(":")[2].split("@")[0] not in logs  # no password in any log
