"""Personal numbers in odd shapes are masked before a memory is stored (mobiles with any run
of punctuation, symbols or blanks between their groups — underscores, slashes, enumeration
commas, wave dashes, brackets —, full-width or invisible characters and a +86/86 prefix;
18-digit IDs glued to letters or split; 15-digit IDs; bank cards with any separators), in
content and tags; ordinary numbers (prices, dates, times, group numbers, order counts,
timestamps, versions, lists) stay."""

from __future__ import annotations

import pytest

from tests.fakes.bots import RecordingBot
from tests.fakes.events import group_message
from tests.memory.helpers import model_calls_one, stored

GROUP = 803
SCOPE = f"g:{GROUP}"

# (as written, as stored)
MOBILES = {
    "plain": ("13812345678", "138****5678"),
    "spaces": ("138 1234 5678", "138 **** 5678"),
    "dots": ("138.1234.5678", "138.****.5678"),
    "hyphens": ("138-1234-5678", "138-****-5678"),
    "mixed separators": ("138 1234-5678", "138 ****-5678"),
    "spaced hyphens": ("138 - 1234 - 5678", "138 - **** - 5678"),
    "full-width digits": ("１３８１２３４５６７８", "１３８****５６７８"),
    "full-width hyphens": ("１３８－１２３４－５６７８", "１３８－****－５６７８"),
    "ideographic spaces": ("138\u30001234\u30005678", "138\u3000****\u30005678"),
    "zero-width inside": ("138\u200b1234\u200b5678", "138\u200b****\u200b5678"),
    "word joiner inside": ("1381\u20602345678", "138*\u2060***5678"),
    "every digit spaced": ("1 3 8 1 2 3 4 5 6 7 8", "1 3 8 * * * * 5 6 7 8"),
    "+86 prefix": ("+86 13812345678", "+86 138****5678"),
    "+86 glued": ("+8613812345678", "+86138****5678"),
    "86 glued": ("8613812345678", "86138****5678"),
    "(+86) and hyphens": ("(+86)138-1234-5678", "(+86)138-****-5678"),
    "+86 and dots": ("+86.138.1234.5678", "+86.138.****.5678"),
    "after a QQ number": ("2001 13812345678", "2001 138****5678"),
    "glued to letters": ("tel13812345678", "tel138****5678"),
    "underscores": ("138_1234_5678", "138_****_5678"),
    "slashes": ("138/1234/5678", "138/****/5678"),
    "spaced slashes": ("138 / 1234 / 5678", "138 / **** / 5678"),
    "enumeration commas": ("138、1234、5678", "138、****、5678"),
    "wave dashes": ("138～1234～5678", "138～****～5678"),
    "wave dashes U+301C": ("138〜1234〜5678", "138〜****〜5678"),
    "full-width commas": ("138，1234，5678", "138，****，5678"),
    "an emoji between": ("138😀1234😀5678", "138😀****😀5678"),
    "(+86) glued": ("(+86)13812345678", "(+86)138****5678"),
    "（86） and hyphens": ("（86）138-1234-5678", "（86）138-****-5678"),
    "+86 and the first group bracketed": ("+86（138）1234-5678", "+86（138）****-5678"),
    "first group bracketed": ("(138)1234-5678", "(138)****-5678"),
    "(+86) and wave dashes": ("(+86)138～1234～5678", "(+86)138～****～5678"),
}
ID_CARDS = {
    "18 digits": ("11010519491231002X", "110***********002X"),
    "glued to letters": ("ID11010519491231002X", "ID110***********002X"),
    "lower-case x": ("11010519491231002x", "110***********002x"),
    "split by spaces": ("110105 19491231 002X", "110*** ******** 002X"),
    "split by hyphens": ("110105-1949-1231-002X", "110***-****-****-002X"),
    "full-width": ("１１０１０５１９４９１２３１００２Ｘ", "１１０***********００２Ｘ"),
    "zero-width inside": ("110105\u200b19491231002X", "110***\u200b********002X"),
    "underscores": ("110105_19491231_002X", "110***_********_002X"),
    "slashes": ("110105/1949/1231/002X", "110***/****/****/002X"),
    "15 digits (old)": ("110105491231002", "110********1002"),
    "15 digits, spaced": ("110105 491231 002", "110*** *****1 002"),
}
BANK_CARDS = {
    "19 digits": ("6222021234567890128", "***************0128"),
    "spaces": ("6222 0212 3456 7890 128", "**** **** **** ***0 128"),
    "dots": ("6222.0212.3456.7890.128", "****.****.****.***0.128"),
    "hyphens": ("6222-0212-3456-7890-128", "****-****-****-***0-128"),
    "zero-width inside": (
        "6222\u200b0212\u200b3456\u200b7890\u200b128",
        "****\u200b****\u200b****\u200b***0\u200b128",
    ),
    "16-digit visa": ("4111 1111 1111 1111", "**** **** **** 1111"),
    "underscores": ("6222_0212_3456_7890_128", "****_****_****_***0_128"),
    "enumeration commas": ("6222、0212、3456、7890、128", "****、****、****、***0、128"),
    "slashes": ("4111/1111/1111/1111", "****/****/****/1111"),
}
# Numbers people ask the bot to remember that are no one's identifier.
ORDINARY_NUMBERS = (
    "价格 1299 元，打折后 999.00 元",
    "¥12,345.67",
    "这台电脑 5999 块",
    "2024-01-15 下午三点开会",
    "2024.01.15",
    "2024/01/15 12:30:45",
    "20240115",
    "群号 123456789",
    "群号 9876543210",
    "QQ 2001，小号 1234567890",
    "订单一共 35 单，退了 2 单",
    "订单号 12345678901",
    "订单号 202401151234567",
    "京东订单 123456789012",
    "流水号 138123456789",
    "时间戳 1700000000",
    "毫秒时间戳 1700000000123",
    "微秒时间戳 1700000000000000",
    "纳秒时间戳 1700000000000000000",
    "版本 v2.3.1",
    "Chrome 120.0.6099.109",
    "Python 3.12.1",
    "服务器 192.168.100.200",
    "圆周率 3.14159265358979",
    "ISBN 978-7-115-42802-8",
    "座机 010-12345678",
    "客服 0755-8888 8888",
    "座位号 1 3 5 7 9 11 13 15 17",
    "会员卡号 6222021234567891",
    "快递单号是110105194912310021",
    "18 位编号 202401151234567890",
    "共 13 人，每人 800 元，合计 10400",
    "1 000 000 人次",
    "营业时间 9:00～21:00",
    "活动 2024.01.15～2024.02.15，预算 5000～8000 元",
    "考试成绩：数学 98、语文 95、英语 92、物理 88",
    "房间号 1203、1205、1208",
    "第 1、2、3、5、8、13 期都中了",
    "8:00/12:00/18:00 各吃一次药",
    "版本号 1.2.3_beta_4，文件 IMG_20240115_123045.jpg",
    "票价 $12.99 / $24.99 / $39.99",
    "人口 1,234,567",
    "取件码 3-2-1108",
    "比分 21-19、21-17",
)


