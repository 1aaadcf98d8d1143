"""`python -m nonebot_plugin_aimemory.migrate` as the real command in a child process, on a
real PostgreSQL server: with no `--from` and no AIMEMORY_DB_PATH it copies the database
the bot itself created (found in localstore's data directory, as the bot finds it), and
at LOG_LEVEL=DEBUG NoneBot's dump of its configuration shows no key, token or password."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.fakes.bot_process import run_bot
from tests.store.test_migrate_to_postgres import counts, filled_sqlite

# A bot that starts (creating its database where it keeps it), stops, and says where.
START_AND_STOP = """
import anyio
import nonebot
from nonebot.adapters.onebot.v11 import Adapter

nonebot.init(driver="~none")
nonebot.get_driver().register_adapter(Adapter)
plugin = nonebot.load_plugin("nonebot_plugin_aimemory")
driver = nonebot.get_driver()


async def stop() -> None:
    await anyio.sleep(0.2)
    driver.exit()


@driver.on_startup
async def stop_once_started() -> None:
    driver.task_group.start_soon(stop)


nonebot.run()
print("DATABASE", plugin.module.default_db_path())
"""
TIMEOUT_SECONDS = 120


def run(args: list[str], cwd: Path, **settings: str) -> subprocess.CompletedProcess[str]:
    """A child Python in `cwd` (its `.env` there), its data where localstore keeps it."""
    return run_bot(
        args, cwd, timeout_seconds=TIMEOUT_SECONDS, **{"LOCALSTORE_DATA_DIR": None, **settings}
    )


def migration(url: str, cwd: Path, *more: str, **settings: str) -> subprocess.CompletedProcess[str]:
    return run(["-m", "nonebot_plugin_aimemory.migrate", "--to", url, *more], cwd, **settings)


@pytest.mark.parametrize("where", ["data_dir", "plugin_data_dir"])
def test_without_from_the_bots_own_database_is_copied(
    tmp_path: Path, postgres_url: str, where: str
) -> None:
    import asyncio

    # given: localstore's directories set as an operator sets them, in the bot's .env
    setting = (
        f"LOCALSTORE_DATA_DIR={tmp_path / 'data'}"
        if where == "data_dir"
        else "LOCALSTORE_PLUGIN_DATA_DIR="
        + json.dumps({"nonebot_plugin_aimemory": str(tmp_path / "aimemory-data")})
    )
    (tmp_path / ".env").write_text(setting + "\n", encoding="utf-8")
    (tmp_path / "bot.py").write_text(START_AND_STOP, encoding="utf-8")
    started = run(["bot.py"], tmp_path)
    assert started.returncode == 0, started.stdout[-2000:] + started.stderr[-2000:]
    (database,) = [
        Path(line.split(" ", 1)[1])
        for line in started.stdout.splitlines()
        if line.startswith("DATABASE ")
    ]
    assert database.is_file()
    assert database.is_relative_to(tmp_path)
    asyncio.run(filled_sqlite(database, rows=10))

    # when: the command as the README writes it
    done = migration(postgres_url, tmp_path)

    # then
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert f"copying {database} to" in done.stdout
    assert "messages                     10           10           10" in done.stdout
    assert asyncio.run(counts(postgres_url))["chat_log"] == 9


def test_keys_tokens_and_passwords_stay_masked_at_debug(tmp_path: Path, postgres_url: str) -> None:
    import asyncio

    source = tmp_path / "aimemory.db"
    asyncio.run(filled_sqlite(source, rows=10))
    secrets = {
        "AIMEMORY_API_KEY": "sk-sentinel-main-key",
        "AIMEMORY_REVIEW_API_KEY": "sk-sentinel-review-key",
        "AIMEMORY_PANEL_TOKEN": "sentinel-panel-token-0123",
        "ONEBOT_ACCESS_TOKEN": "sentinel-onebot-token",
    }
    database_password = "sentinel-db-password"
    (tmp_path / ".env").write_text(
        "LOG_LEVEL=DEBUG\n"
        + "".join(f"{key}={value}\n" for key, value in secrets.items())
        + f"AIMEMORY_DATABASE_URL=postgresql://aimemory:{database_password}@127.0.0.1:1/x\n",
        encoding="utf-8",
    )

    done = migration(postgres_url, tmp_path, "--from", str(source))

    log = done.stdout + done.stderr
    assert done.returncode == 0, log[-3000:]
    assert "Loaded Config" in log
    assert "'aimemory_api_key': '**********'" in log
    assert "postgresql://aimemory:***@127.0.0.1:1/x" in log
    assert "'log_level': 'DEBUG'" in log  # the rest as it was
    for secret in [*secrets.values(), database_password]:
        assert secret not in log
    password = postgres_url.split(":")[2].split("@")[0]
    assert password not in log
