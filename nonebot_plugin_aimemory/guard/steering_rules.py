"""The steering rules: overriding what came before, a new identity, showing the hidden
prompt, and forged turns (role markers, chat-template tokens, tool calls), each a pattern
that starts with literal words (so the regex engine skips ahead to them) with bounded gaps,
and the context where a match counts."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .steering_contexts import (
    Context,
    after_an_order_to_play,
    anywhere,
    en_not_after_word,
    en_not_negated,
    en_not_negated_nor_infinitive,
    en_order,
    en_word_start,
    line_start,
    zh_not_after_han,
    zh_not_negated,
    zh_order,
)
from .steering_words import (
    BLANKS,
    EN_ANY_RULES,
    EN_EARLIER,
    EN_EARLIER_STRICT,
    EN_END,
    EN_FILLER_WORDS,
    EN_GAP,
    EN_IGNORE,
    EN_IGNORE_TAIL,
    EN_LINKING_WORDS,
    EN_MODEL_RULES,
    EN_ROLE,
    IN_CLAUSE,
    ZH_ANY_RULES,
    ZH_CANCEL,
    ZH_DROPPED,
    ZH_EARLIER,
    ZH_EARLIER_VOID,
    ZH_IGNORE,
    ZH_MODEL_RULES,
    ZH_ROLE,
    ZH_VOID,
)


@dataclass(frozen=True, slots=True)
class Rule:
    """One steering pattern: one of its `starts` (literal words), then `rest`; a match
    counts where `context` allows it."""

    starts: tuple[str, ...]
    pattern: re.Pattern[str]
    context: Context = anywhere

    def match_at(self, folded: str, start: int, blank: bool) -> re.Match[str] | None:
        """The rule's match starting at `start` if it counts there, else None."""
        match = self.pattern.match(folded, start)
        return match if match is not None and self.context(folded, start, blank) else None

    def search(self, folded: str, blanks: frozenset[int]) -> re.Match[str] | None:
        """The first match in `folded` that counts, or None."""
        position = 0
        while (match := self.pattern.search(folded, position)) is not None:
            start = match.start()
            if self.context(folded, start, start in blanks):
                return match
            position = start + 1
        return None


def _rule(starts: str, rest: str, context: Context = anywhere) -> Rule:
    words = tuple(starts.split("|"))
    alternatives = "|".join(re.escape(word) for word in words)
    return Rule(words, re.compile(f"(?:{alternatives})(?:{rest})", re.MULTILINE), context)


_NOT_DONE = "(?![了过着])"  # "忘记了之前的规则" tells what happened, it orders nothing
_ZH_EARLIER_THEN = f"{IN_CLAUSE}{{0,6}}(?:{ZH_EARLIER}){IN_CLAUSE}{{0,10}}"

# Throwing away what came before: verb first, "把…忘了", "…作废".
_OVERRIDES = (
    _rule(
        f"{ZH_IGNORE}|{ZH_CANCEL}",
        f"{_NOT_DONE}{_ZH_EARLIER_THEN}(?:{ZH_MODEL_RULES})",
        zh_not_negated,
    ),
    _rule(ZH_IGNORE, f"{_NOT_DONE}{_ZH_EARLIER_THEN}(?:{ZH_ANY_RULES})", zh_order),
    _rule(
        "把|将|將",
        f"{IN_CLAUSE}{{0,4}}(?:{ZH_EARLIER}){IN_CLAUSE}{{0,10}}(?:{ZH_MODEL_RULES})"
        f"{IN_CLAUSE}{{0,6}}(?:{ZH_DROPPED})",
        zh_not_negated,
    ),
    _rule(
        "把|将|將",
        f"{IN_CLAUSE}{{0,4}}(?:{ZH_EARLIER}){IN_CLAUSE}{{0,10}}(?:{ZH_ANY_RULES})"
        f"{IN_CLAUSE}{{0,6}}(?:{ZH_DROPPED})",
        zh_order,
    ),
    _rule(
        ZH_EARLIER_VOID,
        f"{IN_CLAUSE}{{0,10}}(?:{ZH_MODEL_RULES}){IN_CLAUSE}{{0,4}}(?:{ZH_VOID})(?![的地])",
    ),
    _rule(
        ZH_EARLIER_VOID,
        f"{IN_CLAUSE}{{0,10}}(?:{ZH_ANY_RULES}){IN_CLAUSE}{{0,4}}(?:{ZH_VOID})(?![的地])",
        zh_order,
    ),
    _rule(
        "你不再|你无需|你不用|你不必|你可以不|你已经|你现在|你从此",
        "(?:不再|无需|不用|不必|可以不)?(?:受|遵守|遵循|理会|服从|听从|考虑)"
        f"{IN_CLAUSE}{{0,8}}(?:{ZH_MODEL_RULES}|{ZH_ANY_RULES}|审查|道德)",
    ),
    _rule(
        EN_IGNORE,
        f"{EN_IGNORE_TAIL}{EN_GAP}{EN_LINKING_WORDS}{EN_EARLIER}{EN_GAP}{EN_FILLER_WORDS}{EN_MODEL_RULES}"
        f"{EN_END}",
        en_not_negated,
    ),
    _rule(
        EN_IGNORE,
        rf"{EN_IGNORE_TAIL}{EN_GAP}(?:(?:all|the|of)[\W_]{{1,4}}){{0,2}}{EN_EARLIER_STRICT}{EN_GAP}"
        f"{EN_FILLER_WORDS}{EN_ANY_RULES}{EN_END}",
        en_not_negated_nor_infinitive,
    ),
    _rule(
        "ignore|disregard|forget",
        rf"\s?(?:all\s?|everything\s?)?(?:of\s?)?(?:the\s?)?(?:above|foregoing|preceding){EN_END}",
        en_not_negated,
    ),
    _rule(
        "ignore|disregard|forget",
        r"\s?(?:about\s?)?(?:everything|anything|all)\s?(?:before|above|prior|previous|earlier"
        rf"|so\s?far|you\s?know|you\s?(?:were|have\s?been|'ve\s?been)\s?told){EN_END}",
        en_not_negated,
    ),
)

