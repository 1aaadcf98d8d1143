"""Reading the JSON a model was asked for, tolerating code fences and chatter around it."""

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
    return found


def _first_object(text: str) -> dict[str, Any] | None:
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    for candidate in candidates:
        start = candidate.find("{")
        while start != -1:
            try:
                value, _ = json.JSONDecoder().raw_decode(candidate[start:])
            except json.JSONDecodeError:
                start = candidate.find("{", start + 1)
                continue
            if isinstance(value, dict):
                return value
            start = candidate.find("{", start + 1)
    return None