def asking(content: str = "记一下"):
    return group_message(content, group_id=GROUP, to_me=True)


async def save(plugin, content: str, **arguments: object) -> str:
    arguments = {"content": content, **arguments}
    return await model_calls_one(plugin, RecordingBot(), asking(), "memory_save", arguments)


@pytest.mark.parametrize(("raw", "masked"), MOBILES.values(), ids=MOBILES.keys())
def test_mobile_numbers_in_any_shape_are_masked(raw, masked) -> None:
    from nonebot_plugin_aimemory.guard import mask_pii

    assert mask_pii(f"小明的手机是{raw}，别外传") == f"小明的手机是{masked}，别外传"


@pytest.mark.parametrize(("raw", "masked"), ID_CARDS.values(), ids=ID_CARDS.keys())
def test_id_numbers_in_any_shape_are_masked(raw, masked) -> None:
    from nonebot_plugin_aimemory.guard import mask_pii

    assert mask_pii(f"身份证：{raw}。") == f"身份证：{masked}。"


@pytest.mark.parametrize(("raw", "masked"), BANK_CARDS.values(), ids=BANK_CARDS.keys())
def test_bank_cards_in_any_shape_are_masked(raw, masked) -> None:
    from nonebot_plugin_aimemory.guard import mask_pii

    assert mask_pii(f"卡号 {raw} 工行") == f"卡号 {masked} 工行"


@pytest.mark.parametrize("text", ORDINARY_NUMBERS)
def test_ordinary_numbers_are_left_alone(text) -> None:
    from nonebot_plugin_aimemory.guard import mask_pii

    assert mask_pii(text) == text


def test_several_numbers_in_one_run_are_each_masked() -> None:
    from nonebot_plugin_aimemory.guard import mask_pii

    masked = mask_pii("13812345678 13987654321 6222021234567890128")

    assert masked == "138****5678 139****4321 ***************0128"


