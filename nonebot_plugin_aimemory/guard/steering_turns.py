"""Forged turns: role markers ("系统：", "assistant:", "【系统】"), chat-template tokens
("<|im_start|>", "<start_of_turn>"), a forged role message and a forged tool call. These
are not wordings but markup, matched as such."""

from __future__ import annotations

import re

from .steering_contexts import Context, anywhere, en_not_after_word, line_start, zh_not_after_han
from .steering_rules import Rule

BLANKS = r"\s{0,3}"  # runs of blanks are single spaces in folded text
ZH_ROLE = "系统|系統|助手|用户|用戶|人类|人類"
EN_ROLE = "system|assistant|developer|user|human"


def _rule(starts: str, rest: str, context: Context = anywhere) -> Rule:
    words = tuple(starts.split("|"))
    alternatives = "|".join(re.escape(word) for word in words)
    pattern = re.compile(f"(?:{alternatives})(?:{rest})", re.MULTILINE)
    return Rule("forged turn", "markup", words, pattern, context)


def forged_turn_rules() -> list[Rule]:
    """The rules of forged turns, in the order they are tried."""
    return [
        _rule(
            ZH_ROLE,
            f"{BLANKS}:(?!{BLANKS}(?:windows|win|mac|ios|android|linux|ubuntu|centos|debian"
            "|harmony|鸿蒙|安卓|[0-9]))",
            zh_not_after_han,
        ),
        _rule(
            "[|【|〖|〔|<|《|「|『",
            f"{BLANKS}/?{BLANKS}(?:{ZH_ROLE}|{EN_ROLE}|sys|inst){BLANKS}"
            f"(?:消息|提示|指令|设定|通知|message|prompt)?{BLANKS}[\\]】〗〕>》」』]",
        ),
        _rule("<<", f"{BLANKS}/?{BLANKS}sys{BLANKS}>>"),
        _rule(EN_ROLE, f"{BLANKS}:", en_not_after_word),
        _rule(
            "<",
            r"(?:\|[a-z_]{1,30}\|>"
            rf"|{BLANKS}/?{BLANKS}(?:start_of_turn|end_of_turn|im_start|im_end|tool_call"
            rf"|function_call|tool){BLANKS}>)",
        ),
        _rule(
            "##",
            rf"#{{0,4}}{BLANKS}(?:{EN_ROLE}|instructions?|response){BLANKS}(?::|$)",
            line_start,
        ),
        _rule(
            "\"role|'role", rf"[\"']{BLANKS}:{BLANKS}[\"'](?:system|assistant|developer|tool)[\"']"
        ),
        _rule("tool_calls|function_call", rf"[\"']?{BLANKS}:"),
        # A forged tool call: both keys of one call, in either order.
        _rule(
            "\"name|'name|\"function|'function",
            rf"[\"']{BLANKS}:.{{0,200}}?[\"'](?:arguments|parameters)[\"']{BLANKS}:",
        ),
        _rule(
            "\"arguments|'arguments|\"parameters|'parameters",
            rf"[\"']{BLANKS}:.{{0,200}}?[\"'](?:name|function)[\"']{BLANKS}:",
        ),
    ]
