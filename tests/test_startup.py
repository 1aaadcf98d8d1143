"""Starting for real, in a child process: `python bot.py` answers a OneBot client on the
real reverse WebSocket. An invalid `AIMEMORY_*` value makes the plugin fail alone in any
NoneBot (logged with the key and what it allows; the other plugins load and start), while
the bundled bot.py refuses to start with that message and a non-zero exit."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from tests.fakes.bot_process import (
    bot_process,
    child_environment,
    free_port,
    group_event,
    run_bot,
)
from tests.fakes.openai_server import FakeOpenAI, text

ROOT = Path(__file__).resolve().parents[1]
LOAD_AND_REPORT = (
    "import nonebot\n"
    "from nonebot.adapters.onebot.v11 import Adapter\n"
    "nonebot.init()\n"
    "nonebot.get_driver().register_adapter(Adapter)\n"
    "plugin = nonebot.load_plugin('nonebot_plugin_aimemory')\n"
    "print('STILL RUNNING')\n"
    "if plugin is not None:\n"
    "    config = plugin.module.plugin_config\n"
    "    print('LOADED', sorted(config.allowed_groups), sorted(config.denied_groups))\n"
)

# A bot of the user's: our plugin, then another that must load and start whatever ours does.
LOAD_WITH_ANOTHER_PLUGIN = (
    "import nonebot\n"
    "from nonebot.adapters.onebot.v11 import Adapter\n"
    "nonebot.init()\n"
    "nonebot.get_driver().register_adapter(Adapter)\n"
    "ours = nonebot.load_plugin('nonebot_plugin_aimemory')\n"
    "other = nonebot.load_plugin('other_plugin')\n"
    "print('OURS LOADED', ours is not None)\n"
    "print('OTHER LOADED', other is not None)\n"
    "nonebot.run()\n"
    "print('FAILURE', ours.module.startup_failure() if ours else None)\n"
)
OTHER_PLUGIN = (
    "import anyio\n"
    "import nonebot\n"
    "driver = nonebot.get_driver()\n"
    "async def stop_soon():\n"
    "    await anyio.sleep(0.2)\n"
    "    driver.exit()\n"
    "@driver.on_startup\n"
    "async def started():\n"
    "    print('OTHER STARTED', flush=True)\n"
    "    driver.task_group.start_soon(stop_soon)\n"
)


def run_python(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """`python ARGS` in `cwd` to its end (tests/fakes/bot_process.py's `run_bot`), under
    NoneBot's `~none` driver unless told otherwise, its data under `cwd/data`."""
    return run_bot(
        args, cwd, **{"DRIVER": "~none", "LOCALSTORE_DATA_DIR": str(cwd / "data"), **env}
    )


def test_an_invalid_value_fails_the_plugin_alone_and_names_the_key(tmp_path: Path) -> None:
    (tmp_path / "other_plugin.py").write_text(OTHER_PLUGIN, encoding="utf-8")

    result = run_python(["-c", LOAD_WITH_ANOTHER_PLUGIN], tmp_path, AIMEMORY_REQUEST_TIMEOUT="abc")

    assert result.returncode == 0, result.stderr[-2000:]
    assert "OURS LOADED False" in result.stdout
    assert "OTHER LOADED True" in result.stdout
    assert "OTHER STARTED" in result.stdout
    log = result.stdout + result.stderr
    assert "SystemExit" not in log
    assert "aimemory_request_timeout" in log
    assert "allowed: > 0 and <= 3600" in log


def test_an_invalid_provider_names_the_allowed_providers(tmp_path: Path) -> None:
    result = run_python(["-c", LOAD_AND_REPORT], tmp_path, AIMEMORY_PROVIDER="deepsek")

    assert result.returncode == 0, result.stderr[-2000:]
    assert "LOADED" not in result.stdout.replace("STILL RUNNING", "")
    log = result.stdout + result.stderr
    assert "aimemory_provider: must be one of openai, deepseek" in log
    assert "(got 'deepsek')" in log


def test_a_budget_found_too_small_at_startup_switches_the_plugin_off_not_the_bot(
    tmp_path: Path,
) -> None:
    (tmp_path / "other_plugin.py").write_text(OTHER_PLUGIN, encoding="utf-8")

    result = run_python(
        ["-c", LOAD_WITH_ANOTHER_PLUGIN],
        tmp_path,
        AIMEMORY_MAX_CONTEXT_TOKENS="1024",
        AIMEMORY_SYSTEM_PROMPT="长" * 800,
    )

    assert result.returncode == 0, result.stderr[-2000:]
    assert "OURS LOADED True" in result.stdout
    assert "OTHER STARTED" in result.stdout
    assert (
        "FAILURE nonebot-plugin-aimemory: invalid configuration: aimemory_max_context_tokens"
        in (result.stdout)
    )
    assert "the plugin is off until this is fixed" in result.stdout + result.stderr


def test_a_valid_configuration_loads(tmp_path: Path) -> None:
    result = run_python(
        ["-c", LOAD_AND_REPORT],
        tmp_path,
        AIMEMORY_REQUEST_TIMEOUT="30",
        AIMEMORY_GROUP_ALLOWLIST="123,456",
        AIMEMORY_GROUP_DENYLIST="[789]",
    )

    assert result.returncode == 0, result.stderr[-2000:]
    assert "LOADED [123, 456] [789]" in result.stdout, result.stdout[-2000:]


def test_bot_py_refuses_to_start_with_an_invalid_value(tmp_path: Path) -> None:
    shutil.copy(ROOT / "bot.py", tmp_path / "bot.py")
    shutil.copy(ROOT / ".env.example", tmp_path / ".env.example")

    result = run_python(["bot.py"], tmp_path, AIMEMORY_COMPRESS_THRESHOLD="2")

    assert result.returncode == 1
    last_line = result.stderr.strip().splitlines()[-1]
    assert last_line.startswith("nonebot-plugin-aimemory 加载失败，机器人不启动。")
    assert "aimemory_compress_threshold" in last_line
    assert "allowed: >= 0.1 and <= 0.95" in last_line
    assert (tmp_path / ".env").exists()  # first start still wrote the file to edit


def test_bot_py_refuses_to_start_when_the_budget_cannot_hold_the_system_prompt(
    tmp_path: Path,
) -> None:
    shutil.copy(ROOT / "bot.py", tmp_path / "bot.py")
    shutil.copy(ROOT / ".env.example", tmp_path / ".env.example")

    result = run_python(
        ["bot.py"],
        tmp_path,
        DRIVER="~fastapi+~httpx+~websockets",
        PORT=str(free_port()),
        AIMEMORY_API_KEY="sk-test",
        AIMEMORY_MAX_CONTEXT_TOKENS="1024",
        AIMEMORY_SYSTEM_PROMPT="长" * 800,
    )

    log = result.stdout + result.stderr
    assert result.returncode != 0
    assert "nonebot-plugin-aimemory 启动失败，机器人不启动" in log
    assert "aimemory_max_context_tokens" in log


def test_bot_py_exits_non_zero_on_a_startup_failure_under_a_driver_that_returns(
    tmp_path: Path,
) -> None:
    shutil.copy(ROOT / "bot.py", tmp_path / "bot.py")
    shutil.copy(ROOT / ".env.example", tmp_path / ".env.example")

    result = run_python(
        ["bot.py"],
        tmp_path,
        AIMEMORY_API_KEY="sk-test",
        AIMEMORY_MAX_CONTEXT_TOKENS="1024",
        AIMEMORY_SYSTEM_PROMPT="长" * 800,
    )  # DRIVER=~none: its run() returns when startup fails

    log = result.stdout + result.stderr
    assert result.returncode == 1
    assert "nonebot-plugin-aimemory 启动失败，机器人不启动" in log
    assert "aimemory_max_context_tokens" in log


async def test_bot_py_answers_over_a_real_reverse_websocket_and_remembers_across_a_restart(
    tmp_path: Path, llm: FakeOpenAI
) -> None:
    at_bot = {"type": "at", "data": {"qq": "10000"}}
    llm.script(text("你好，小明！"), text("你叫小明。"))

    async with bot_process(tmp_path, llm) as bot:
        await bot.ws.send(group_event(1, [at_bot, {"type": "text", "data": {"text": " 我叫小明"}}]))
        first = await bot.next_send(answer=True)
        await bot.stop()
    async with bot_process(tmp_path, llm) as bot:
        await bot.ws.send(group_event(2, [at_bot, {"type": "text", "data": {"text": " 我叫什么"}}]))
        second = await bot.next_send(answer=True)
        await bot.stop()

    assert first["message"][-1] == {"type": "text", "data": {"text": "你好，小明！"}}
    assert second["message"][-1] == {"type": "text", "data": {"text": "你叫小明。"}}
    history = [str(m["content"]) for m in llm.last_messages()]
    assert any("我叫小明" in line for line in history)
    assert any("你好，小明！" in line for line in history)


# A `.env` as `python bot.py` leaves beside bot.py, with values that would each break a
# test if the test bot read them: no access token (the refused-connection test), an empty
# command prefix (the other-plugins tests), another matcher priority (the propagation test).
HOSTILE_ENV = (
    "ONEBOT_ACCESS_TOKEN=\n"
    'COMMAND_START=[""]\n'
    "AIMEMORY_MATCHER_PRIORITY=99\n"
    "AIMEMORY_API_KEY=x\n"
    "SUPERUSERS=[]\n"
    "LOG_LEVEL=DEBUG\n"
)
SENSITIVE_TESTS = (
    "tests/onebot/test_reverse_ws.py::test_connection_without_the_access_token_is_refused",
    "tests/onebot/test_other_plugins.py::test_a_private_status_command_gets_only_the_other_plugins_reply",
    "tests/onebot/test_propagation.py::test_with_no_matcher_after_ours_a_message_for_the_bot_is_still_answered",
)


def test_the_tests_read_no_env_file_from_the_working_directory(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text(HOSTILE_ENV, encoding="utf-8")
    (tmp_path / ".env.prod").write_text(HOSTILE_ENV, encoding="utf-8")

    # A few tests the hostile values would break, run from the folder holding them (not
    # this module: no recursion).
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-c",
            str(ROOT / "pyproject.toml"),
            "--rootdir",
            str(ROOT),
            *(str(ROOT / test) for test in SENSITIVE_TESTS),
        ],
        cwd=tmp_path,
        env=child_environment(),
        capture_output=True,
        text=True,
        timeout=300,
    )

    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert f"{len(SENSITIVE_TESTS) + 1} passed" in result.stdout  # no-token and wrong-token


