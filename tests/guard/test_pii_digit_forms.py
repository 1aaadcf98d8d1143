"""A personal number is masked whatever digits it is written in: every family of Unicode
decimal digits (category Nd, found by scanning `unicodedata`: full-width, Arabic-Indic,
Devanagari, Thai, the mathematical styles…), mixed with ASCII digits and with the
separators the masks already read through, and the superscript or circled digit forms; an
ID's check X in any compatibility letter. Only the masked digits change: the text around
them stays as written, and ordinary numbers in those digits stay unmasked."""

from __future__ import annotations

import sys
import unicodedata

import pytest

from tests.guard.test_pii_masks import BANK_CARDS, ID_CARDS, MOBILES, ORDINARY_NUMBERS, SCOPE, save
from tests.memory.helpers import stored


def _digit_families() -> dict[str, int]:
    """The zero of every family of decimal digits, by a readable name."""
    zeros = {
        ord(char) - unicodedata.decimal(char)
        for char in map(chr, range(sys.maxunicode + 1))
        if unicodedata.category(char) == "Nd"
    }
    return {f"U+{zero:04X} {unicodedata.name(chr(zero)).lower()}": zero for zero in sorted(zeros)}


DIGIT_FAMILIES = _digit_families()
MATHEMATICAL_ZEROS = {0x1D7CE, 0x1D7D8, 0x1D7E2, 0x1D7EC, 0x1D7F6}  # bold … monospace

# The shapes of each kind to rewrite: ASCII digits, with the separators, invisible
# characters, prefixes and letters around them that the masks already read through.
SHAPES = {
    "mobile": [
        MOBILES[name]
        for name in (
            "plain",
            "hyphens",
            "spaces",
            "ideographic spaces",
            "zero-width inside",
            "every digit spaced",
            "+86 prefix",
            "(+86) and hyphens",
            "enumeration commas",
            "an emoji between",
            "glued to letters",
        )
    ],
    "id card": [
        ID_CARDS[name]
        for name in (
            "18 digits",
            "glued to letters",
            "lower-case x",
            "split by hyphens",
            "zero-width inside",
            "15 digits (old)",
        )
    ],
    "bank card": [
        BANK_CARDS[name]
        for name in ("19 digits", "spaces", "16-digit visa", "underscores", "zero-width inside")
    ],
}
AROUND = "小明的手机是{}，别外传"


def rewrite(text: str, zero: int, *, every: int = 1) -> str:
    """`text` with every `every`-th character that is an ASCII digit in the family of `zero`."""
    return "".join(
        chr(zero + int(char)) if char in "0123456789" and index % every == 0 else char
        for index, char in enumerate(text)
    )


def test_the_families_include_every_mathematical_style_and_the_asian_scripts() -> None:
    zeros = set(DIGIT_FAMILIES.values())

    assert MATHEMATICAL_ZEROS | {0x0660, 0x06F0, 0x0966, 0x0E50, 0xFF10} <= zeros
    assert len(zeros) >= 60


@pytest.mark.parametrize("kind", SHAPES)
@pytest.mark.parametrize("zero", DIGIT_FAMILIES.values(), ids=DIGIT_FAMILIES.keys())
def test_a_number_in_any_decimal_digits_is_masked_like_in_ascii(zero, kind) -> None:
    from nonebot_plugin_aimemory.guard import mask_pii

    wrong = []
    for raw, masked in SHAPES[kind]:
        for every in (1, 2):  # all in the family, or every other digit
            written = AROUND.format(rewrite(raw, zero, every=every))
            expected = AROUND.format(rewrite(masked, zero, every=every))
            if mask_pii(written) != expected:
                wrong.append((written, mask_pii(written)))

    assert wrong == []


@pytest.mark.parametrize("zero", DIGIT_FAMILIES.values(), ids=DIGIT_FAMILIES.keys())
def test_ordinary_numbers_in_any_decimal_digits_are_left_alone(zero) -> None:
    from nonebot_plugin_aimemory.guard import mask_pii

    written = [rewrite(text, zero) for text in ORDINARY_NUMBERS]

    assert [text for text in written if mask_pii(text) != text] == []


# The four probes of issue #38, stored raw before the masks read digit forms.
PROBES = {
    "mathematical bold mobile": ("手机 𝟏𝟑𝟖𝟏𝟐𝟑𝟒𝟓𝟔𝟕𝟖", "手机 𝟏𝟑𝟖****𝟓𝟔𝟕𝟖"),
    "sans-serif bold mobile, hyphens": ("𝟭𝟯𝟵-𝟴𝟳𝟲𝟱-𝟰𝟯𝟮𝟭", "𝟭𝟯𝟵-****-𝟰𝟯𝟮𝟭"),
    "Arabic-Indic mobile": ("١٣٨١٢٣٤٥٦٧٨", "١٣٨****٥٦٧٨"),
    "Luhn-valid card in bold": ("卡号 𝟒𝟏𝟏𝟏 𝟏𝟏𝟏𝟏 𝟏𝟏𝟏𝟏 𝟏𝟏𝟏𝟏", "卡号 **** **** **** 𝟏𝟏𝟏𝟏"),
}


