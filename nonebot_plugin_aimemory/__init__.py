"""nonebot-plugin-aimemory: an AI companion for QQ that remembers."""

from __future__ import annotations

import logging
from pathlib import Path

from nonebot import get_driver, get_plugin_config, logger, require
from nonebot.adapters import Bot as BaseBot
from nonebot.adapters.onebot.v11 import Bot as OneBotBot
from nonebot.log import LoguruHandler
from nonebot.plugin import PluginMetadata
from pydantic import ValidationError

from .tool_process import started_as_migration_tool as _started_as_migration_tool

if _started_as_migration_tool():
    # `python -m nonebot_plugin_aimemory.migrate` imports this package before the tool runs,
    # in a process with no bot: NoneBot is set up first, reading the bot's .env, so the
    # tool finds the database the bot is configured with; its console masks secrets as
    # bot.py's does.
    import nonebot

    from .secret_masking import mask_secrets_in_the_console

    mask_secrets_in_the_console()
    nonebot.init(driver="~none")

require("nonebot_plugin_localstore")

from .config import Config, ConfigError, describe_validation_error  # noqa: E402
from .deferred_start import deferred_start  # noqa: E402
from .engine import Tool, ToolError  # noqa: E402
from .onebot import ChatNames  # noqa: E402
from .onebot.matcher import register_matcher  # noqa: E402
from .panel import PanelData, mount_panel  # noqa: E402
from .runtime import Extensions, Runtime, current_runtime, install_runtime  # noqa: E402
from .startup_lines import startup_lines  # noqa: E402
from .store.opening import DatabaseUnreachable  # noqa: E402
from .text import jieba_cuts  # noqa: E402

__all__ = [
    "Config",
    "Extensions",
    "Runtime",
    "Tool",
    "ToolError",
    "current_runtime",
    "pre_compact",
    "register_tool_provider",
    "startup_failure",
    "unregister_tool_provider",
]

__plugin_meta__ = PluginMetadata(
    name="AI 记忆聊天",
    description="会记事的 AI 聊天伙伴：群聊 @ 或私聊即可对话，上下文持久保存",
    usage=(
        "群里 @机器人、回复它或以昵称开头说话；私聊直接发消息。\n"
        "~对话 状态 | 清空 | 停止\n"
        "~记忆 列表 [页码] | 搜索 <词> | 删除 <编号> | 恢复 <编号> | 清空 | 状态\n"
        "~记忆 开启 | 关闭 | 间隔 <秒> | 立即生成（后台整理）\n"
        "~记忆 我的 | 我的 删除/公开/私密 <编号> | 我的 清空\n"
        "~人设 列表 | 当前 | 切换 <名字>"
    ),
    type="application",
    homepage="https://github.com/nonebot-plugin-aimemory/nonebot-plugin-aimemory",
    config=Config,
    supported_adapters={"~onebot.v11"},
)

# An invalid value fails this plugin's import with a ConfigError naming the key: NoneBot's
# loader logs it and skips this plugin alone (bot.py then refuses to start).
try:
    plugin_config = get_plugin_config(Config)
except ValidationError as error:
    _problem = f"nonebot-plugin-aimemory: invalid configuration: {describe_validation_error(error)}"
    logger.error(_problem)
    raise ConfigError(_problem) from None

# Engine modules log through the standard library; show them in NoneBot's console.
_engine_logger = logging.getLogger("nonebot_plugin_aimemory")
if not any(isinstance(h, LoguruHandler) for h in _engine_logger.handlers):
    _engine_logger.addHandler(LoguruHandler())
    _engine_logger.setLevel(logging.INFO)
    _engine_logger.propagate = False

# The one matcher, handed the configured priority and the runtime in use.
chat_matcher = register_matcher(plugin_config.aimemory_matcher_priority, current_runtime)

# The plugin's registry of what other plugins add; each Runtime it starts uses it.
extensions: Extensions[Runtime] = Extensions()
pre_compact = extensions.pre_compact
register_tool_provider = extensions.register_tool_provider
unregister_tool_provider = extensions.unregister_tool_provider

driver = get_driver()


def default_db_path() -> str:
    """The database file: `aimemory_db_path`, or one in localstore's data directory."""
    if plugin_config.aimemory_db_path:
        return plugin_config.aimemory_db_path
    from nonebot.plugin import get_plugin_by_module_name
    from nonebot_plugin_localstore import get_data_file, get_plugin_data_file
    from nonebot_plugin_localstore.config import Config as LocalstoreConfig

    if get_plugin_by_module_name(__name__) is not None:
        return str(get_plugin_data_file("aimemory.db"))
    # Imported, not loaded as a plugin (the migration tool): localstore cannot tell whose
    # directory is asked for, so it is named, as the bot's plugin id (its module's name).
    overrides = get_plugin_config(LocalstoreConfig).localstore_plugin_data_dir
    if __name__ in overrides:
        return str(overrides[__name__] / "aimemory.db")
    return str(get_data_file(__name__, "aimemory.db"))