def test_the_matcher_runs_at_the_configured_priority(tmp_path: Path) -> None:
    script = LOAD_AND_REPORT + (
        "from nonebot_plugin_aimemory import chat_matcher\n"
        "print('PRIORITY', chat_matcher.priority, chat_matcher.block)\n"
    )

    result = run_python(["-c", script], tmp_path, AIMEMORY_MATCHER_PRIORITY="5")

    assert "PRIORITY 5 False" in result.stdout, result.stdout[-2000:] + result.stderr[-2000:]


def test_bot_py_masks_keys_and_tokens_in_nonebots_debug_dump_of_its_config(
    tmp_path: Path,
) -> None:
    shutil.copy(ROOT / "bot.py", tmp_path / "bot.py")
    secrets = {
        "AIMEMORY_API_KEY": "sk-sentinel-main-key",
        "AIMEMORY_REVIEW_API_KEY": "sk-sentinel-review-key",
        "AIMEMORY_PANEL_TOKEN": "sentinel-panel-token-0123",
        "ONEBOT_ACCESS_TOKEN": "sentinel-onebot-token",
    }
    (tmp_path / ".env").write_text(
        "LOG_LEVEL=DEBUG\n" + "".join(f"{key}={value}\n" for key, value in secrets.items()),
        encoding="utf-8",
    )

    # Stopped right after startup: the budget cannot hold the system prompt.
    result = run_python(
        ["bot.py"],
        tmp_path,
        AIMEMORY_MAX_CONTEXT_TOKENS="1024",
        AIMEMORY_SYSTEM_PROMPT="长" * 800,
    )

    log = result.stdout + result.stderr
    assert "Loaded Config" in log, log[-2000:]
    assert "'aimemory_api_key': '**********'" in log
    assert "'log_level': 'DEBUG'" in log  # the rest as it was
    for secret in secrets.values():
        assert secret not in log