@pytest.mark.parametrize(("raw", "masked"), PROBES.values(), ids=PROBES.keys())
def test_the_issue_probes_are_masked(raw, masked) -> None:
    from nonebot_plugin_aimemory.guard import is_personal_number, mask_pii

    assert mask_pii(raw) == masked
    assert is_personal_number(raw)


@pytest.mark.parametrize(("raw", "masked"), PROBES.values(), ids=PROBES.keys())
async def test_the_model_saving_a_probe_stores_it_masked(plugin, raw, masked) -> None:
    result = await save(plugin, f"小明(2001)说：{raw}")

    (record,) = await stored(plugin, SCOPE)
    assert record.content == f"小明(2001)说：{masked}"
    assert raw not in result


def _letters_read_as(ascii_letter: str) -> list[str]:
    """Every letter whose compatibility form is `ascii_letter` (full-width, mathematical…)."""
    return [
        char
        for char in map(chr, range(0x80, sys.maxunicode + 1))
        if unicodedata.category(char)[0] == "L"
        and unicodedata.normalize("NFKC", char) == ascii_letter
    ]


CHECK_XS = _letters_read_as("X") + _letters_read_as("x")


@pytest.mark.parametrize("check_x", CHECK_XS, ids=[unicodedata.name(x).lower() for x in CHECK_XS])
def test_an_id_number_ending_in_any_form_of_x_is_masked(check_x) -> None:
    from nonebot_plugin_aimemory.guard import mask_pii

    written = f"身份证：𝟏𝟏𝟎𝟏𝟎𝟓𝟏𝟗𝟒𝟗𝟏𝟐𝟑𝟏𝟎𝟎𝟐{check_x}。"

    assert mask_pii(written) == f"身份证：𝟏𝟏𝟎***********𝟎𝟎𝟐{check_x}。"


OTHER_DIGIT_FORMS = {
    "circled": ("①③⑧①②③④⑤⑥⑦⑧", "①③⑧****⑤⑥⑦⑧"),
    "superscript": ("¹³⁸¹²³⁴⁵⁶⁷⁸", "¹³⁸****⁵⁶⁷⁸"),
    "dingbat negative circled": ("❶❸❽❶❷❸❹❺❻❼❽", "❶❸❽****❺❻❼❽"),
    "circled list mark before a plain number": ("①13812345678", "①138****5678"),
    "superscript footnote after a plain number": ("13812345678¹", "138****5678¹"),
}


@pytest.mark.parametrize(("raw", "masked"), OTHER_DIGIT_FORMS.values(), ids=OTHER_DIGIT_FORMS)
def test_numbers_in_other_digit_forms_are_masked(raw, masked) -> None:
    from nonebot_plugin_aimemory.guard import mask_pii

    assert mask_pii(f"电话{raw}。") == f"电话{masked}。"


# A masked number inside text of its own script: only the masked digits change.
IN_THEIR_SCRIPT = {
    "Arabic": ("رقم هاتفي ١٣٨١٢٣٤٥٦٧٨ شكرا", "رقم هاتفي ١٣٨****٥٦٧٨ شكرا"),
    "Persian": ("شماره من ۱۳۸-۱۲۳۴-۵۶۷۸ است", "شماره من ۱۳۸-****-۵۶۷۸ است"),
    "Devanagari": ("मेरा फ़ोन १३८१२३४५६७८ है", "मेरा फ़ोन १३८****५६७८ है"),
    "Thai": ("เบอร์โทร ๑๓๘ ๑๒๓๔ ๕๖๗๘ นะครับ", "เบอร์โทร ๑๓๘ **** ๕๖๗๘ นะครับ"),
}


@pytest.mark.parametrize(("raw", "masked"), IN_THEIR_SCRIPT.values(), ids=IN_THEIR_SCRIPT)
def test_text_around_a_masked_number_stays_in_its_own_script(raw, masked) -> None:
    from nonebot_plugin_aimemory.guard import mask_pii

    assert mask_pii(raw) == masked


# Text no mask touches, in the scripts and styles the masks now read.
LEFT_ALONE = {
    "Arabic year and price": "في سنة ٢٠٢٤ كان السعر ١٢٩٩ ريال",
    "Persian date": "تاریخ ۱۴۰۳/۰۱/۱۵",
    "Thai year and price": "ปี ๒๕๖๗ ราคา ๑๒๙๙ บาท",
    "Devanagari year": "वर्ष २०२४ में १२ लोग आए",
    "Bengali count": "১২৩৪৫ জন",
    "mathematical letters": "𝐇𝐞𝐥𝐥𝐨 𝕎𝕠𝕣𝕝𝕕，你好",
    "full-width letters and a year": "Ｈｅｌｌｏ ２０２４",
    "circled list": "①买菜 ②做饭 ③洗碗",
    "square metres": "房子 120m² 总价 ３５０ 万",
}


@pytest.mark.parametrize("text", LEFT_ALONE.values(), ids=LEFT_ALONE)
def test_non_personal_text_in_other_scripts_is_left_alone(text) -> None:
    from nonebot_plugin_aimemory.guard import mask_pii

    assert mask_pii(text) == text
