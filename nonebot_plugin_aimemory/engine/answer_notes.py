"""The notes a turn adds, for one request only, when it asks the model for its answer
again: after a stock reply (stock_replies.py), and once it asks with fewer choices
(AnswerMode), since the same request would get the same nothing. The wording comes from
the plugin's prompts; empty notes ask again without a note (stock replies: not at all)."""

from __future__ import annotations

import logging
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from functools import cache

from .echoed_request import answer_after_echo
from .looping_reply import loops, without_repeated_lines
from .messages import Message
from .plain_request import ResultsFraming
from .stock_replies import copies_a_tool_result, is_stock_reply
from .text_tool_calls import is_bare_data, recover_text_tool_calls, without_tool_talk
from .turn_outcome import AnswerMode, TurnProgress

logger = logging.getLogger("nonebot_plugin_aimemory")


@dataclass(frozen=True, slots=True)
class AnswerNotes:
    """`repeat` follows a member's message whose answer repeated an earlier reply; `answer`
    goes on the last message of every request once the turn asks with fewer choices."""

    repeat: str = ""
    answer: str = ""
    # The shape of the line each message of the window starts with (`[时间] 昵称(QQ号)：`):
    # a small model starts its answer with one, copying what it sees above.
    copied_line_start: re.Pattern[str] | None = None
    # The lines the plugin frames quoted data with (the memory block's header and footer, the
    # tool results' openings and closings): a small model starts its answer with one, or
    # with its 【label】, as it copies the shape of what it read last.
    framing: tuple[str, ...] = ()
    # The marks of a memory's line (`(关于 20001)`, `（小明(20001) 说，12-07）`…), taken out of
    # an answer that copied a note, its words kept.
    note_marks: re.Pattern[str] | None = None
    # Open and close the turn's tool results told as text in its last request.
    results_opening: str = ""
    results_closing: str = ""

    @property
    def results_framing(self) -> ResultsFraming:
        """How the last request tells the turn's results (plain_request.py)."""
        return ResultsFraming(self.results_opening, self.results_closing, self.answer)

    def ask_plainer(self, progress: TurnProgress, key: str, why: str) -> None:
        """Ask the next requests one AnswerMode further down (LLMError after the last),
        with the answer note on their last message."""
        progress.ask_plainer(key, why)
        progress.answer_noted = bool(self.answer)

    def after_nothing(self, reply: Message, progress: TurnProgress, key: str) -> str:
        """What to answer when `reply` says nothing: the stock reply that was asked about
        again, once the plain request asking again said nothing either (a repeat says more
        than a notice); else '' and the next request asks one mode further down."""
        if progress.repeated and progress.mode.next() is None:
            logger.info("%s: nothing on asking again; answering with the first reply", key)
            return progress.repeated
        what = "only tool calls" if reply.tool_calls else "an empty answer"
        self.ask_plainer(progress, key, f"{what} after {progress.rounds} rounds")
        return ""

    def on_request(
        self, message: Message, pending: list[Message], progress: TurnProgress
    ) -> tuple[Message, list[Message]]:
        """The turn's messages as the next request sends them: once the answer is asked
        for, its note on the last one, where the model reads on from (after a tool result
        a small model ended its turn at once, a note further up unread)."""
        if not progress.answer_noted:
            return message, pending
        if pending:
            return message, [*pending[:-1], pending[-1].with_note(self.answer)]
        return message.with_note(self.answer), pending

    def said(self, reply: Message, request: str, own: str, tool_names: Collection[str]) -> Message:
        """`reply` as the member gets it: without what it copied of the request it answers
        (`request`, its last message; the member's `own` words are theirs to have quoted)
        before answering, its calls written as text made real, its talk of the tools left
        out, and `cleaned`; bare JSON data the member did not ask for is no answer (empty)."""
        if reply.text:
            reply = reply.with_text(answer_after_echo(reply.text, request, own))
        if tool_names:
            reply = recover_text_tool_calls(reply, tool_names)
        if reply.text and not reply.tool_calls:
            reply = reply.with_text(without_tool_talk(reply.text, tool_names, own))
        if reply.text and not reply.tool_calls and _data_not_asked_for(reply.text, own):
            logger.info("the answer is a JSON object, not words; asking again")
            return reply.with_text("")  # no answer: the turn asks one mode further down
        return reply.with_text(self.cleaned(reply.text)) if reply.text else reply

    def cleaned(self, reply: str) -> str:
        """`reply` as the member gets it and the window keeps it: without any text the
        plugin adds to what the model reads (a small model echoes the member's message,
        note and all, or starts with a block's header or its 【label】), without a
        copied line start, and a loop said once."""
        notes = (self.answer, self.repeat, self.results_opening, *self.framing)
        added = tuple(text for text in notes if text)
        if added:
            reply = _added_texts(added).sub("", reply).strip()
        if self.note_marks is not None:
            reply = self.note_marks.sub("", reply).strip()
        if self.copied_line_start is not None:
            reply = self.copied_line_start.sub("", reply, count=1).strip()
        return without_repeated_lines(reply) if loops(reply) else reply

    def asks_again(
        self, reply: str, asked: str, window: Sequence[Message], progress: TurnProgress, key: str
    ) -> bool:
        """Whether to ask once more because `reply` is a stock reply (once a turn), as a
        plain chat (AnswerMode.NO_TOOLS): asked again in the same request with its tool
        rounds in sight, the real small model said the member's message back twice
        ("以后你就是猫娘…" after two calls), reading on from the calls' shape."""
        if not self.repeat or progress.asked_again or not is_stock_reply(reply, asked, window):
            return False
        progress.asked_again = True
        progress.repeated = reply
        progress.mode = AnswerMode.NO_TOOLS
        logger.info("%s: the answer repeats an earlier reply; asking once more", key)
        return True

    def refuses(
        self, reply: str, turn: Sequence[Message], asked: str, progress: TurnProgress, key: str
    ) -> bool:
        """Whether `reply` is a tool result of the turn, or a quoted note before its message,
        said back, or goes round in circles, and the next request asks one mode further
        down. Shown to the member, a tool result ("已保存记忆 #skpn …") or a note's line
        reads as a malfunction; the last mode's answer is kept (a notice would say less)."""
        if progress.mode.next() is None:
            return False
        if copies_a_tool_result(reply, turn, asked):
            self.ask_plainer(progress, key, "the answer copies a tool result")
            return True
        if loops(reply):
            self.ask_plainer(progress, key, "the answer goes round in circles")
            return True
        return False


def _data_not_asked_for(reply: str, own: str) -> bool:
    """Whether `reply` is bare JSON data (a record, a call's arguments) that the member's
    `own` message did not ask for: a member who asks for JSON gets it."""
    return is_bare_data(reply) and "json" not in own.casefold()


_LABEL = re.compile(r"【[^】\n]{1,20}】")


@cache
def _added_texts(added: tuple[str, ...]) -> re.Pattern[str]:
    """Each text the plugin adds, whole, and each 【label】 it holds, longest first."""
    pieces = set(added) | {label for text in added for label in _LABEL.findall(text)}
    return re.compile("|".join(re.escape(p) for p in sorted(pieces, key=len, reverse=True)))
