"""Everything that knows OneBot v11. This face offers the inbound side: events read into
`Incoming` (`inbound`), the accounts, the chat names the panel shows, and the limits inbound
text is cut to. The matcher and the outbound side (`matcher`, `outbound`, `parts`) stand on
layers above it, so they are imported from their own modules."""

from __future__ import annotations

from .accounts import Accounts
from .content import QUOTE_MAX_CHARS
from .inbound import MAX_FINGERPRINT_CHARS, Inbound, parse_command
from .names import ChatNames
from .pastes import MAX_PASTE_CHARS, omission_note
from .segments import plain_at_text

__all__ = [
    "MAX_FINGERPRINT_CHARS",
    "MAX_PASTE_CHARS",
    "QUOTE_MAX_CHARS",
    "Accounts",
    "ChatNames",
    "Inbound",
    "omission_note",
    "parse_command",
    "plain_at_text",
]
