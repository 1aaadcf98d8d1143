"""Tool calls a model wrote as text. Small models behind some servers (llama.cpp, Ollama
with a template that does not parse them) put a call in `content` instead of `tool_calls`:
a bare JSON object, one per line, inside `<tool_call>` tags or a ```json fence, or a call
in code form, `memory_save({"content": …})` or `memory_search(query="车", limit=10)`.
They are turned into real calls, so they run and the member never sees them;
`<tool_response>` blocks a model writes in imitation of a result, and calls written the
way the plugin tells results ("- memory_search：…"), are removed from what it says, and an
answer written as a JSON list of strings is said as its strings."""

from __future__ import annotations

import ast
import json
import re
import uuid
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

from .messages import Message, ToolCall

# The ids and names the strictest gateways accept (OpenAI's function-name rule).
_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
# A tool's name written as a function just before a JSON object: `memory_save(` + `{…}`.
_CODE_CALL_HEAD = re.compile(r"(?<![\w.])([A-Za-z_][A-Za-z0-9_-]{0,63})\s*\(\s*$")
_CODE_CALL_TAIL = re.compile(r"\s*\)")
_CODE_CALL_NAME = re.compile(r"(?<![\w.])([A-Za-z_][A-Za-z0-9_-]{0,63})\s*\(")
# A whole reply of a tool's name and `key=value` pairs, and one pair of it.
_BARE_CALL = re.compile(r"^([A-Za-z_][A-Za-z0-9_-]{0,63})[ \t]+(\w+[ \t]*=[^\n]*)$")
_BARE_PAIR = re.compile(r"(\w+)[ \t]*=[ \t]*(.*?)(?=[ \t]+\w+[ \t]*=|$)")
# How many `)` a keyword-form call is tried to end at: bounds the work on a long text.
MAX_CLOSERS_TRIED = 16
# What is left around a call once its JSON is taken out: the tags and fences that held it.
_WRAPPERS = re.compile(r"</?tool_calls?>|```(?:json|python|tool_call)?|`", re.IGNORECASE)
# A result block the model wrote itself (an unclosed one runs to the end).
_TOOL_RESPONSE = re.compile(
    r"<tool_response>.*?(?:</tool_response>|\Z)|</tool_response>", re.DOTALL | re.IGNORECASE
)
_DECODER = json.JSONDecoder()
# Keys a small model put an offered tool's name under instead of "name" (Qwen2.5-Coder-1.5B
# wrote {"id": "memory_forget", "arguments": {…}}); read only for an offered tool's name,
# so a member's data with an "id" is never a call.
_NAME_KEYS = ("id", "tool", "tool_name", "function")


@dataclass(frozen=True, slots=True)
class _Found:
    """One call found in a text, and where its JSON stood."""

    call: ToolCall
    start: int
    end: int


def without_tool_responses(text: str) -> str:
    """`text` without the `<tool_response>` blocks a model wrote as if it were the tool."""
    if "tool_response>" not in text.lower():
        return text
    return _TOOL_RESPONSE.sub("", text).strip()


# A small model wrote a call with typographic quotes ({“name”: “search_current_chat”, …});
# each becomes '"', one character for one, so what is found keeps its place in the text.
# Only when the text as written holds no call: a real call's value may quote “like this”.
_STRAIGHT_QUOTES = str.maketrans({"“": '"', "”": '"', "„": '"', "‟": '"', "＂": '"'})


# What a small model wrote around a bare tool name it gave as its whole answer.
_AROUND_A_NAME = " \t\n`'\"?？!！.。:：()（）"


def recover_text_tool_calls(reply: Message, tool_names: Collection[str] = ()) -> Message:
    """`reply` with the tool calls written in its text turned into real ones (the text that
    held them removed, what else it said kept as the call's content); a reply that already
    has calls, or whose text holds none, is returned as it is, less any `<tool_response>`
    block. The code form is read only for `tool_names` (a model's answer about code may
    well hold `print({…})`); the JSON form for any name, so an invented tool is answered."""
    text = reply.text or ""
    if reply.tool_calls or not text:
        return reply
    found = _calls_in(text, tool_names)
    straight = text.translate(_STRAIGHT_QUOTES)
    if not found and straight != text:
        found = _calls_in(straight, tool_names)
    if not found:
        told = _answer_beside_told_calls(text, tool_names)
        if told is not None:
            return reply.with_text(told)
        if text.strip(_AROUND_A_NAME) in tool_names:
            return reply.with_text("")  # "memory_search?": a call begun, no answer
        cleaned = without_tool_responses(text)
        cleaned = _json_strings(cleaned) or cleaned
        return reply if cleaned == text else reply.with_text(cleaned)
    rest = _text_around(text, found)
    return Message(
        "assistant",
        rest or None,
        tool_calls=tuple(f.call for f in found),
        reasoning=reply.reasoning,
    )