def default_personas_dir() -> Path:
    """Persona files: a `personas` folder in localstore's data directory (created empty;
    `aimemory_personas_dir` overrides it, see Runtime.start)."""
    from nonebot_plugin_localstore import get_plugin_data_dir

    return get_plugin_data_dir() / "personas"


_startup_failure: ConfigError | None = None


def startup_failure() -> ConfigError | None:
    """Why the plugin did not start: a setting found invalid at startup (a budget too small
    for the system prompt), or None. The plugin then stays off and the bot runs on."""
    return _startup_failure


@driver.on_startup
async def _start_runtime() -> None:
    """Start the runtime; an invalid setting found now leaves this plugin off, logged, and
    lets the startup of the user's other plugins go on (a hook that raises stops them all)."""
    global _startup_failure
    from nonebot_plugin_localstore import get_plugin_cache_dir

    jieba_cuts.use_cache_dir(get_plugin_cache_dir())  # jieba's cache, not in the system temp
    _startup_failure = None
    try:
        runtime = await _runtime_started()
    except ConfigError as error:
        _startup_failure = error
        logger.error("{}; the plugin is off until this is fixed", error)
        return
    except DatabaseUnreachable as error:
        # PostgreSQL not there yet: the bot goes on, this plugin starts when it comes.
        deferred_start().begin(_runtime_started, _install, error)
        return
    _install(runtime)


async def _runtime_started() -> Runtime:
    return await Runtime.start(plugin_config, default_db_path(), extensions, default_personas_dir())


def _install(runtime: Runtime) -> None:
    """The started runtime answers from now on; the panel is mounted."""
    install_runtime(runtime)
    logger.info("nonebot-plugin-aimemory started (model {})", plugin_config.aimemory_model)
    onebot_url = _onebot_url()
    if notice := plugin_config.first_start_notice(_env_file_in_use(), onebot_url):
        logger.warning(notice)
    _mount_panel_once()
    for line in startup_lines(
        plugin_config,
        onebot_url=onebot_url,
        access_token_set=_access_token_set(),
        database=str(getattr(runtime.database, "path", "")) if runtime.persistent else None,
        panel_url=_served_url(plugin_config.aimemory_panel_path, "http"),
    ):
        logger.info(line)


def _env_file_in_use() -> Path | None:
    """The `.env` NoneBot read from the working directory, if there is one."""
    env_file = Path(".env").resolve()
    return env_file if env_file.is_file() else None


def _onebot_url() -> str | None:
    """Where a OneBot implementation connects (reverse WebSocket), when NoneBot serves."""
    return _served_url("/onebot/v11/ws", "ws")


def _served_url(path: str, scheme: str) -> str | None:
    """`path` on NoneBot's server, when the driver serves one."""
    from nonebot.drivers import ASGIMixin

    if not isinstance(driver, ASGIMixin):
        return None
    host = str(driver.config.host)
    host = f"[{host}]" if ":" in host else host
    return f"{scheme}://{host}:{driver.config.port}{path}"


def _access_token_set() -> bool:
    """Whether the OneBot adapter asks its clients for an access token."""
    from nonebot.adapters.onebot.v11.config import Config as OneBotConfig

    return bool(get_plugin_config(OneBotConfig).onebot_access_token)


# The web panel's routes are added to NoneBot's app once per process; they read the runtime
# in use at each request. None: not mounted (off, or no FastAPI driver).
_panel: PanelData | None = None
_panel_names = ChatNames()
_panel_mounted = False


def _mount_panel_once() -> None:
    global _panel, _panel_mounted
    if not _panel_mounted:
        _panel_mounted = True
        _panel = mount_panel(plugin_config, _panel_names, current_runtime)


@driver.on_bot_connect
async def _account_connected(bot: BaseBot) -> None:
    """The first account to connect to a database becomes its home account (its keys stay
    bare: onebot/accounts.py), before any message of any account is stored."""
    runtime = current_runtime()
    if runtime is not None and isinstance(bot, OneBotBot):
        await runtime.inbound.account_connected(bot.self_id)
        if runtime.inbound.accounts.serves(bot.self_id):
            runtime.running.serve(bot.self_id)


@driver.on_shutdown
async def _stop_runtime() -> None:
    await deferred_start().cancel()
    runtime = current_runtime()
    install_runtime(None)
    await _panel_names.close()
    if _panel is not None:
        await _panel.close()
    if runtime is not None:
        await runtime.stop()
