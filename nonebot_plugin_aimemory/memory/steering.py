"""The shapes of text that steer a model, as rules over folded text (lower case, ASCII
punctuation, see `text/confusables.py`): overriding what came before, a new identity,
showing the hidden prompt, and forged turns (role markers, chat-template tokens, tool calls).

Every pattern is linear: it starts with literal words (so the regex engine skips ahead to
them), its gaps are bounded, and where its words may stand (not after a negation, at the
start of an order) is decided by a check of the few characters before a match, not by
lookbehinds tried at every position."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass

from ..text.confusables import is_han

# Whether a match starting at this position of the text counts; the flag says a blank
# stood there between two Chinese characters before they were joined.
Context = Callable[[str, int, bool], bool]

# Within one clause (the text is folded: "，：；！？" are ASCII there; "。" is not).
_IN_CLAUSE = "[^。!?;\n]"
_BLANKS = r"\s{0,3}"  # runs of blanks are single spaces in folded text

# -- Chinese: what came before, the model's rules, and the verbs that throw them away
_ZH_EARLIER = (
    "之前|以上|上面|上述|前面|先前|此前|原来|原有|原先|原本|刚才|所有|全部|一切|系统|系統"
    "|你的|你收到的|已有|现有|开发者|官方|默认|初始|原始|预设|預設"
)
# Without "系统": "系统提示无效的验证码" is an app's message, not an override.
_ZH_EARLIER_VOID = (
    "之前|以上|上面|上述|前面|先前|此前|原来|原有|原先|原本|刚才|所有|全部|一切|你的|已有|现有|预设"
)
# Nouns only a model has: throwing these away is steering wherever it is said.
_ZH_MODEL_RULES = (
    "指令|指示|提示词|提示詞|系统提示|设定|設定|人设|人設|系统消息|prompt|约束|約束|守则|准则|底线"
)
# Nouns people have too ("之前的规则"): throwing these away is steering only as an order.
_ZH_ANY_RULES = "规则|規則|要求|命令|对话|對話|内容|提示|规定|规矩|限制|记忆|記憶"
_ZH_IGNORE = (
    "忽略|忽视|忽視|无视|無視|忘记|忘記|忘掉|忘却|遗忘|不要理会|不要理會|别理会|不用理会|不必理会"
    "|无需理会|不理会|不要管|别管|不用管|不必管|抛开|抛弃|丢掉|丢弃|扔掉|放弃|跳过|绕过|覆盖|覆蓋"
    "|推翻|不再遵守|不要遵守|别遵守|不用遵守|无需遵守|停止遵守|不再遵循|不要遵循|别遵循|不再听从|不要听从"
)
_ZH_CANCEL = "作废|取消|清除|清空|删除|删掉|撤销|废除|废弃"
_ZH_DROPPED = (
    "忘了|忘掉|忘记|忘光|忘干净|忽略|无视|抛开|抛弃|丢掉|扔掉|删掉|删除|清空|清除|作废|废除|放下"
)
_ZH_VOID = (
    "作废|无效|無效|失效|不算数|不作数|不算|不再有效|取消|废除|清零|不用管|不用理会|不必理会|可以忽略"
    "|忽略|不再适用"
)
# "不要忽略早餐", "他经常忽略…": a negated or habitual verb orders nothing.
_ZH_NEGATIONS = (
    "不",
    "别",
    "勿",
    "莫",
    "没",
    "未",
    "又",
    "曾",
    "总",
    "常",
    "不要",
    "不能",
    "不可",
    "不会",
    "不得",
    "不准",
    "不许",
    "容易",
    "经常",
    "常常",
    "总是",
    "老是",
    "一直",
)
# Words after which a clause gives an order ("请", "你", "现在", "从现在起"…).
_ZH_ORDER_WORDS = (
    "请",
    "請",
    "你",
    "您",
    "先",
    "并",
    "並",
    "再",
    "要",
    "须",
    "务必",
    "務必",
    "立即",
    "立刻",
    "马上",
    "现在",
    "現在",
    "起",
    "始",
    "就",
    "直接",
    "然后",
    "接下来",
    "麻烦",
    "统统",
    "一律",
)
_ZH_ROLE = "系统|系統|助手|用户|用戶|人类|人類"
_ZH_ORDERS_TO_PLAY = (
    "现在",
    "接下来",
    "下面",
    "请",
    "请你",
    "开始",
    "你要",
    "你将",
    "你需要",
    "你必须",
)

# -- English (Chinese characters count as word characters for `\b`, so words are
# delimited by the contexts below and by `(?![a-z])`)
_EN_END = "(?![a-z])"
_EN_FOLLOW = r"(?:follow|obey|listen\s?to|adhere\s?to|comply\s?with)"


def _words_then(tails: dict[str, str]) -> tuple[str, str]:
    """Start words and what must come right after each (so that every start word is one
    English word, found even glued to the next one): the words, and the pattern of the
    tails, each after a lookbehind for its word."""
    words = "|".join(tails)
    rest = "|".join(f"(?<={word}){tail}" for word, tail in tails.items())
    return words, f"(?:{rest})"


# Verbs that throw away what came before; a word's tail completes a verb of several words.
_EN_IGNORE, _EN_IGNORE_TAIL = _words_then(
    {
        **dict.fromkeys(
            [
                "ignore",
                "disregard",
                "forget",
                "override",
                "overwrite",
                "bypass",
                "skip",
                "discard",
                "abandon",
                "erase",
            ],
            "",
        ),
        "throw": r"\s?away",
        "set": r"\s?aside",
        "put": r"\s?aside",
        "stop": r"\s?following",
        "do": rf"\s?not\s?{_EN_FOLLOW}",
        "don": rf"'?t\s?{_EN_FOLLOW}",
        "never": rf"\s?{_EN_FOLLOW}",
        "no": rf"\s?longer\s?{_EN_FOLLOW}",
    }
)
_EN_EARLIER = (
    r"(?:previous|prior|above|earlier|preceding|foregoing|initial|original|old|existing|system"
    r"|your|all|any|these|those|every|the|my|its|developer|default)"
)
_EN_EARLIER_STRICT = (
    r"(?:previous|prior|above|earlier|preceding|foregoing|initial|original|system|your"
    r"|(?:all|any)\s?(?:of\s?)?(?:the\s?|your\s?)?(?:previous|prior|above|earlier|preceding|system|original))"
)
_EN_MODEL_RULES = (
    r"(?:instructions?|prompts?|system\s?prompts?|system\s?messages?|programming|guidelines?"
    r"|directives?|guardrails?|safeguards?|persona|training)"
)
_EN_ANY_RULES = (
    r"(?:rules?|restrictions?|constraints?|limitations?|limits|messages?|commands?|orders?"
    r"|polic(?:y|ies)|context|conversation|settings?)"
)
_EN_GAP = r"[\W_]{0,4}"
_EN_LINKING_WORDS = (
    r"(?:(?:all|any|every|of|the|and|everything|that|you|were|was|have|been|given|told|about)"
    r"[\W_]{1,4}){0,4}"
)
_EN_FILLER_WORDS = r"(?:[a-z]{1,20}[\W_]{1,4}){0,2}?"
_EN_ROLE = "system|assistant|developer|user|human"
_EN_NEGATIONS = ("not ", "n't ", "never ")
_EN_ORDER_MARKS = ".!?;:,\n([\"'>"
_EN_ORDER_WORD = re.compile(r"(?<![a-z])(?:please|now|must|will)$")


def _anywhere(_text: str, _start: int, _blank: bool) -> bool:
    return True


def _zh_not_negated(text: str, start: int, _blank: bool = False) -> bool:
    return not text[max(0, start - 2) : start].endswith(_ZH_NEGATIONS)


def _zh_not_after_han(text: str, start: int, blank: bool) -> bool:
    return blank or start == 0 or not is_han(text[start - 1])


def _zh_order(text: str, start: int, blank: bool) -> bool:
    """At the start of a clause, or after a word that introduces an order; "群里之前的
    规则全部作废" is news, not an order."""
    if not _zh_not_negated(text, start):
        return False
    return _zh_not_after_han(text, start, blank) or text[max(0, start - 3) : start].endswith(
        _ZH_ORDER_WORDS
    )