async def test_the_first_start_of_bot_py_without_a_key_runs_and_says_what_to_fill_in(
    tmp_path: Path, llm: FakeOpenAI
) -> None:
    from nonebot_plugin_aimemory import texts

    at_bot = {"type": "at", "data": {"qq": "10000"}}
    # No key and no API base: the provider's (OpenAI's) address, which needs a key.
    async with bot_process(tmp_path, llm, AIMEMORY_API_KEY="", AIMEMORY_API_BASE="") as bot:
        await bot.ws.send(group_event(1, [at_bot, {"type": "text", "data": {"text": " 在吗"}}]))
        answer = await bot.next_send()
        port = bot.port
    log_file = tmp_path / "bot.log"
    output = log_file.read_text("utf-8")
    env_file = tmp_path / ".env"  # pytest gives it resolved, as bot.py reads its folder
    assert env_file.exists()  # written from .env.example
    assert f"已创建配置文件 {env_file}" in output
    (notice,) = [line for line in output.splitlines() if "机器人已启动" in line]
    assert f"在 .env 文件（{env_file}）里填上 AIMEMORY_API_KEY=" in notice
    assert f"ws://127.0.0.1:{port}/onebot/v11/ws" in notice
    assert answer["message"][-1] == {"type": "text", "data": {"text": texts.NOT_CONFIGURED}}


