"""`AIMEMORY_DATABASE_URL`: a PostgreSQL URL, refused clearly when it is something else,
never shown with its password; a server that is not there is waited for, with a notice
to people meanwhile; one older than PostgreSQL 13 or of a newer schema is refused."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import ValidationError

from tests.fakes.bots import RecordingBot
from tests.fakes.events import group_message, private_message


def config(**values: object):
    from nonebot_plugin_aimemory.config import Config

    return Config(**values)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://aimemory:s3cret@db.example:5432/aimemory",
        "postgres://aimemory:s3cret@db.example/aimemory?sslmode=require",
        "  postgresql://u:s3cret@localhost/x  ",
    ],
)
def test_a_postgresql_url_is_accepted_and_never_shown(url: str) -> None:
    loaded = config(aimemory_database_url=url)
    assert loaded.aimemory_database_url.get_secret_value() == url.strip()
    assert "s3cret" not in repr(loaded)
    assert "s3cret" not in str(loaded.model_dump())


@pytest.mark.parametrize(
    "url", ["mysql://u:s3cret@host/db", "sqlite:///x.db", "s3cret-host:5432", "http://x"]
)
def test_anything_else_is_named_with_what_is_allowed_and_without_the_password(url: str) -> None:
    from nonebot_plugin_aimemory.config import describe_validation_error

    with pytest.raises(ValidationError) as raised:
        config(aimemory_database_url=url)
    message = describe_validation_error(raised.value)
    assert "aimemory_database_url" in message
    assert "postgresql://user:password@host:port/dbname" in message
    assert "s3cret" not in message


def test_without_the_driver_the_error_names_the_extra(monkeypatch) -> None:
    from nonebot_plugin_aimemory.config import describe_validation_error

    monkeypatch.setitem(__import__("sys").modules, "psycopg", None)  # as if not installed
    with pytest.raises(ValidationError) as raised:
        config(aimemory_database_url="postgresql://u:s3cret@h/d")
    message = describe_validation_error(raised.value)
    assert 'pip install "nonebot-plugin-aimemory[postgres]"' in message
    assert "s3cret" not in message


async def test_the_bot_runs_on_postgresql_and_remembers_across_a_restart(
    plugin, postgres_url: str
) -> None:
    from nonebot_plugin_aimemory.store.postgres.database import PostgresDatabase
    from tests.fakes.openai_server import text

    await plugin.restart(aimemory_database_url=postgres_url)
    assert isinstance(plugin.runtime.database, PostgresDatabase)
    plugin.llm.script(text("记住了，你叫阿强"), text("你叫阿强"))
    bot = RecordingBot()
    await bot.receive(private_message("我叫阿强", user_id=3001))
    await plugin.restart()
    await bot.receive(private_message("我叫什么", user_id=3001))

    assert bot.sent_texts == ["记住了，你叫阿强", "你叫阿强"]
    said = " ".join(str(m.get("content")) for m in plugin.llm.chat_requests[-1]["messages"])
    assert "我叫阿强" in said  # the window came back from PostgreSQL
    await plugin.runtime.chat_log.flush()
    logged = await plugin.runtime.database.read("SELECT role, text FROM chat_log ORDER BY id")
    assert logged == [
        ("user", "我叫阿强"),
        ("assistant", "记住了，你叫阿强"),
        ("user", "我叫什么"),
        ("assistant", "你叫阿强"),
    ]


async def test_an_unreachable_server_is_waited_for_until_it_comes(
    postgres_server, postgres_url: str, tmp_path
) -> None:
    from nonebot_plugin_aimemory.deferred_start import DeferredStart
    from nonebot_plugin_aimemory.store.opening import DatabaseUnreachable, open_backend

    postgres_server.stop()
    with pytest.raises(DatabaseUnreachable) as raised:
        await open_backend(str(tmp_path / "unused.db"), postgres_url)
    password = postgres_url.split(":")[2].split("@")[0]
    assert password not in str(raised.value)

    waiting = DeferredStart()
    opened: list[object] = []
    waiting.begin(lambda: open_backend("", postgres_url), opened.append, raised.value)
    assert waiting.waiting
    assert waiting.notice_due("g:1 42")
    assert not waiting.notice_due("g:1 42")
    await asyncio.sleep(1.5)  # the first retries fail
    assert opened == []
    postgres_server.start()
    for _ in range(100):
        if opened:
            break
        await asyncio.sleep(0.1)
    assert len(opened) == 1
    assert not waiting.waiting
    await opened[0].close()  # type: ignore[attr-defined]


async def test_while_waiting_an_addressed_message_gets_a_notice_once_a_minute(plugin) -> None:
    from nonebot_plugin_aimemory import texts
    from nonebot_plugin_aimemory.deferred_start import deferred_start
    from nonebot_plugin_aimemory.runtime import current_runtime, install_runtime
    from nonebot_plugin_aimemory.store.opening import DatabaseUnreachable

    runtime = current_runtime()
    install_runtime(None)
    never: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def not_yet() -> None:
        await never

    try:
        deferred_start().begin(not_yet, lambda _: None, DatabaseUnreachable("down"))
        bot = RecordingBot()
        await bot.receive(group_message("大家好", group_id=5))  # not addressed: nothing
        await bot.receive(group_message("在吗", group_id=5, to_me=True))
        await bot.receive(group_message("在吗？", group_id=5, to_me=True))  # within the minute
        await bot.receive(private_message("~记忆 列表", user_id=3002))
        assert bot.sent_texts == [texts.DATABASE_NOT_READY, texts.DATABASE_NOT_READY]
    finally:
        await deferred_start().cancel()
        install_runtime(runtime)


async def test_a_database_of_a_newer_schema_is_refused(postgres_url: str) -> None:
    import psycopg

    from nonebot_plugin_aimemory.config import ConfigError
    from nonebot_plugin_aimemory.store.opening import open_backend
    from nonebot_plugin_aimemory.store.schema import SCHEMA_VERSION

    database = await open_backend("", postgres_url)
    assert database is not None
    await database.close()
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.execute("UPDATE aimemory.schema_version SET version = %s", (SCHEMA_VERSION + 1,))
    with pytest.raises(ConfigError, match=f"schema version {SCHEMA_VERSION + 1}"):
        await open_backend("", postgres_url)


async def test_the_plugins_tables_stay_in_their_own_schema(postgres_url: str) -> None:
    import psycopg

    from nonebot_plugin_aimemory.store.opening import open_backend

    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.execute("CREATE TABLE public.sessions (key TEXT, theirs INTEGER)")
        connection.execute("INSERT INTO public.sessions VALUES ('g:1', 7)")
    database = await open_backend("", postgres_url)
    assert database is not None
    await database.write_one(
        "INSERT INTO sessions (key, next_seq, updated_at) VALUES ('g:1', 0, 'now')"
    )
    await database.close()
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        theirs = connection.execute("SELECT key, theirs FROM public.sessions").fetchall()
    assert theirs == [("g:1", 7)]


async def test_an_outage_mid_run_fails_the_turn_briefly_and_loses_nothing(
    plugin, postgres_server, postgres_url: str
) -> None:
    from nonebot_plugin_aimemory import texts
    from tests.fakes.openai_server import text

    await plugin.restart(aimemory_database_url=postgres_url)
    plugin.llm.script(text("收到一"), text("收到二"), text("收到三"))
    bot = RecordingBot()
    await bot.receive(private_message("第一句", user_id=3001))
    postgres_server.stop()
    await bot.receive(private_message("第二句", user_id=3001))
    postgres_server.start()
    await bot.receive(private_message("第三句", user_id=3001))

    assert bot.sent_texts == ["收到一", texts.TURN_FAILED, "收到三"]
    await plugin.restart()  # what was acknowledged is in PostgreSQL
    window = await plugin.runtime.history.load("f:3001")
    said = [message.text for message in window]
    assert any(line.endswith("第一句") for line in said)
    assert "收到一" in said
    assert any(line.endswith("第三句") for line in said)
    assert said[-1] == "收到三"
    await plugin.runtime.chat_log.flush()
    logged = [
        text
        for (text,) in await plugin.runtime.database.read(
            "SELECT text FROM chat_log WHERE role = 'user' ORDER BY id"
        )
    ]
    assert logged == ["第一句", "第二句", "第三句"]


@pytest.mark.parametrize("version", ["12.17 (Debian 12.17-1.pgdg110+1)", "9.6.24"])
async def test_a_server_older_than_13_is_refused_with_its_version(version: str) -> None:
    from nonebot_plugin_aimemory.config import ConfigError
    from nonebot_plugin_aimemory.store.opening import open_backend
    from tests.fakes.old_postgres import old_postgres

    async with old_postgres(version) as url:
        with pytest.raises(ConfigError) as refused:
            await open_backend("", url)

    message = str(refused.value)
    assert f"PostgreSQL {version} is too old" in message
    assert "13 or newer" in message
    assert "s3cret" not in message