# A model's own label before its answer, on a line's start ("【你的回复】").
_ANSWER_LABEL = re.compile(r"^\s*【[^】\n]{1,20}】", re.MULTILINE)


def _answer_beside_told_calls(text: str, tool_names: Collection[str]) -> str | None:
    """None when no line of `text` starts with a tool's name the way the last request
    tells a turn's results ("- memory_search：…", plain_request.py); else the answer the
    text gives after its last such line behind a 【label】, or "" for none. Qwen2.5-Coder-
    1.5B copied that shape from a reply of its own in the window and wrote calls, made-up
    results and "【你的回复】我对菠萝过敏来着。" (issue #36), or the calls alone, 4 096
    tokens of them; none of it ran, and none of it is for the member."""
    if not tool_names:
        return None
    told = list(_told_call_line(frozenset(tool_names)).finditer(text))
    if not told:
        return None
    label = _ANSWER_LABEL.search(text, told[-1].end())
    return text[label.end() :].strip() if label else ""


@cache
def _told_call_line(tool_names: frozenset[str]) -> re.Pattern[str]:
    """A line that starts with one of `tool_names` and a colon, as results are told, and
    goes on with an argument (`key=value`, on that line or the next) or a copied 【label】:
    "- memory_save：保存一条记忆", a tool described to a member, is no call."""
    names = _alternatives(tool_names)
    return re.compile(
        rf"^[ \t]*-?[ \t]*(?:{names})[ \t]*[：:][ \t]*(?:\n[ \t]*)?(?:\w+[ \t]*=|【)",
        re.MULTILINE,
    )


# A sentence, its end marks kept: what is left out of a reply that names a tool.
_SENTENCE = re.compile(r"[^。！？!?\n]+(?:[。！？!?]+|\n|$)|\n")


def without_tool_talk(text: str, tool_names: Collection[str], own: str = "") -> str:
    """`text` without its sentences naming one of `tool_names` that the member's `own`
    words do not: Qwen2.5-Coder-1.5B answered "以后你就是猫娘…" with "好的，我明白了。
    如果我需要保存这条记忆，可以使用 memory_save 函数，传入内容、标签…" (issue #36). A
    tool's name is the plugin's word, not the member's; a reply of nothing else is no
    answer (''). A line listing a tool and what it does ("- memory_save：保存一条记忆")
    describes the bot to whoever asked, and stays."""
    named = frozenset(name for name in tool_names if name in text and name not in own)
    if not named:
        return text
    talk, listed = _named_tool(named), _listed_tool(named)
    kept = (
        line if listed.match(line) else "".join(_untalked(line, talk))
        for line in text.splitlines(keepends=True)
    )
    return "".join(kept).strip()


def _untalked(line: str, talk: re.Pattern[str]) -> Iterator[str]:
    """The sentences of `line` that name no tool."""
    return (sentence for sentence in _SENTENCE.findall(line) if not talk.search(sentence))


def _alternatives(tool_names: frozenset[str]) -> str:
    """`tool_names` as a regular expression's alternatives, each escaped."""
    return "|".join(re.escape(name) for name in sorted(tool_names))


@cache
def _named_tool(tool_names: frozenset[str]) -> re.Pattern[str]:
    """One of `tool_names` as a word of its own (not inside a longer identifier)."""
    names = _alternatives(tool_names)
    return re.compile(rf"(?<![A-Za-z0-9_])(?:{names})(?![A-Za-z0-9_])")


@cache
def _listed_tool(tool_names: frozenset[str]) -> re.Pattern[str]:
    """A line that starts with one of `tool_names` (after a list mark) and a colon."""
    names = _alternatives(tool_names)
    return re.compile(rf"[ \t]*(?:[-*•·]|\d+[.、)])?[ \t]*`?(?:{names})`?[ \t]*[：:]")


