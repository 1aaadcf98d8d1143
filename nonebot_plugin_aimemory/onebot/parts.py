"""The OneBot side of the plugin, built over what it shares with the rest: events to model
input, replies to OneBot messages."""

from __future__ import annotations

from ..config import Config
from ..media import ImageReader
from ..store import SentMessages
from .accounts import Accounts
from .content import ContentRenderer
from .inbound import Inbound
from .members import MemberNames
from .outbound import Outbound, ReplyBuilder


def onebot_parts(
    config: Config, images: ImageReader, sent: SentMessages, accounts: Accounts
) -> tuple[Inbound, Outbound]:
    """Inbound and outbound, sharing what they know of group members' names and where the
    bot's messages were sent (for quotes)."""
    members = MemberNames()
    inbound = Inbound(config, ContentRenderer(images, members, sent), accounts)
    outbound = Outbound(
        ReplyBuilder(images, members, public_only=not config.aimemory_reply_image_allow_private),
        sent,
        max_chars=config.aimemory_reply_max_chars,
        max_parts=config.aimemory_reply_max_parts,
    )
    return inbound, outbound
