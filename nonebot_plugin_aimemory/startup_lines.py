"""What the operator reads at every start, one line each, in Chinese: where the OneBot
client connects (and whether it needs a token), which model answers, where the data is
kept, and whether the web panel is on (and how to turn it on, to try the bot without QQ on
its try page): the next step is always on the screen."""

from __future__ import annotations

from .config import Config
from .providers import DEFAULT_PROVIDER
from .store import redacted

PANEL_OFF = (
    "网页面板：未开启。想不用 QQ 先在浏览器里和机器人聊聊，或查看会话、管理记忆和用量，"
    "就在 .env 里设置 AIMEMORY_PANEL_TOKEN=至少 16 位的密码，重启后打开 {url}/try 试聊"
    "（面板首页是 {url}）"
)


def startup_lines(
    config: Config,
    *,
    onebot_url: str | None,
    access_token_set: bool,
    database: str | None,
    panel_url: str | None,
) -> list[str]:
    """The lines; `database` is where the data is kept (the SQLite file, or the server's
    URL without its password; None: in memory only), `panel_url` where NoneBot serves the
    panel's path (None when it serves no HTTP)."""
    return [
        _onebot_line(onebot_url, access_token_set),
        _model_line(config),
        _database_line(config, database),
        _panel_line(config, panel_url),
    ]


def _onebot_line(url: str | None, access_token_set: bool) -> str:
    if url is None:
        return "OneBot：当前 DRIVER 不提供反向 WebSocket 服务（需要 ~fastapi 或 ~websockets）"
    token = (
        "已设置访问令牌 ONEBOT_ACCESS_TOKEN，客户端要填同一个"
        if access_token_set
        else "未设置访问令牌（ONEBOT_ACCESS_TOKEN），只在本机或可信网络里这样用"
    )
    return f"OneBot 客户端连接地址（反向 WebSocket）：{url}；{token}"


def _model_line(config: Config) -> str:
    main = config.endpoint("main")
    provider = config.aimemory_provider or DEFAULT_PROVIDER
    return f"回答用的模型：{main.model}（{provider}，{main.api_base}）"


def _database_line(config: Config, database: str | None) -> str:
    if database is None:
        return "数据只在内存里，重启后清空（没有打开数据库）"
    if config.aimemory_database_url.get_secret_value():
        return f"数据保存在 PostgreSQL：{redacted(database)}"
    return f"数据保存在 SQLite 文件：{database}"


def _panel_line(config: Config, panel_url: str | None) -> str:
    base = panel_url or config.aimemory_panel_path
    if not config.aimemory_panel_token.get_secret_value():
        return PANEL_OFF.format(url=base)
    if panel_url is None:
        return "网页面板：已设置密码，但当前 DRIVER 不提供网页服务（需要 ~fastapi）"
    return f"网页面板：{panel_url}（用 AIMEMORY_PANEL_TOKEN 登录）；不用 QQ 试聊：{panel_url}/try"
