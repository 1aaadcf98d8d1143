"""The panel's try page as an adapter of its own, beside onebot/: the operator speaks as
made-up people in made-up chats (members.py, ids no QQ event can carry), each message read
as QQ's are (inbound.py) and answered by the same conversation (chat.py); a test chat can
be cleared to try again (clearing.py). No web framework here: panel/try_routes.py serves it.

This face offers the made-up members, which every chat list reads; the page's chat, inbound
and clearing load only when the page is used, so they are imported from their modules."""

from __future__ import annotations

from .members import MEMBERS, TEST_GROUP, chat_title, is_test_chat, speakers_of

__all__ = ["MEMBERS", "TEST_GROUP", "chat_title", "is_test_chat", "speakers_of"]