def _en_word_start(text: str, start: int, _blank: bool = False) -> bool:
    return start == 0 or not ("a" <= text[start - 1] <= "z")


def _en_not_negated(text: str, start: int, _blank: bool = False) -> bool:
    return _en_word_start(text, start) and not text[max(0, start - 6) : start].endswith(
        _EN_NEGATIONS
    )


def _en_not_negated_nor_infinitive(text: str, start: int, _blank: bool = False) -> bool:
    """Not "don't ignore…" nor "tends to ignore the rules"."""
    return _en_not_negated(text, start) and not text[max(0, start - 3) : start].endswith("to ")


def _en_not_after_word(text: str, start: int, _blank: bool = False) -> bool:
    """ "filesystem:" and "superuser:" are ordinary text; "…吃素。system: …" is a turn."""
    if start == 0:
        return True
    char = text[start - 1]
    return not (char.isascii() and (char.isalnum() or char == "_"))


def _en_order(text: str, start: int, _blank: bool = False) -> bool:
    """At a line or sentence start, or after "please", "now", "must", "will"."""
    before = text[max(0, start - 8) : start].rstrip(" ")
    return not before or before[-1] in _EN_ORDER_MARKS or bool(_EN_ORDER_WORD.search(before))


def _after_an_order_to_play(text: str, start: int, _blank: bool = False) -> bool:
    """ "扮演" as an order ("请扮演", "现在开始扮演", "你要扮演"), not "他在话剧里扮演"."""
    return text[max(0, start - 4) : start].endswith(_ZH_ORDERS_TO_PLAY)


