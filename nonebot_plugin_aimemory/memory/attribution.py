"""Who said what a memory holds; the model is never asked. A memory saved in a turn is the
words of the voice its content matches best (the share of its tokens found in that voice's
words; the speaker's own words win ties); one the reviewer or the extraction drew from chat
lines, the words of the line it matches best. A quoted or forwarded line is its author's,
never the member's who quoted or forwarded it, and the bot's own words are nobody's."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from ..engine import TurnSpeaker, Voice, current_speaker, current_voices
from ..scopes import qq_number
from ..store import Origin, Person, Provenance
from ..text import (
    BOT_NAME,
    FORWARD_MARKER,
    QUOTE_CLOSING,
    QUOTE_OPENING,
    QUOTE_SPEAKER_END,
    segmenter,
)

# `小明(12345)` as a quote names its author.
_NAMED = re.compile(r"(?P<name>.*)\((?P<id>[^()]*)\)")
# `[2026-11-30 14:05] 小明(12345)：` before a member's words in a group's window, the time
# alone in a private chat's (Incoming.line_prefix).
_LINE_TIME = re.compile(r"\[[^\]\n]*\] ")
_LINE_SPEAKER = re.compile(r"(?P<name>[^()\n]*)\((?P<id>[^()\n]*)\)：")
# `  名字：内容`, one message of a forwarded record (nested ones indented).
_FORWARDED_LINE = re.compile(r"\s*(?P<name>[^：\n]{1,64})：(?P<said>.*)")


def best_voice(content: str, voices: Sequence[Voice]) -> Voice | None:
    """The voice whose words hold the largest share of the content's tokens, the first of
    equals; None when no voice holds any of them."""
    tokens = segmenter.token_set(content)
    if not tokens:
        return None
    best, best_share = None, 0.0
    for voice in voices:
        share = len(tokens & segmenter.token_set(voice.text)) / len(tokens)
        if share > best_share:
            best, best_share = voice, share
    return best


def in_turn(content: str) -> Provenance:
    """Where `content`, saved in the current turn, came from: the speaker's words, unless
    a quoted message or a forwarded line holds more of it than theirs do; unknown outside
    a turn."""
    speaker = current_speaker()
    if speaker is None:
        return Provenance()
    said = spoken_by(speaker, "said")
    own_first = sorted(current_voices(), key=lambda voice: voice.how != "said")
    best = best_voice(content, own_first)
    if best is None or best.how == "said" or (speaker.user_id and best.user_id == speaker.user_id):
        return said  # their own words (or their own message they quote)
    return replace(said, origin=best.how, said_by=speaker_of(best), told_by=said.said_by)


def spoken_by(speaker: TurnSpeaker, origin: Origin) -> Provenance:
    """A memory in the words of the person a turn (or a command) is for."""
    said_by = Person(speaker.user_id or None, speaker.name)
    return Provenance(origin, said_by=said_by, chat=speaker.chat or None)


def person_of(sender_id: object, name: object) -> Person:
    """A sender as a chat line names them: an id that is no QQ number (an anonymous
    sender's) is left out."""
    return Person(qq_number(sender_id), str(name or ""))


def line_voices(text: str, author: Person) -> list[Voice]:
    """The voices of one logged message of `author`: the quote it starts with is its
    author's, each line of a forwarded record its sender's, the rest `author`'s own."""
    voices: list[Voice] = []
    rest = text
    if text.startswith(QUOTE_OPENING):
        end = text.find(QUOTE_CLOSING + "\n")
        end = end if end >= 0 else len(text.rstrip()) - len(QUOTE_CLOSING)
        who, _, said = text[len(QUOTE_OPENING) : end].partition(QUOTE_SPEAKER_END)
        voices.append(_quoted(who, said))
        rest = text[end + len(QUOTE_CLOSING) :]
    own: list[str] = []
    in_record = False
    for line in rest.splitlines():
        forwarded = _FORWARDED_LINE.fullmatch(line) if in_record else None
        if forwarded is not None:
            voices.append(Voice("forwarded", None, forwarded["name"].strip(), forwarded["said"]))
            continue
        in_record = line.rstrip().endswith(FORWARD_MARKER)
        own.append(line.replace(FORWARD_MARKER, ""))
    voices.insert(0, Voice("said", author.user_id, author.name, "\n".join(own)))
    return voices


def _quoted(who: str, said: str) -> Voice:
    """The voice of a quote, its author as the quote names them (the bot: no QQ number)."""
    named = _NAMED.fullmatch(who)
    if named is not None and qq_number(named["id"]) is not None:
        return Voice("quoted", named["id"], named["name"], said)
    return Voice("quoted", None, "" if who == BOT_NAME else who, said)


def speaker_of(voice: Voice | None) -> Person | None:
    """Who a voice's words are of: nobody for none, or for the bot's (a voice naming no one)."""
    if voice is None or not (voice.user_id or voice.name):
        return None
    return Person(voice.user_id, voice.name)


def author_of_evidence(content: str, lines: Sequence[tuple[str, Person]]) -> Person | None:
    """Who said `content`, drawn from these (text, author) lines: the author of a quote or
    forwarded line it matches best; else the one author of all the lines, or nobody when
    they are several."""
    voices = [voice for text, author in lines for voice in line_voices(text, author)]
    best = best_voice(content, voices)
    if best is not None and best.how != "said":
        return speaker_of(best)
    authors = {author for _, author in lines}
    return next(iter(authors)) if len(authors) == 1 else None


def folded_voices(texts: Sequence[str], friend: Person | None) -> list[Voice]:
    """The voices of a window's user messages about to be folded: in a group each starts
    with its sender (`[时间] 名字(QQ号)：`, Incoming.line_prefix), in a private chat with the
    time alone (`friend`'s words); a message of neither shape is nobody's."""
    voices: list[Voice] = []
    for text in texts:
        start = _LINE_TIME.match(text)
        if start is None:
            continue
        rest = text[start.end() :]
        author = friend
        if author is None:
            named = _LINE_SPEAKER.match(rest)
            if named is None:
                continue
            author = person_of(named["id"], named["name"])
            rest = rest[named.end() :]
        voices += line_voices(rest, author)
    return voices
