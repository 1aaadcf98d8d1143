"""The words of the steering rules, in Chinese and in English, as regex alternatives over
folded text (`normalise.py`): what came before, the model's rules, the verbs that throw
them away, negations, the words that introduce an order, role names."""

from __future__ import annotations

import re

# Within one clause (the text is folded: "，：；！？" are ASCII there; "。" is not).
IN_CLAUSE = "[^。!?;\n]"
BLANKS = r"\s{0,3}"  # runs of blanks are single spaces in folded text

# What came before, in Chinese.
ZH_EARLIER = (
    "之前|以上|上面|上述|前面|先前|此前|原来|原有|原先|原本|刚才|所有|全部|一切|系统|系統"
    "|你的|你收到的|已有|现有|开发者|官方|默认|初始|原始|预设|預設"
)
# Without "系统": "系统提示无效的验证码" is an app's message, not an override.
ZH_EARLIER_VOID = (
    "之前|以上|上面|上述|前面|先前|此前|原来|原有|原先|原本|刚才|所有|全部|一切|你的|已有|现有|预设"
)
# Nouns only a model has: throwing these away is steering wherever it is said.
ZH_MODEL_RULES = (
    "指令|指示|提示词|提示詞|系统提示|设定|設定|人设|人設|系统消息|prompt|约束|約束|守则|准则|底线"
)
# Nouns people have too ("之前的规则"): throwing these away is steering only as an order.
ZH_ANY_RULES = "规则|規則|要求|命令|对话|對話|内容|提示|规定|规矩|限制|记忆|記憶"
ZH_IGNORE = (
    "忽略|忽视|忽視|无视|無視|忘记|忘記|忘掉|忘却|遗忘|不要理会|不要理會|别理会|不用理会|不必理会"
    "|无需理会|不理会|不要管|别管|不用管|不必管|抛开|抛弃|丢掉|丢弃|扔掉|放弃|跳过|绕过|覆盖|覆蓋"
    "|推翻|不再遵守|不要遵守|别遵守|不用遵守|无需遵守|停止遵守|不再遵循|不要遵循|别遵循|不再听从|不要听从"
)
ZH_CANCEL = "作废|取消|清除|清空|删除|删掉|撤销|废除|废弃"
ZH_DROPPED = (
    "忘了|忘掉|忘记|忘光|忘干净|忽略|无视|抛开|抛弃|丢掉|扔掉|删掉|删除|清空|清除|作废|废除|放下"
)
ZH_VOID = (
    "作废|无效|無效|失效|不算数|不作数|不算|不再有效|取消|废除|清零|不用管|不用理会|不必理会|可以忽略"
    "|忽略|不再适用"
)
# "不要忽略早餐", "他经常忽略…": a negated or habitual verb orders nothing.
ZH_NEGATIONS = (
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
ZH_ORDER_WORDS = (
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
ZH_ROLE = "系统|系統|助手|用户|用戶|人类|人類"
ZH_ORDERS_TO_PLAY = (
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

# English words end where no letter follows: Chinese characters count as word characters
# for `\b`, so words are delimited by `(?![a-z])` and by the contexts of `steering_contexts`.
EN_END = "(?![a-z])"
EN_FOLLOW = r"(?:follow|obey|listen\s?to|adhere\s?to|comply\s?with)"


def words_then(tails: dict[str, str]) -> tuple[str, str]:
    """Start words and what must come right after each (so that every start word is one
    English word, found even glued to the next one): the words, and the pattern of the
    tails, each after a lookbehind for its word."""
    words = "|".join(tails)
    rest = "|".join(f"(?<={word}){tail}" for word, tail in tails.items())
    return words, f"(?:{rest})"


# Verbs that throw away what came before; a word's tail completes a verb of several words.
EN_IGNORE, EN_IGNORE_TAIL = words_then(
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
        "do": rf"\s?not\s?{EN_FOLLOW}",
        "don": rf"'?t\s?{EN_FOLLOW}",
        "never": rf"\s?{EN_FOLLOW}",
        "no": rf"\s?longer\s?{EN_FOLLOW}",
    }
)
EN_EARLIER = (
    r"(?:previous|prior|above|earlier|preceding|foregoing|initial|original|old|existing|system"
    r"|your|all|any|these|those|every|the|my|its|developer|default)"
)
EN_EARLIER_STRICT = (
    r"(?:previous|prior|above|earlier|preceding|foregoing|initial|original|system|your"
    r"|(?:all|any)\s?(?:of\s?)?(?:the\s?|your\s?)?(?:previous|prior|above|earlier|preceding|system|original))"
)
EN_MODEL_RULES = (
    r"(?:instructions?|prompts?|system\s?prompts?|system\s?messages?|programming|guidelines?"
    r"|directives?|guardrails?|safeguards?|persona|training)"
)
EN_ANY_RULES = (
    r"(?:rules?|restrictions?|constraints?|limitations?|limits|messages?|commands?|orders?"
    r"|polic(?:y|ies)|context|conversation|settings?)"
)
EN_GAP = r"[\W_]{0,4}"
EN_LINKING_WORDS = (
    r"(?:(?:all|any|every|of|the|and|everything|that|you|were|was|have|been|given|told|about)"
    r"[\W_]{1,4}){0,4}"
)
EN_FILLER_WORDS = r"(?:[a-z]{1,20}[\W_]{1,4}){0,2}?"
EN_ROLE = "system|assistant|developer|user|human"
EN_NEGATIONS = ("not ", "n't ", "never ")
EN_ORDER_MARKS = ".!?;:,\n([\"'>"
EN_ORDER_WORD = re.compile(r"(?<![a-z])(?:please|now|must|will)$")