def is_bare_data(text: str) -> bool:
    """Whether `text` is nothing but a JSON object, or a list holding one (fenced or not):
    a record or a call's arguments written instead of an answer. Qwen2.5-Coder-1.5B
    answered "帮我记一下：我家猫叫豆包。" with {"id": "123", "content": "我的猫叫豆包",
    "tags": […], "user_id": "20001"}. A list of strings is said as its strings instead."""
    stripped = _WRAPPERS.sub("", text).strip()
    if not stripped.startswith(("{", "[")):
        return False
    try:
        value = json.loads(stripped)
    except (ValueError, RecursionError):
        return False
    items = value if isinstance(value, list) else [value]
    return any(isinstance(item, dict) for item in items)


def _json_strings(text: str) -> str | None:
    """The strings of a reply that is only a JSON string or list of strings, one a line:
    Qwen2.5-Coder-1.5B answered a private question with ["小明(20001)说：我家猫叫豆包。"]
    (the note it was shown, as a list). None for anything else."""
    stripped = _WRAPPERS.sub("", text).strip()
    if not (stripped.startswith("[") and stripped.endswith("]")) and not (
        stripped.startswith('"') and stripped.endswith('"')
    ):
        return None
    try:
        value = json.loads(stripped)
    except (ValueError, RecursionError):  # a thousand brackets deep is no answer either
        return None
    strings = [value] if isinstance(value, str) else value
    if not isinstance(strings, list) or not strings:
        return None
    if not all(isinstance(item, str) and item.strip() for item in strings):
        return None
    return "\n".join(item.strip() for item in strings)


def _calls_in(text: str, tool_names: Collection[str]) -> list[_Found]:
    """Every JSON value in `text` that is a call (or a list of calls), or the arguments of
    a tool called in code form, in order."""
    found: list[_Found] = []
    code_form = any(f"{name}(" in text for name in tool_names)
    named = '"name"' in text or any(f'"{name}"' in text for name in tool_names)
    if not named and not code_form:
        bare = _bare_call(text, tool_names)
        return [bare] if bare is not None else found
    index = _first_bracket(text)
    while index != -1:
        try:
            value, end = _DECODER.raw_decode(text, index)
        except (json.JSONDecodeError, RecursionError):
            index = _first_bracket(text, index + 1)
            continue
        code_call = _code_call(text, index, end, value, tool_names) if code_form else None
        if code_call is not None:
            found.append(code_call)
            index = _first_bracket(text, code_call.end)
            continue
        calls = _as_calls(value, tool_names)
        if calls:
            found += [_Found(call, index, end) for call in calls]
            index = _first_bracket(text, end)
        else:
            index = _first_bracket(text, index + 1)
    bare = _bare_call(text, tool_names)
    if bare is not None:
        return [bare]
    if code_form:
        taken = [(item.start, item.end) for item in found]
        keyword_calls = _keyword_calls(text, tool_names)
        found += [k for k in keyword_calls if not any(a < k.end and k.start < b for a, b in taken)]
        found.sort(key=lambda item: item.start)
    return found


def _bare_call(text: str, tool_names: Collection[str]) -> _Found | None:
    """A reply that is nothing but a tool's name and `key=value` pairs, as a small model
    writes once it has seen such a line (`memory_search query=Caroline research`)."""
    match = _BARE_CALL.match(text.strip())
    if match is None or match.group(1) not in tool_names:
        return None
    arguments = {key: _bare_value(value) for key, value in _BARE_PAIR.findall(match.group(2))}
    encoded = json.dumps(arguments, ensure_ascii=False)
    return _Found(ToolCall(f"call_{uuid.uuid4().hex[:24]}", match.group(1), encoded), 0, len(text))


def _bare_value(value: str) -> Any:
    """A bare argument's value: JSON where it is JSON (numbers, quoted strings), else text."""
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return value.strip().strip("'\"")


def _keyword_calls(text: str, tool_names: Collection[str]) -> list[_Found]:
    """Tools called in Python's keyword form, `memory_search(query="车", limit=10)`, read
    with the standard library's parser: literal arguments only, nothing evaluated."""
    found: list[_Found] = []
    for head in _CODE_CALL_NAME.finditer(text):
        if head.group(1) not in tool_names or (found and head.start() < found[-1].end):
            continue
        call = _keyword_call(text, head.start(), head.group(1))
        if call is not None:
            found.append(call)
    return found