async def test_every_start_says_where_to_connect_which_model_where_the_data_is_and_the_panel(
    tmp_path: Path, llm: FakeOpenAI
) -> None:
    # First without the panel: the line says how to turn it on.
    async with bot_process(tmp_path, llm, AIMEMORY_MODEL="qwen-plus") as bot:
        port = bot.port
    lines = (tmp_path / "bot.log").read_text("utf-8").splitlines()

    def line_with(text: str) -> str:
        (found,) = [line for line in lines if text in line]
        assert "INFO" in found
        return found

    onebot = line_with("OneBot 客户端连接地址（反向 WebSocket）")
    assert f"ws://127.0.0.1:{port}/onebot/v11/ws" in onebot
    assert "已设置访问令牌 ONEBOT_ACCESS_TOKEN" in onebot
    assert "qwen-plus" in line_with("回答用的模型")
    assert str(tmp_path / "aimemory.db") in line_with("数据保存在 SQLite 文件")
    assert "AIMEMORY_PANEL_TOKEN=" in line_with("网页面板：未开启")
    assert f"http://127.0.0.1:{port}/aimemory/try" in line_with("网页面板：未开启")
    # Then with a panel password and no OneBot token.
    secret = "a-panel-password-of-16+"
    async with bot_process(
        tmp_path, llm, AIMEMORY_PANEL_TOKEN=secret, ONEBOT_ACCESS_TOKEN=""
    ) as bot:
        port = bot.port
    lines = (tmp_path / "bot.log").read_text("utf-8").splitlines()
    assert f"http://127.0.0.1:{port}/aimemory" in line_with("网页面板：")
    assert f"http://127.0.0.1:{port}/aimemory/try" in line_with("网页面板：")
    assert "未设置访问令牌" in line_with("OneBot 客户端连接地址")
    assert all(secret not in line for line in lines)
