"""The forms of a message the model reads: the one-line form of chat-log lines and quoted
forwards (line breaks shown as a mark, so that every line starts with its own time or
speaker), and the marks a quoted message and a forwarded record start with (written by the
adapter, read back by the memory attribution)."""

from __future__ import annotations

import re

from .encodable import encodable

LINE_BREAK_MARK = " ⏎ "
# `[引用 小明(12345)：…]` before the sender's own words; the bot's own message is quoted
# as `[引用 机器人：…]`.
QUOTE_OPENING = "[引用 "
QUOTE_SPEAKER_END = "："
QUOTE_CLOSING = "]"
BOT_NAME = "机器人"
# A forwarded record: this line, then one `名字：内容` line per message.
FORWARD_MARKER = "[合并转发的聊天记录]"

# A person as lines and notes write them, `名字(QQ号)` (a QQ number has 5 to 11 digits; a
# year in brackets has 4), and the number's part alone.
QQ_IN_BRACKETS = r"[(（]\d{5,11}[)）]"
PERSON_WITH_QQ = r"[^\s()（）：:\[\]，,。！!？?]{1,32}" + QQ_IN_BRACKETS
# Someone named with their QQ number, as the plugin writes speakers: "小明(20001)".
NAMED_PERSON = re.compile(PERSON_WITH_QQ)

# A name is shown inside `[时间] 名字(QQ号)：` (and a memory's `名字(QQ号) 说`): the marks of
# that line, written the full-width way, so a card cannot end its own line early or imitate
# another speaker's.
_LINE_MARKS = str.maketrans({"[": "［", "]": "］", "(": "（", ")": "）", ":": "∶", "：": "∶"})


def name_on_one_line(raw: str) -> str:
    """A person's name on one line, whitespace folded, the marks of a speaker line written
    the full-width way (storable: see encodable.py)."""
    return " ".join(encodable(raw).split()).translate(_LINE_MARKS)
