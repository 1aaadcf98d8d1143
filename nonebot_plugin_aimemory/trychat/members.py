"""The try page's made-up people and chats: three members, each with a private chat with the
bot, and one test group they are all in. Their ids are of the range no QQ event can carry
(scopes.TEST_ID_FLOOR), so their windows, memories, chat log and usage live beside the
real chats' and never mix with them."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from ..scopes import Scope

# Plainly made up, and all above scopes.TEST_ID_FLOOR (2**64 = 18446744073709551616).
TEST_GROUP_ID = "90000000000000000001"
TEST_GROUP_NAME = "测试群"


class Role(str, Enum):
    """A member's place in the test group, as QQ has them."""

    OWNER = "owner"
    ADMIN = "admin"
    MEMBER = "member"

    @property
    def label(self) -> str:
        """The role as QQ shows it."""
        return {"owner": "群主", "admin": "管理员", "member": "群员"}[self.value]


@dataclass(frozen=True, slots=True)
class TestMember:
    """A made-up person the operator may speak as."""

    user_id: str
    name: str
    role: Role

    @property
    def manages_group(self) -> bool:
        """Whether they may manage the test group (its owner and admin)."""
        return self.role is not Role.MEMBER

    @property
    def private_chat(self) -> Scope:
        """Their private chat with the bot."""
        return Scope.friend(self.user_id)


MEMBERS = (
    TestMember("90000000000000000011", "小明", Role.OWNER),
    TestMember("90000000000000000012", "小红", Role.ADMIN),
    TestMember("90000000000000000013", "小刚", Role.MEMBER),
)
TEST_GROUP = Scope.group(TEST_GROUP_ID)


def member(user_id: str) -> TestMember | None:
    """The made-up member with this id, or None."""
    return next((m for m in MEMBERS if m.user_id == user_id), None)


def test_chats() -> list[Scope]:
    """Every chat the try page offers: the test group, then each member's private chat."""
    return [TEST_GROUP, *(m.private_chat for m in MEMBERS)]


def is_test_chat(scope: Scope) -> bool:
    """Whether the try page may chat in `scope` (any persona's part of one of its chats)."""
    return scope.chat in test_chats()


def chat_title(scope: Scope) -> str | None:
    """How the pages name a made-up chat or person; None for any other scope."""
    if scope.log_chat == TEST_GROUP:
        return TEST_GROUP_NAME
    found = member(scope.id) if not scope.is_group else None
    if found is None:
        return None
    return f"{found.name}（私聊）" if scope.is_friend else found.name


def speakers_of(scope: Scope) -> tuple[TestMember, ...]:
    """Who may speak in a test chat: every member in the group, the one in a private chat."""
    if scope.is_group:
        return MEMBERS
    found = member(scope.id)
    return (found,) if found is not None else ()
