"""Start a NoneBot instance with the OneBot v11 adapter and nonebot-plugin-aimemory.

Configuration comes from `.env` next to this file (created from `.env.example` on first
start); the OneBot implementation (NapCat, Lagrange, LLOneBot…) connects to
ws://HOST:PORT/onebot/v11/ws as a reverse WebSocket. Install the drivers it runs on with
`python -m pip install ".[bot]"`.

In a bot of your own an invalid AIMEMORY_* value only switches this plugin off (NoneBot logs
why and runs the other plugins); this bot exists for the plugin, so it refuses to start
instead, with the reason and exit code 1.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import nonebot
from nonebot.adapters.onebot.v11 import Adapter as OneBotV11Adapter
from nonebot.log import logger

if TYPE_CHECKING:
    from loguru import Message
    from nonebot.plugin import Plugin

HERE = Path(__file__).resolve().parent
PLUGIN = "nonebot_plugin_aimemory"


def ensure_env_file() -> None:
    """First start: copy .env.example to .env so there is one file to edit."""
    env, example = HERE / ".env", HERE / ".env.example"
    if not env.exists() and example.exists():
        shutil.copyfile(example, env)
        print(
            f"已创建配置文件 {env}（复制自 .env.example），机器人照常启动；"
            "填写 AIMEMORY_API_KEY 等配置后重启。"
        )


def mask_secrets_in_the_console() -> None:
    """NoneBot logs its whole configuration at LOG_LEVEL=DEBUG, `.env`'s keys and tokens
    as typed: masked as the plugin's migration tool masks them (secret_masking.py). That
    module is loaded from its file: importing it by name would import the plugin before
    NoneBot is set up, and NoneBot refuses to load a plugin imported before it."""
    package = importlib.util.find_spec(PLUGIN)  # finds the package, runs none of it
    if package is None or not package.submodule_search_locations:
        raise SystemExit(f"{PLUGIN} is not installed: python -m pip install .")
    path = Path(package.submodule_search_locations[0]) / "secret_masking.py"
    spec = importlib.util.spec_from_file_location(f"{PLUGIN}_secret_masking", path)
    assert spec is not None
    assert spec.loader is not None
    masking = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(masking)
    masking.mask_secrets_in_the_console()


def load_plugin_or_exit() -> Plugin:
    """Load the plugin, or exit with the reason it did not load: NoneBot logs the error
    and goes on without the plugin, which for this bot would be a bot that never answers."""
    errors: list[BaseException] = []

    def keep_error(message: Message) -> None:
        exception = message.record["exception"]
        if exception is not None and exception.value is not None:
            errors.append(exception.value)

    sink = logger.add(keep_error, level="ERROR", format="{message}")
    try:
        plugin = nonebot.load_plugin(PLUGIN)
    finally:
        logger.remove(sink)
    if plugin is None:
        reason = str(errors[0]) if errors else "见上面的错误信息"
        raise SystemExit(f"nonebot-plugin-aimemory 加载失败，机器人不启动。原因：{reason}")
    return plugin


def refuse_to_run_without_the_plugin(plugin: Plugin) -> None:
    """Stop startup when the plugin found an invalid setting while starting (a budget that
    cannot hold the system prompt); it registered its startup hook first, so it ran."""
    startup_failure = plugin.module.startup_failure

    @nonebot.get_driver().on_startup
    async def _check_the_plugin_started() -> None:
        if (failure := startup_failure()) is not None:
            raise RuntimeError(f"nonebot-plugin-aimemory 启动失败，机器人不启动。原因：{failure}")


if __name__ == "__main__":
    os.chdir(HERE)  # NoneBot reads .env from the working directory
    ensure_env_file()

mask_secrets_in_the_console()
nonebot.init()
nonebot.get_driver().register_adapter(OneBotV11Adapter)
aimemory = load_plugin_or_exit()
refuse_to_run_without_the_plugin(aimemory)

if __name__ == "__main__":
    nonebot.run()
    # A driver whose run() returns after a failed startup (~none): still a failed start.
    if aimemory.module.startup_failure() is not None:
        sys.exit(1)