def _line_start(text: str, start: int, _blank: bool = False) -> bool:
    before = text[max(0, start - 4) : start].rstrip(" ")
    return before.endswith("\n") or (not before and start <= 4)


@dataclass(frozen=True, slots=True)
class Rule:
    """One steering pattern: one of its `starts` (literal words), then `rest`; a match
    counts where `context` allows it."""

    starts: tuple[str, ...]
    pattern: re.Pattern[str]
    context: Context = _anywhere

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


def _rule(starts: str, rest: str, context: Context = _anywhere) -> Rule:
    words = tuple(starts.split("|"))
    alternatives = "|".join(re.escape(word) for word in words)
    return Rule(words, re.compile(f"(?:{alternatives})(?:{rest})", re.MULTILINE), context)


_NOT_DONE = "(?![了过着])"  # "忘记了之前的规则" tells what happened, it orders nothing
_ZH_EARLIER_THEN = f"{_IN_CLAUSE}{{0,6}}(?:{_ZH_EARLIER}){_IN_CLAUSE}{{0,10}}"

STEERING_RULES: tuple[Rule, ...] = (
    # -- throwing away what came before: verb first, "把…忘了", "…作废"
    _rule(
        f"{_ZH_IGNORE}|{_ZH_CANCEL}",
        f"{_NOT_DONE}{_ZH_EARLIER_THEN}(?:{_ZH_MODEL_RULES})",
        _zh_not_negated,
    ),
    _rule(_ZH_IGNORE, f"{_NOT_DONE}{_ZH_EARLIER_THEN}(?:{_ZH_ANY_RULES})", _zh_order),
    _rule(
        "把|将|將",
        f"{_IN_CLAUSE}{{0,4}}(?:{_ZH_EARLIER}){_IN_CLAUSE}{{0,10}}(?:{_ZH_MODEL_RULES})"
        f"{_IN_CLAUSE}{{0,6}}(?:{_ZH_DROPPED})",
        _zh_not_negated,
    ),
    _rule(
        "把|将|將",
        f"{_IN_CLAUSE}{{0,4}}(?:{_ZH_EARLIER}){_IN_CLAUSE}{{0,10}}(?:{_ZH_ANY_RULES})"
        f"{_IN_CLAUSE}{{0,6}}(?:{_ZH_DROPPED})",
        _zh_order,
    ),
    _rule(
        _ZH_EARLIER_VOID,
        f"{_IN_CLAUSE}{{0,10}}(?:{_ZH_MODEL_RULES}){_IN_CLAUSE}{{0,4}}(?:{_ZH_VOID})(?![的地])",
    ),
    _rule(
        _ZH_EARLIER_VOID,
        f"{_IN_CLAUSE}{{0,10}}(?:{_ZH_ANY_RULES}){_IN_CLAUSE}{{0,4}}(?:{_ZH_VOID})(?![的地])",
        _zh_order,
    ),
    _rule(
        "你不再|你无需|你不用|你不必|你可以不|你已经|你现在|你从此",
        "(?:不再|无需|不用|不必|可以不)?(?:受|遵守|遵循|理会|服从|听从|考虑)"
        f"{_IN_CLAUSE}{{0,8}}(?:{_ZH_MODEL_RULES}|{_ZH_ANY_RULES}|审查|道德)",
    ),
    _rule(
        _EN_IGNORE,
        f"{_EN_IGNORE_TAIL}{_EN_GAP}{_EN_LINKING_WORDS}{_EN_EARLIER}{_EN_GAP}{_EN_FILLER_WORDS}{_EN_MODEL_RULES}"
        f"{_EN_END}",
        _en_not_negated,
    ),
    _rule(
        _EN_IGNORE,
        rf"{_EN_IGNORE_TAIL}{_EN_GAP}(?:(?:all|the|of)[\W_]{{1,4}}){{0,2}}{_EN_EARLIER_STRICT}{_EN_GAP}"
        f"{_EN_FILLER_WORDS}{_EN_ANY_RULES}{_EN_END}",
        _en_not_negated_nor_infinitive,
    ),
    _rule(
        "ignore|disregard|forget",
        rf"\s?(?:all\s?|everything\s?)?(?:of\s?)?(?:the\s?)?(?:above|foregoing|preceding){_EN_END}",
        _en_not_negated,
    ),
    _rule(
        "ignore|disregard|forget",
        r"\s?(?:about\s?)?(?:everything|anything|all)\s?(?:before|above|prior|previous|earlier"
        rf"|so\s?far|you\s?know|you\s?(?:were|have\s?been|'ve\s?been)\s?told){_EN_END}",
        _en_not_negated,
    ),
    # -- a new identity
    _rule("你现在", "(?:是|就是|扮演|变成|成为|叫)(?!不是|否|在|不|谁|什么|哪)"),
    _rule("现在", "(?:开始)?你(?:是|就是|扮演|变成|成为)(?!不是|否|在|谁|什么|哪)"),
    _rule(
        "从现在|从此刻|从这一刻|从今以后|从今往后",
        "(?:开始|起)?[,\\s]{0,3}你(?:就|将|要|必须|只能|得|会)?"
        "(?:是|扮演|变成|成为|叫|不再|只|的(?:身份|角色|名字))",
    ),
    _rule("你的新", "(?:身份|角色|设定|名字|人设|任务|指令)(?:是|为|:)"),
    _rule("扮演", "", _after_an_order_to_play),
    _rule("越狱模式|上帝模式|无限制模式|dan模式", ""),
    _rule(
        "你现在|你已经|你进入|你处于|你切换到|你开启",
        "(?:现在|已经){0,2}(?:进入|处于|切换到|开启)?了?开发者模式",
    ),
    # "开发者模式在手机设置里" is about phones; "进入开发者模式" as an order is not.
    _rule("进入|开启|启用|切换到|打开", "开发者模式", _zh_order),
    _rule("解除", "(?:你的|所有|全部|一切)(?:限制|约束|封印)"),
    _rule("没有任何|不受任何", "(?:限制|约束|规则|审查)的(?:ai|人工智能|助手|机器人|模型)"),
    _rule(
        "from",
        r"\s?now\s?on[\W_]{0,4}you[\W_]{0,3}(?:are|will|must|shall|should|act|behave|respond|reply|answer"
        rf"|only|can\s?only|have\s?to|need\s?to|'re|re|become|play|pretend|speak|talk|obey){_EN_END}",
        _en_word_start,
    ),
    _rule(
        "you",
        r"\s?(?:are|'re)\s?now"
        rf"\s?(?:a|an|my|called|named|dan|free|unrestricted|jailbroken|no\s?longer){_EN_END}",
        _en_word_start,
    ),
    _rule(
        "act|behave|respond|pretend|roleplay|role",
        r"(?:(?<=role)[-\s]?play|(?<!role))"
        rf"\s?(?:as|like|to\s?be|that\s?you|you\s?are){_EN_END}",
        _en_order,
    ),
    _rule(
        "your",
        r"\s?(?:new|real|true|actual|only)\s?(?:role|task|instructions?|persona|identity|name"
        r"|purpose|goal|job|rules?)\s?(?:is|are|:|will\s?be)",
        _en_word_start,
    ),
    _rule(
        "new|updated|real|actual|override|overriding",
        r"\s?(?:instructions?|system\s?prompt)\s?:",
        _en_word_start,
    ),
    _rule("jailbreak|jailbreaked|jailbroken", rf"\s?(?:mode|prompt){_EN_END}", _en_word_start),
    _rule(
        "dan|god|unfiltered|do|you",
        r"(?:(?<=dan)|(?<=god)|(?<=unfiltered))\s?mode|(?<=do)\s?anything\s?now"
        r"|(?<=you)\s?(?:are\s?(?:now\s?)?in\s?developer\s?mode|are\s?jailbroken"
        rf"|have\s?been\s?jailbroken){_EN_END}",
        _en_word_start,
    ),
    _rule(
        "enable|enter|activate|switch|turn",
        r"(?:(?<=switch)\s?to|(?<=turn)\s?on)?\s?developer\s?mode",
        _en_order,
    ),
    # -- showing the hidden prompt
    _rule(
        "泄露|输出|告诉我|显示|打印|复述|重复|透露|说出|展示|念出|给我看",
        f"{_IN_CLAUSE}{{0,10}}(?:系统提示|提示词|system\\s?prompt|你的设定|你的指令|你的人设"
        "|初始指令|原始指令|系统指令|系统消息|你的规则)",
    ),
    _rule(
        "reveal|show|print|repeat|output|leak|tell|display|dump|give|share",
        rf"{_EN_END}.{{0,30}}?(?:system\s?prompt|system\s?message|your\s?(?:prompt|instructions"
        r"|guidelines|system\s?message|initial\s?prompt)|initial\s?(?:prompt|instructions)"
        r"|hidden\s?(?:prompt|instructions))",
        _en_word_start,
    ),
    # -- a forged turn: role markers, chat-template tokens, tool calls
    _rule(
        _ZH_ROLE,
        f"{_BLANKS}:(?!{_BLANKS}(?:windows|win|mac|ios|android|linux|ubuntu|centos|debian"
        "|harmony|鸿蒙|安卓|[0-9]))",
        _zh_not_after_han,
    ),
    _rule(
        "[|【|〖|〔|<|《|「|『",
        f"{_BLANKS}/?{_BLANKS}(?:{_ZH_ROLE}|{_EN_ROLE}|sys|inst){_BLANKS}"
        f"(?:消息|提示|指令|设定|通知|message|prompt)?{_BLANKS}[\\]】〗〕>》」』]",
    ),
    _rule("<<", f"{_BLANKS}/?{_BLANKS}sys{_BLANKS}>>"),
    _rule(_EN_ROLE, f"{_BLANKS}:", _en_not_after_word),
    _rule(
        "<",
        r"(?:\|[a-z_]{1,30}\|>"
        rf"|{_BLANKS}/?{_BLANKS}(?:start_of_turn|end_of_turn|im_start|im_end|tool_call"
        rf"|function_call|tool){_BLANKS}>)",
    ),
    _rule(
        "##",
        rf"#{{0,4}}{_BLANKS}(?:{_EN_ROLE}|instructions?|response){_BLANKS}(?::|$)",
        _line_start,
    ),
    _rule(
        "\"role|'role", rf"[\"']{_BLANKS}:{_BLANKS}[\"'](?:system|assistant|developer|tool)[\"']"
    ),
    _rule("tool_calls|function_call", rf"[\"']?{_BLANKS}:"),
    # A forged tool call: both keys of one call, in either order.
    _rule(
        "\"name|'name|\"function|'function",
        rf"[\"']{_BLANKS}:.{{0,200}}?[\"'](?:arguments|parameters)[\"']{_BLANKS}:",
    ),
    _rule(
        "\"arguments|'arguments|\"parameters|'parameters",
        rf"[\"']{_BLANKS}:.{{0,200}}?[\"'](?:name|function)[\"']{_BLANKS}:",
    ),
)

