"""Another plugin of the test bot: `/status`, answered the way nonebot-plugin-status does,
without blocking, so a matcher of a lower priority (ours, 90) still sees the message, as in
the bot of issue 23 where `/status` got two replies."""

from __future__ import annotations

from nonebot import on_command

STATUS_REPLY = "状态插件：CPU 3%"

status = on_command("status", priority=10, block=False)


@status.handle()
async def answer_status() -> None:
    """The status plugin's one reply."""
    await status.send(STATUS_REPLY)
