"""Two bot accounts in the panel's tests: account 42 claims the home account first (its
keys stay bare), account 43's keys carry `@43`; messages as each one received them, and the
group's name as the bots report it."""

from __future__ import annotations

from tests.fakes.bots import RecordingBot
from tests.fakes.events import group_message
from tests.fakes.openai_server import text

HOME = "42"
SECOND = "43"
GROUP = "g:111"
SECONDS_WINDOW = "g:111@43"
GROUP_NAME = "爬山小队"


class GroupNames:
    """The group's name as the bots report it (under the chat's own key)."""

    def name(self, chat_key: str) -> str | None:
        return GROUP_NAME if chat_key == GROUP else None


def heard_by(account: str, said: str, *, group_id: int = 111, user_id: int = 2001):
    """A group message addressed to the bot, as `account` received it."""
    event = group_message(said, group_id=group_id, to_me=True, user_id=user_id)
    return event.model_copy(update={"self_id": int(account)})


async def talk(
    plugin, account: str, said: str, reply: str, *, group_id: int = 111, user_id: int = 2001
) -> None:
    plugin.llm.script(text(reply))
    await RecordingBot(account).receive(heard_by(account, said, group_id=group_id, user_id=user_id))
