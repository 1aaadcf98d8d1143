"""A bot process of bench/footprint.py: NoneBot on 127.0.0.1:PORT with OneBot v11 and the
plugin, a minimal matcher (the baseline) or llmchat (run by its venv's Python, so nothing else
of the repository is imported). Usage: python -m bench.footprint_child plugin|bare|llmchat PORT
"""

from __future__ import annotations

import sys
from pathlib import Path

import nonebot
from nonebot.adapters.onebot.v11 import Adapter as OneBotV11Adapter

PLUGIN, PEER_PLUGIN = "nonebot_plugin_aimemory", "nonebot_plugin_llmchat"
KINDS = ("plugin", "bare", "llmchat")
ROOT = Path(__file__).resolve().parents[1]


def load_the_plugin() -> None:
    """Load this tree's plugin; one that fails to load or start ends the process, as in bot.py."""
    plugin = nonebot.load_plugin(PLUGIN)
    if plugin is None:
        raise SystemExit(f"{PLUGIN} failed to load (see the error above)")
    # A copy installed in site-packages would be measured instead of this tree's code.
    loaded_from = Path(plugin.module.__file__ or "").resolve()
    if not loaded_from.is_relative_to(ROOT):
        raise SystemExit(f"{PLUGIN} was imported from {loaded_from}, not from {ROOT}")
    startup_failure = plugin.module.startup_failure

    @nonebot.get_driver().on_startup
    async def _check_the_plugin_started() -> None:
        if (failure := startup_failure()) is not None:
            raise RuntimeError(f"{PLUGIN} did not start: {failure}")


def add_minimal_matcher() -> None:
    """The baseline: one matcher replying "收到" to messages to the bot, shaped like the plugin's
    (no rule, a handler checking `to_me` itself), so the difference is the plugin's."""
    from nonebot.matcher import current_event

    reply = nonebot.on_message(priority=90, block=False)

    @reply.handle()
    async def _received() -> None:
        if current_event.get().is_tome():
            await reply.finish("收到")


def main() -> None:
    """Start the bot of `sys.argv[1]` on port `sys.argv[2]`."""
    if len(sys.argv) != 3 or sys.argv[1] not in KINDS:
        raise SystemExit(f"usage: python -m bench.footprint_child {'|'.join(KINDS)} PORT")
    kind, port = sys.argv[1], int(sys.argv[2])
    nonebot.init(
        driver="~fastapi+~httpx+~websockets", host="127.0.0.1", port=port, command_start={"/", "~"}
    )
    nonebot.get_driver().register_adapter(OneBotV11Adapter)
    if kind == "plugin":
        load_the_plugin()
    elif kind == "bare":
        add_minimal_matcher()
    else:  # the peer; like the plugin, one that fails to load ends the process
        if nonebot.load_plugin(PEER_PLUGIN) is None:
            raise SystemExit(f"{PEER_PLUGIN} failed to load (see the error above)")
        if PLUGIN in sys.modules:
            raise SystemExit(f"the peer bot imported {PLUGIN}: its figures would not be its own")
    nonebot.run()


if __name__ == "__main__":
    main()