# A new identity, a persona, a mode without rules.
_NEW_IDENTITIES = (
    _rule("你现在", "(?:是|就是|扮演|变成|成为|叫)(?!不是|否|在|不|谁|什么|哪)"),
    _rule("现在", "(?:开始)?你(?:是|就是|扮演|变成|成为)(?!不是|否|在|谁|什么|哪)"),
    _rule(
        "从现在|从此刻|从这一刻|从今以后|从今往后",
        "(?:开始|起)?[,\\s]{0,3}你(?:就|将|要|必须|只能|得|会)?"
        "(?:是|扮演|变成|成为|叫|不再|只|的(?:身份|角色|名字))",
    ),
    _rule("你的新", "(?:身份|角色|设定|名字|人设|任务|指令)(?:是|为|:)"),
    _rule("扮演", "", after_an_order_to_play),
    _rule("越狱模式|上帝模式|无限制模式|dan模式", ""),
    _rule(
        "你现在|你已经|你进入|你处于|你切换到|你开启",
        "(?:现在|已经){0,2}(?:进入|处于|切换到|开启)?了?开发者模式",
    ),
    # "开发者模式在手机设置里" is about phones; "进入开发者模式" as an order is not.
    _rule("进入|开启|启用|切换到|打开", "开发者模式", zh_order),
    _rule("解除", "(?:你的|所有|全部|一切)(?:限制|约束|封印)"),
    _rule("没有任何|不受任何", "(?:限制|约束|规则|审查)的(?:ai|人工智能|助手|机器人|模型)"),
    _rule(
        "from",
        r"\s?now\s?on[\W_]{0,4}you[\W_]{0,3}(?:are|will|must|shall|should|act|behave|respond|reply|answer"
        rf"|only|can\s?only|have\s?to|need\s?to|'re|re|become|play|pretend|speak|talk|obey){EN_END}",
        en_word_start,
    ),
    _rule(
        "you",
        r"\s?(?:are|'re)\s?now"
        rf"\s?(?:a|an|my|called|named|dan|free|unrestricted|jailbroken|no\s?longer){EN_END}",
        en_word_start,
    ),
    _rule(
        "act|behave|respond|pretend|roleplay|role",
        r"(?:(?<=role)[-\s]?play|(?<!role))"
        rf"\s?(?:as|like|to\s?be|that\s?you|you\s?are){EN_END}",
        en_order,
    ),
    _rule(
        "your",
        r"\s?(?:new|real|true|actual|only)\s?(?:role|task|instructions?|persona|identity|name"
        r"|purpose|goal|job|rules?)\s?(?:is|are|:|will\s?be)",
        en_word_start,
    ),
    _rule(
        "new|updated|real|actual|override|overriding",
        r"\s?(?:instructions?|system\s?prompt)\s?:",
        en_word_start,
    ),
    _rule("jailbreak|jailbreaked|jailbroken", rf"\s?(?:mode|prompt){EN_END}", en_word_start),
    _rule(
        "dan|god|unfiltered|do|you",
        r"(?:(?<=dan)|(?<=god)|(?<=unfiltered))\s?mode|(?<=do)\s?anything\s?now"
        r"|(?<=you)\s?(?:are\s?(?:now\s?)?in\s?developer\s?mode|are\s?jailbroken"
        rf"|have\s?been\s?jailbroken){EN_END}",
        en_word_start,
    ),
    _rule(
        "enable|enter|activate|switch|turn",
        r"(?:(?<=switch)\s?to|(?<=turn)\s?on)?\s?developer\s?mode",
        en_order,
    ),
)

# Showing the hidden prompt.
_PROMPT_LEAKS = (
    _rule(
        "泄露|输出|告诉我|显示|打印|复述|重复|透露|说出|展示|念出|给我看",
        f"{IN_CLAUSE}{{0,10}}(?:系统提示|提示词|system\\s?prompt|你的设定|你的指令|你的人设"
        "|初始指令|原始指令|系统指令|系统消息|你的规则)",
    ),
    _rule(
        "reveal|show|print|repeat|output|leak|tell|display|dump|give|share",
        rf"{EN_END}.{{0,30}}?(?:system\s?prompt|system\s?message|your\s?(?:prompt|instructions"
        r"|guidelines|system\s?message|initial\s?prompt)|initial\s?(?:prompt|instructions)"
        r"|hidden\s?(?:prompt|instructions))",
        en_word_start,
    ),
)

# A forged turn: role markers, chat-template tokens, tool calls.
_FORGED_TURNS = (
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
    _rule("\"role|'role", rf"[\"']{BLANKS}:{BLANKS}[\"'](?:system|assistant|developer|tool)[\"']"),
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
)

# In the order they are tried.
STEERING_RULES: tuple[Rule, ...] = (*_OVERRIDES, *_NEW_IDENTITIES, *_PROMPT_LEAKS, *_FORGED_TURNS)
