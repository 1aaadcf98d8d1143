"""What a small model says back of the request before its answer. Asked for an answer with
its tool results told as text, Qwen2.5-Coder-1.5B wrote the whole request again (the
results' header, the chat log a tool read, the quoted note) and then "【你的回复】我开的是
一辆汽车来着。" (issue #36); what the plugin cut of its framing left the copied lines, the
member got them, and the window kept a reply whose shape the model copied in every later
turn. The answer is what follows the copy, less the 【label】 the model put before it."""

from __future__ import annotations

import re

# A copied line counts from this many characters: shorter ones ("豆包", "好的") are as
# likely the answer's own words as a copy.
MIN_COPIED_LINE_CHARS = 6
# A prefix this long at least, in characters, is a copy of the request and not an answer
# that quotes a word of it before going on.
MIN_ECHO_CHARS = 24
# The label a model puts before its answer once it has written the request out.
_LEADING_LABEL = re.compile(r"^【[^】\n]{1,20}】\s*")


def answer_after_echo(reply: str, request: str, own: str = "") -> str:
    """`reply` without the lines it copied from `request` before saying anything of its
    own, and without the 【label】 it put before that. `reply` as it is when it starts with
    no copy, or holds nothing but copies (a copy said back is judged on its own, as a
    copied result: answer_notes.py). A line of the member's `own` message is no copy: an
    answer may give a member's lines back ("帮我检查这段有没有错别字"), and only what the
    plugin added around them is the request's; they belong to the echo only when a
    【label】 follows them, as the answer's start."""
    lines = reply.splitlines()
    copied_chars = 0
    owns_from: int | None = None  # where the member's own lines began after the copy
    for index, line in enumerate(lines):
        stripped = line.strip()
        if not stripped:
            continue
        if stripped in own:
            owns_from = index if owns_from is None else owns_from
            continue
        if _copied(stripped, request) and owns_from is None:
            copied_chars += len(stripped)
            continue
        if copied_chars < MIN_ECHO_CHARS:
            return reply
        labelled = _LEADING_LABEL.match(stripped) is not None
        start = index if owns_from is None or labelled else owns_from
        rest = "\n".join(lines[start:]).strip()
        return _LEADING_LABEL.sub("", rest, count=1).strip() or reply
    return reply


def _copied(line: str, request: str) -> bool:
    """Whether `line` stands in `request` word for word (a short line never counts)."""
    return len(line) >= MIN_COPIED_LINE_CHARS and line in request
