"""What must never enter long-term memory: text that tries to steer the model, and
personal identifiers (masked before storage)."""

from __future__ import annotations

import re
import unicodedata

_INJECTION_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(pattern, re.IGNORECASE)
    for pattern in (
        r"\b(ignore|disregard|forget|override)\b.{0,30}\b(previous|prior|above|earlier|all|system)\b.{0,20}\b(instructions?|prompts?|rules?|messages?)",
        r"\b(reveal|show|print|repeat|output|leak)\b.{0,30}\b(system\s*prompt|your\s+(prompt|instructions))",
        r"\byou\s+are\s+now\b",
        r"\b(jailbreak|developer\s+mode|DAN\s+mode)\b",
        r"(忽略|无视|忘记|忘掉|不要理会|覆盖).{0,10}(之前|以上|上面|前面|先前|此前|原来|原有|所有|系统).{0,10}(指令|指示|提示|规则|设定|要求|命令|对话)",
        r"(你现在是|从现在(开始|起)你(是|就是|要扮演)|你的新(身份|角色|设定)是|现在开始扮演)",
        r"(泄露|输出|告诉我|显示|打印|复述).{0,10}(系统提示|提示词|system\s*prompt|你的设定|你的指令)",
        r"(开发者模式|越狱模式|解除(所有)?限制)",
        r"(^|\n)\s*(system|assistant|developer)\s*[:：]",
        r"<\|im_(start|end)\|>|\[/?INST\]|<\s*/?\s*(system|assistant)\s*>",
        r"[\"']?(tool_calls|function_call)[\"']?\s*:",
        r"\{\s*\"name\"\s*:\s*\"[^\"]+\"\s*,\s*\"arguments\"\s*:",
    )
)

_ID_CARD = re.compile(r"(?<![0-9A-Za-z])(\d{17}[\dXx])(?![0-9A-Za-z])")
_BANK_CARD = re.compile(r"(?<![\d-])(\d(?:[ -]?\d){12,18})(?![\d-])")
_MOBILE = re.compile(r"(?<!\d)(?:\+?86[- ]?)?(1[3-9]\d{9})(?!\d)")
_ID_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
_ID_CHECK = "10X98765432"


def injection_reason(text: str) -> str | None:
    """Why `text` looks like an attempt to steer the model (None if it does not). The raw
    text and its NFKC form are both checked, so full-width letters do not slip through."""
    for candidate in dict.fromkeys((text, unicodedata.normalize("NFKC", text))):
        for pattern in _INJECTION_PATTERNS:
            match = pattern.search(candidate)
            if match:
                return f"内容疑似在操控 AI 的指令（“{match.group(0).strip()[:20]}”）"
    return None


def is_valid_id_card(number: str) -> bool:
    """A mainland resident ID number whose check digit is right."""
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
    """Mask checksum-valid ID-card numbers, Luhn-valid bank cards and mainland mobiles."""

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
        """Mask the middle four digits of a mobile number."""
        number = match.group(1)
        return match.group(0).replace(number, number[:3] + "****" + number[-4:])

    text = _ID_CARD.sub(id_card, text)
    text = _BANK_CARD.sub(bank_card, text)
    return _MOBILE.sub(mobile, text)