# Rules are tried only where one of their start words stands: each start word has a key
# (its first English word, or the shortest start word it begins with: "你" for "你现在"),
# the keys are found at once (the English ones with `str.find`, at word starts; the others,
# Chinese, brackets and quotes, with one pattern of literals), and the rules of a key are
# matched right where it stands.
_ASCII_WORD = re.compile("[a-z]+")
_TRIED_IN_PLACE_AT_MOST = 32


def _ascii_key(word: str) -> str | None:
    """The English word a start word begins with ("tell" for "tell me"), or None."""
    match = _ASCII_WORD.match(word)
    return match.group(0) if match else None


def _index_by_key(rules: tuple[Rule, ...]) -> dict[str, tuple[Rule, ...]]:
    """The rules to try where each key stands: a key is a start word's first English word,
    or the shortest start word it begins with."""
    others = {w for rule in rules for w in rule.starts if _ascii_key(w) is None}
    index: dict[str, list[Rule]] = {}
    for rule in rules:
        for word in rule.starts:
            key = _ascii_key(word) or min((s for s in others if word.startswith(s)), key=len)
            keyed = index.setdefault(key, [])
            if rule not in keyed:
                keyed.append(rule)
    return {key: tuple(keyed) for key, keyed in index.items()}


_RULES_BY_KEY = _index_by_key(STEERING_RULES)
_ENGLISH_KEYS = frozenset(key for key in _RULES_BY_KEY if _ascii_key(key) == key)
_OTHER_KEYS = re.compile(
    "|".join(
        re.escape(key) for key in sorted(set(_RULES_BY_KEY) - _ENGLISH_KEYS, key=len, reverse=True)
    )
)


