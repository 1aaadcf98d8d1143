"""The word classes of one language, as each language's module fills them in (the
package's docstring says how an entry is written)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Lexicon:
    """The word classes of one language (an empty class: the language has no such words,
    or needs none for the shape)."""

    name: str
    # Words are separated by blanks (gaps are counted in words) or not (in characters).
    spaced: bool
    # Who an order is given to, and what may stand before it in its clause: politeness,
    # "now", modal verbs, the addressee ("请你现在", "please now", "you must").
    order: str
    you: str
    your: str
    now: str
    # Throwing away what came before: the verbs, "don't" + "follow", predicates after the
    # object ("…are void"), and the objects.
    discard: str = ""
    stop: str = ""
    follow: str = ""
    void: str = ""
    # A new rule for how to answer, given from now on: "you will only answer in emoji".
    must: str = ""
    reply: str = ""
    earlier: str = ""
    determiners: str = ""
    earlier_alone: str = ""
    instructions: str = ""
    rules: str = ""
    given: str = ""
    before: str = ""
    # Showing the hidden prompt: the verbs, the nouns, and questions about it.
    show: str = ""
    hidden: str = ""
    text: str = ""
    question: str = ""
    question_after: str = ""
    # A new identity: "you are (now) X", "you are called X", "your new name is X", "act as".
    you_be: str = ""
    be: str = ""
    named: str = ""
    article: str = ""
    noun_end: str = ""
    characters: str = ""
    persona: str = ""
    name_nouns: str = ""
    new: str = ""
    is_: str = ""
    play: str = ""
    play_after: str = ""
    # Dropping the limits: "have no" + limits said to "you" (or as an order), "no"/"without"
    # + limits in a sentence to "you" (or "for you" after them), "remove" + limits, modes.
    for_you: str = ""
    lack: str = ""
    without: str = ""
    limits: str = ""
    safeguards: str = ""
    lift: str = ""
    enter: str = ""
    mode_name: str = ""
    mode: str = ""
    # Raw patterns (lookahead bodies): what right after a verb makes it no order (a
    # negation, "了" of what happened), and what after "you are now" is no noun.
    not_after: str = ""
    not_x: str = ""