def test_an_id_number_with_a_wrong_birth_date_is_left_alone() -> None:
    from nonebot_plugin_aimemory.guard.identifiers import is_valid_id_card

    # Checksum right, but month 13.
    assert not is_valid_id_card("110105194913310026")


# Through the model's memory_save: (the words before the number, as written, as stored).
SAVED_NUMBERS = {
    "mobile, dots": ("的手机是", *MOBILES["dots"]),
    "mobile, zero-width": ("的手机是", *MOBILES["zero-width inside"]),
    "mobile, +86 glued": ("的手机是", *MOBILES["+86 glued"]),
    "mobile, spaced hyphens": ("的手机是", *MOBILES["spaced hyphens"]),
    "mobile, spaces": ("的手机是", *MOBILES["spaces"]),
    "mobile, hyphens": ("的手机是", *MOBILES["hyphens"]),
    "mobile, full-width digits": ("的手机是", *MOBILES["full-width digits"]),
    "mobile, +86 prefix": ("的手机是", *MOBILES["+86 prefix"]),
    "mobile, after a QQ number": ("的手机是", *MOBILES["after a QQ number"]),
    "id, glued to letters": ("的证件", *ID_CARDS["glued to letters"]),
    "id, split by spaces": ("的证件", *ID_CARDS["split by spaces"]),
    "id, 15 digits": ("的证件", *ID_CARDS["15 digits (old)"]),
    "bank card, dots": ("的工资卡 ", *BANK_CARDS["dots"]),
}
# Through memory_save: numbers that look like a mobile or a card and are neither.
NOT_A_MOBILE = {
    "11 digits not starting 1[3-9]": "订单号 12345678901",
    "landline-like 11 digits": "编号 20231234567",
    "longer digit group": "流水号 138123456789",
    "Luhn-failing 16 digits": "会员卡号 6222021234567891",
}


@pytest.mark.parametrize(
    ("before", "raw", "masked"), SAVED_NUMBERS.values(), ids=SAVED_NUMBERS.keys()
)
async def test_the_model_saving_a_personal_number_stores_it_masked(
    plugin, before, raw, masked
) -> None:
    result = await save(plugin, f"小明(2001){before}{raw}")

    (record,) = await stored(plugin, SCOPE)
    assert record.content == f"小明(2001){before}{masked}"
    assert raw not in result


@pytest.mark.parametrize("content", NOT_A_MOBILE.values(), ids=NOT_A_MOBILE.keys())
async def test_numbers_that_are_not_personal_identifiers_are_left_alone(plugin, content) -> None:
    await save(plugin, content)

    (record,) = await stored(plugin, SCOPE)
    assert record.content == content


async def test_personal_numbers_in_tags_are_masked(plugin) -> None:
    await save(plugin, "小明(2001)换了新手机", tags=["手机13812345678", "6222021234567890128"])

    (record,) = await stored(plugin, SCOPE)
    assert record.tags == ["手机138****5678", "***************0128"]


async def test_personal_numbers_in_odd_shapes_in_tags_are_masked(plugin) -> None:
    await save(plugin, "小明(2001)换了新手机", tags=["138.1234.5678", "ID11010519491231002X"])

    (record,) = await stored(plugin, SCOPE)
    assert record.tags == ["138.****.5678", "ID110***********002X"]


async def test_the_model_saving_ordinary_numbers_stores_them_as_written(plugin) -> None:
    content = "群号 123456789，2024-01-15 聚餐人均 128.50 元，订单号 12345678901，v2.3.1"

    await save(plugin, content, tags=["1700000000123"])

    (record,) = await stored(plugin, SCOPE)
    assert (record.content, record.tags) == (content, ["1700000000123"])


async def test_a_mobile_number_given_as_user_id_is_never_stored_or_shown(plugin) -> None:
    result = await save(plugin, "小明喜欢画画", user_id="13812345678")

    assert "13812345678" not in result
    assert all("13812345678" not in (r.user_id or "") for r in await stored(plugin, SCOPE))


@pytest.mark.parametrize("split", ["dev", "heldout"])
def test_no_number_of_the_benign_corpus_is_masked(split) -> None:
    from nonebot_plugin_aimemory.guard import mask_pii
    from tests.guard.corpus import benign

    changed = [line for line in benign(split)["numbers"] if mask_pii(line) != line]

    assert changed == []
