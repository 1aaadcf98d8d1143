"""Text that SQLite and UTF-8 can always store: OneBot implementations pass on half an
emoji (a lone surrogate) in names and messages, and one such character would make a whole
batch write fail."""

from __future__ import annotations

REPLACEMENT = "\ufffd"


def encodable(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD; a surrogate pair split over two
    code points (which some decoders produce) is joined into its character."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text
