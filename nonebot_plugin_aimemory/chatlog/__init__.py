"""The chat log: every line of the chats the bot is in, written in batches and kept for the
retention period (`writer`), searched by words and by vectors (`search`, `vectors`), recalled
for an addressed message (`recall`), offered to the model as tools (`tools`), and reviewed
in the background into long-term memories (`reviewer`, `scheduler`, `commands`); when it is
off, a null object with the same interface (`feature`). Other packages import what they use
from here."""

from __future__ import annotations

from .commands import ReviewCommands, ReviewsUnavailable
from .feature import ChatLogOff, RecordedChat, ReviewsOff
from .recall import RecalledLines
from .reviewer import MemoryReviewer
from .scheduler import ReviewScheduler
from .vectors import row_vectors
from .writer import ChatLog, NoReviewMarks

__all__ = [
    "ChatLog",
    "ChatLogOff",
    "MemoryReviewer",
    "NoReviewMarks",
    "RecalledLines",
    "RecordedChat",
    "ReviewCommands",
    "ReviewScheduler",
    "ReviewsOff",
    "ReviewsUnavailable",
    "row_vectors",
]