_ENGLISH_KEY_LENGTHS = sorted({len(key) for key in _ENGLISH_KEYS})
_LATIN_WORD = re.compile(b"[a-z]+")
_LOWER_A, _LOWER_Z = ord("a"), ord("z")


@functools.lru_cache(maxsize=4096)
def _english_keys_of(word: bytes) -> tuple[str, ...]:
    """The English keys `word` begins with."""
    text = word.decode()
    return tuple(
        text[:length]
        for length in _ENGLISH_KEY_LENGTHS
        if length <= len(text) and text[:length] in _ENGLISH_KEYS
    )


def find_steering(folded: str, blanks: frozenset[int] = frozenset()) -> re.Match[str] | None:
    """A match of a steering rule in `folded` that counts, or None; `blanks` are the
    positions where a blank between Chinese characters was removed."""
    for key, starts in _key_places(folded).items():
        rules = _RULES_BY_KEY[key]
        if len(starts) > _TRIED_IN_PLACE_AT_MOST:
            # A flood of one word: let the regex engine scan for the rules instead.
            for rule in rules:
                if (match := rule.search(folded, blanks)) is not None:
                    return match
            continue
        for at in starts:
            for rule in rules:
                if (match := rule.match_at(folded, at, at in blanks)) is not None:
                    return match
    return None


def _key_places(folded: str) -> dict[str, list[int]]:
    """Where each key stands in `folded` (English ones only at a word start)."""
    places: dict[str, list[int]] = {}
    for hit in _OTHER_KEYS.finditer(folded):
        start, end = hit.span()
        places.setdefault(hit.group(0), []).append(start)
        # A key may start inside another ("以上面": "以上", "上面"); finditer does not overlap.
        for inside in range(start + 1, end):
            if (overlapping := _OTHER_KEYS.match(folded, inside)) is not None:
                places.setdefault(overlapping.group(0), []).append(inside)
    # At word starts, not only as whole words: with invisible characters dropped,
    # "ignore\u200bprevious" is one word, "ignoreprevious". Looked up in bytes, one per
    # character, since a text holding Chinese would cost a conversion per `str.find`.
    latin = folded.encode("ascii", "replace")
    keys = {key for word in set(_LATIN_WORD.findall(latin)) for key in _english_keys_of(word)}
    for key in keys:
        key_bytes = key.encode()
        at = latin.find(key_bytes)
        while at >= 0:
            if at == 0 or not _LOWER_A <= latin[at - 1] <= _LOWER_Z:
                places.setdefault(key, []).append(at)
            at = latin.find(key_bytes, at + 1)
    return places
