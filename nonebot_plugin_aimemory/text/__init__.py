"""Text helpers that need no model and no database: Chinese word cutting (`segmenter`,
`jieba_cuts`), a question read as search terms (`query`), lines fitted to a length, a
model's JSON, characters an encoding cannot carry, two rankings fused, the marks of a chat
line, and pseudo-relevance feedback. Other packages import what they use from here;
`segmenter`, `jieba_cuts` and `query` are used as modules (`segmenter.terms`)."""

from __future__ import annotations

from . import jieba_cuts, query, segmenter
from .encodable import REPLACEMENT, encodable
from .feedback import FEEDBACK_ROWS, candidate_words, chosen_words
from .fit import cut_first, cut_line, fit_lines
from .fusion import fuse_rankings
from .lines import (
    BOT_NAME,
    FORWARD_MARKER,
    LINE_BREAK_MARK,
    NAMED_PERSON,
    PERSON_WITH_QQ,
    QQ_IN_BRACKETS,
    QUOTE_CLOSING,
    QUOTE_OPENING,
    QUOTE_SPEAKER_END,
    name_on_one_line,
)
from .model_json import json_objects, parse_json_object
from .mood import (
    asks_what,
    is_acknowledgement,
    is_question,
    only_acknowledges,
    recalls_oneself,
)
from .query import Period, Query, analyse, content_characters

__all__ = [
    "BOT_NAME",
    "FEEDBACK_ROWS",
    "FORWARD_MARKER",
    "LINE_BREAK_MARK",
    "NAMED_PERSON",
    "PERSON_WITH_QQ",
    "QQ_IN_BRACKETS",
    "QUOTE_CLOSING",
    "QUOTE_OPENING",
    "QUOTE_SPEAKER_END",
    "REPLACEMENT",
    "Period",
    "Query",
    "analyse",
    "asks_what",
    "candidate_words",
    "chosen_words",
    "content_characters",
    "cut_first",
    "cut_line",
    "encodable",
    "fit_lines",
    "fuse_rankings",
    "is_acknowledgement",
    "is_question",
    "jieba_cuts",
    "json_objects",
    "name_on_one_line",
    "only_acknowledges",
    "parse_json_object",
    "query",
    "recalls_oneself",
    "segmenter",
]
