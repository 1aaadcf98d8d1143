"""Start a NoneBot instance with the OneBot v11 adapter and nonebot-plugin-aimemory.

Configuration comes from `.env` next to this file (created from `.env.example` on first
start); the OneBot implementation (NapCat, Lagrange, LLOneBot…) connects to
ws://HOST:PORT/onebot/v11/ws as a reverse WebSocket.
"""

import os
import shutil
from pathlib import Path

import nonebot
from nonebot.adapters.onebot.v11 import Adapter as OneBotV11Adapter

HERE = Path(__file__).resolve().parent


def ensure_env_file() -> None:
    """First start: copy .env.example to .env so there is one file to edit."""
    env, example = HERE / ".env", HERE / ".env.example"
    if not env.exists() and example.exists():
        shutil.copyfile(example, env)
        print(f"已创建配置文件 {env}，请填写 AIMEMORY_API_KEY 等配置后重启。")


if __name__ == "__main__":
    os.chdir(HERE)  # NoneBot reads .env from the working directory
    ensure_env_file()

nonebot.init()
nonebot.get_driver().register_adapter(OneBotV11Adapter)
if nonebot.load_plugin("nonebot_plugin_aimemory") is None:
    # The reason (for example an invalid AIMEMORY_* value, named) was logged above.
    raise SystemExit("nonebot-plugin-aimemory 加载失败，请查看上面的错误信息。")

if __name__ == "__main__":
    nonebot.run()
