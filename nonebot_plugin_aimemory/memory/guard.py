"""What must never enter long-term memory: text that tries to steer the model, and
personal identifiers (masked before storage)."""

from __future__ import annotations

import re
import unicodedata

# Words that name a chat role when followed by a colon ("system:"), in brackets ("[system]")
# or as a heading ("### System:").
_ROLES = r"(?:system|assistant|developer|user)"

_INJECTION_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(pattern, re.IGNORECASE | re.MULTILINE)
    for pattern in (
        r"\b(ignore|disregard|forget|override)\b.{0,30}\b(previous|prior|above|earlier|all|system)\b.{0,20}\b(instructions?|prompts?|rules?|messages?)",
        r"\b(reveal|show|print|repeat|output|leak)\b.{0,30}\b(system\s*prompt|your\s+(prompt|instructions))",
        r"\byou\s+are\s+now\b",
        r"\b(jailbreak|developer\s+mode|DAN\s+mode)\b",
        # Not "不要忽略…" (the opposite of steering) nor "忘记了…" (a fact about someone).
        r"(?<!不要)(?<!别)(?<!请勿)(?<!不能)(?<!不可)(忽略|无视|忘记|忘掉|不要理会|覆盖)(?![了过])"
        r".{0,10}(之前|以上|上面|前面|先前|此前|原来|原有|所有|系统).{0,10}"
        r"(指令|指示|提示|规则|设定|要求|命令|对话)",
        r"(你现在是|从现在(开始|起)你(是|就是|要扮演)|你的新(身份|角色|设定)是|现在开始扮演)",
        r"(泄露|输出|告诉我|显示|打印|复述).{0,10}(系统提示|提示词|system\s*prompt|你的设定|你的指令)",
        r"(开发者模式|越狱模式|解除(所有)?限制)",
        # A role marker anywhere, but not inside a word: "filesystem:" or "superuser:" are
        # ordinary text, "…吃素。system: …" is a forged turn.
        rf"(?<![A-Za-z0-9_]){_ROLES}\s*[:：]",
        rf"\[\s*/?\s*({_ROLES}|INST|SYS)\s*\]|<<\s*/?\s*SYS\s*>>",
        rf"<\s*/?\s*{_ROLES}\s*>|<\|\s*[A-Za-z_]+\s*\|>",
        rf"^\s*#{{2,}}\s*({_ROLES}|instructions?|response)\s*(?:[:：]|$)",
        r"[\"']role[\"']\s*:\s*[\"'](system|assistant|developer|tool)[\"']",
        r"[\"']?(tool_calls|function_call)[\"']?\s*:|<\s*/?\s*(tool_call|function_call)\s*>",
        # A forged tool call: both keys of one call, in either order.
        r"[\"'](name|function)[\"']\s*:.{0,200}?[\"'](arguments|parameters)[\"']\s*:",
        r"[\"'](arguments|parameters)[\"']\s*:.{0,200}?[\"'](name|function)[\"']\s*:",
    )
)

_D = "[0-9\uff10-\uff19]"  # ASCII or full-width digit
_SEP = "[- \u3000\uff0d]"  # hyphen, space, ideographic space, full-width hyphen
_ID_CARD = re.compile(
    rf"(?<![0-9A-Za-z\uff10-\uff19])({_D}{{17}}[0-9Xx\uff10-\uff19\uff38\uff58])(?![0-9A-Za-z\uff10-\uff19])"
)
_BANK_CARD = re.compile(rf"(?<!{_D})(?<!-)({_D}(?:[ -]?{_D}){{12,18}})(?!{_D})(?!-)")
_MOBILE_PREFIX = rf"((?:[+\uff0b]?(?:86|\uff18\uff16){_SEP}?)?)"
_MOBILE_HEAD = rf"([1\uff11][3-9\uff13-\uff19]{_D})"
# Eleven digits in a row, not part of a longer digit run.
_MOBILE = re.compile(rf"(?<!{_D}){_MOBILE_PREFIX}{_MOBILE_HEAD}(){_D}{{4}}({_D}{{4}})(?!{_D})")
# 3-4-4 digits with one separator throughout ("138 1234 5678", "138-1234-5678"), not a piece
# of a longer group of separated digits.
_MOBILE_SPACED = re.compile(
    rf"(?<!{_D})(?<!{_D}{_SEP}){_MOBILE_PREFIX}{_MOBILE_HEAD}({_SEP}){_D}{{4}}\3({_D}{{4}})"
    rf"(?!{_D})(?!{_SEP}{_D})"
)
_ID_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
_ID_CHECK = "10X98765432"


def injection_reason(text: str) -> str | None:
    """Why `text` looks like an attempt to steer the model (None if it does not). The raw
    text, its NFKC form and that form whitespace-folded (invisible format characters
    dropped) are all checked: full-width letters and a phrase split over lines or by
    zero-width spaces do not slip through."""
    for candidate in _scan_forms(text):
        for pattern in _INJECTION_PATTERNS:
            match = pattern.search(candidate)
            if match:
                return f"内容疑似在操控 AI 的指令（“{match.group(0).strip()[:20]}”）"
    return None


def _scan_forms(text: str) -> dict[str, None]:
    """The distinct forms of `text` the injection patterns are run over."""
    compatible = unicodedata.normalize("NFKC", text)
    visible = "".join(c for c in compatible if unicodedata.category(c) != "Cf")
    return dict.fromkeys((text, compatible, " ".join(visible.split())))


def is_valid_id_card(number: str) -> bool:
    """A mainland resident ID number whose check digit is right."""
    number = unicodedata.normalize("NFKC", number)
    if len(number) != 18 or not number[:17].isdigit():
        return False
    total = sum(int(d) * w for d, w in zip(number[:17], _ID_WEIGHTS, strict=True))
    return _ID_CHECK[total % 11] == number[17].upper()


def is_luhn_valid(digits: str) -> bool:
    """Whether the digits pass the Luhn checksum of bank cards."""
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = int(char)
        if index % 2 == 1:
            value *= 2
            if value > 9:
                value -= 9
        total += value
    return total % 10 == 0


def mask_pii(text: str) -> str:
    """Mask checksum-valid ID-card numbers, Luhn-valid bank cards and mainland mobiles
    (also written with spaces or hyphens, or in full-width digits)."""

    def id_card(match: re.Match[str]) -> str:
        """Mask the middle of a valid ID-card number."""
        number = match.group(1)
        return number[:3] + "*" * 11 + number[-4:] if is_valid_id_card(number) else number

    def bank_card(match: re.Match[str]) -> str:
        """Mask all but the last four digits of a Luhn-valid card number."""
        raw = match.group(1)
        digits = re.sub(r"[ -]", "", raw)
        if 13 <= len(digits) <= 19 and is_luhn_valid(digits):
            return "*" * (len(digits) - 4) + digits[-4:]
        return raw

    def mobile(match: re.Match[str]) -> str:
        """Mask the middle four digits of a mobile number, keeping how it was written."""
        prefix, head, separator, tail = match.groups()
        return f"{prefix}{head}{separator}****{separator}{tail}"

    # Mobiles before bank cards: "+86 138 1234 5678" is 13 digits a card might claim.
    text = _ID_CARD.sub(id_card, text)
    text = _MOBILE_SPACED.sub(mobile, _MOBILE.sub(mobile, text))
    return _BANK_CARD.sub(bank_card, text)