def _keyword_call(text: str, start: int, name: str) -> _Found | None:
    """The keyword-form call of `name` starting at `start`, ending at the first `)` that
    closes a call of literals; None when none does (within MAX_CLOSERS_TRIED)."""
    close = start
    for _ in range(MAX_CLOSERS_TRIED):
        close = text.find(")", close + 1)
        if close == -1:
            return None
        try:
            tree = ast.parse(text[start : close + 1], mode="eval")
        except (SyntaxError, ValueError, RecursionError):
            continue
        arguments = _literal_keywords(tree.body, name)
        if arguments is not None:
            encoded = json.dumps(arguments, ensure_ascii=False)
            return _Found(
                ToolCall(f"call_{uuid.uuid4().hex[:24]}", name, encoded), start, close + 1
            )
    return None


def _literal_keywords(node: ast.expr, name: str) -> dict[str, Any] | None:
    """The keyword arguments of `node` when it is `name(key=literal, …)`; else None."""
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        return None
    if node.func.id != name or node.args or any(k.arg is None for k in node.keywords):
        return None
    try:
        return {str(k.arg): ast.literal_eval(k.value) for k in node.keywords}
    except (ValueError, TypeError, SyntaxError, RecursionError):
        return None


def _code_call(
    text: str, start: int, end: int, value: Any, tool_names: Collection[str]
) -> _Found | None:
    """The call `name({…})` whose arguments are the object decoded at `start`..`end`, when
    a known tool's name and `(` come before it and `)` after it; else None."""
    head = _CODE_CALL_HEAD.search(text, 0, start)
    tail = _CODE_CALL_TAIL.match(text, end)
    if head is None or tail is None or not isinstance(value, dict):
        return None
    name = head.group(1)
    if name not in tool_names:
        return None
    arguments = json.dumps(value, ensure_ascii=False)
    return _Found(
        ToolCall(f"call_{uuid.uuid4().hex[:24]}", name, arguments), head.start(), tail.end()
    )


def _first_bracket(text: str, start: int = 0) -> int:
    """Where the next `{` or `[` is at or after `start`; -1 when none is."""
    positions = [p for p in (text.find("{", start), text.find("[", start)) if p != -1]
    return min(positions) if positions else -1


def _as_calls(value: Any, tool_names: Collection[str]) -> list[ToolCall]:
    """The calls `value` is: one call object, or a list of nothing but call objects."""
    items = value if isinstance(value, list) else [value]
    calls = [_as_call(item, tool_names) for item in items]
    if not calls or any(call is None for call in calls):
        return []
    return [call for call in calls if call is not None]


def _as_call(value: Any, tool_names: Collection[str]) -> ToolCall | None:
    """A call written as `{"name": …, "arguments": {…}}` (or "parameters"; the arguments
    as an object or as JSON text), also inside OpenAI's `{"function": {…}}`, or with an
    offered tool's name under another key (`{"id": "memory_forget", …}`); else None."""
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("function"), dict):
        value = value["function"]
    name = value.get("name")
    if name is None:
        name = next((v for k, v in value.items() if k in _NAME_KEYS and v in tool_names), None)
    if not isinstance(name, str) or not _TOOL_NAME.match(name):
        return None
    keys = set(value) - {"name", "id", "type", *_NAME_KEYS}
    if not keys <= {"arguments", "parameters"}:
        return None  # an object with a name, not a call (a member's data, say)
    arguments = value.get("arguments", value.get("parameters", {}))
    if isinstance(arguments, str):
        text = arguments
    elif isinstance(arguments, dict):
        text = json.dumps(arguments, ensure_ascii=False)
    else:
        return None
    return ToolCall(f"call_{uuid.uuid4().hex[:24]}", name, text)


def _text_around(text: str, found: list[_Found]) -> str:
    """What `text` says besides the calls' JSON and its wrappers."""
    pieces, cursor = [], 0
    for item in found:
        pieces.append(text[cursor : item.start])
        cursor = max(cursor, item.end)
    pieces.append(text[cursor:])
    rest = without_tool_responses(_WRAPPERS.sub("", "".join(pieces)))
    return rest.strip()
