"""Reading the JSON a model was asked for, tolerating code fences and chatter around it,
and mending what a small model gets wrong."""

from __future__ import annotations

import json
import re
from typing import Any

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)


# A number written as the line tag it was shown as (`"evidence":[#81]`, a small model
# copying the `[#81]` the rows start with, issue #36): not JSON, read as the number.
_TAGGED_NUMBER = re.compile(r"(?<=[\[,])(\s*)#(\d{1,18})(?=\s*[,\]])")


def parse_json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in `text` (inside a code fence or bare), or None; numbers
    written as `#81` in a list are read as numbers when the text is no JSON otherwise."""
    found = _first_object(text)
    if found is None and _TAGGED_NUMBER.search(text):
        found = _first_object(_TAGGED_NUMBER.sub(r"\1\2", text))
    if found is None and "{" in text:
        found = _mended_object(text)
    return found


def json_objects(text: str) -> list[dict[str, Any]]:
    """Every JSON object in `text` that no other holds, in order: the real 1.5B model wrote
    the facts of one request as two answers joined by a full-width comma
    (`{"facts":[{…}]，{"facts":[{…}]}]`), no JSON as a whole, and each of its objects whole."""
    decoder = json.JSONDecoder()
    found: list[dict[str, Any]] = []
    start = text.find("{")
    while start != -1:
        try:
            value, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            start = text.find("{", start + 1)
            continue
        if isinstance(value, dict):
            found.append(value)
        start = text.find("{", end)
    return found


def _mended_object(text: str) -> dict[str, Any] | None:
    """The object a model meant, mended by json_repair (imported only here, when a model
    got its JSON wrong): the real 1.5B model wrote `"tags":[…],["user_id":"20001"]`, ids
    unquoted (`"evidence":[6ur4]`) and answers cut by its cap. What it mends is checked
    as any answer is: a fact must still be what the chat said (memory/grounding.py)."""
    from json_repair import loads

    fenced = [m.group(1) for m in _FENCE.finditer(text) if "{" in m.group(1)]
    candidate = fenced[0] if fenced else text
    mended = loads(candidate[candidate.find("{") :])
    if isinstance(mended, list):
        mended = next((item for item in mended if isinstance(item, dict)), None)
    return mended if isinstance(mended, dict) and mended else None


def _first_object(text: str) -> dict[str, Any] | None:
    """The first whole object of a code fence's, else of the text's."""
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    return next((found[0] for c in candidates if (found := json_objects(c))), None)
