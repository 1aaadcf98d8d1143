"""What makes a run of digits a personal identifier: a resident ID number (GB 11643: a
province code, a real birth date and its mod 11-2 check digit), a bank card (a card
network's first digits and the Luhn check) or a mainland mobile number. The check digits
are python-stdnum's."""

from __future__ import annotations

import calendar
import unicodedata

from stdnum import luhn
from stdnum.cn import ric

# Province codes, the first two digits of an ID number: 11-15 north, 21-23 north-east, 31-37
# east, 41-46 central south, 50-54 south-west, 61-65 north-west, 71 Taiwan, 81-83 Hong
# Kong, Macao and (for residence permits) Taiwan, 91 abroad.
ID_PROVINCES = frozenset(
    str(code)
    for low, high in (
        (11, 15),
        (21, 23),
        (31, 37),
        (41, 46),
        (50, 54),
        (61, 65),
        (71, 71),
        (81, 83),
        (91, 91),
    )
    for code in range(low, high + 1)
)
MOBILE_SECOND_DIGITS = "3456789"
CARD_LENGTHS = range(16, 20)


def is_valid_id_card(number: str) -> bool:
    """An 18-digit resident ID number: a province code, a real birth date and the right
    check digit."""
    number = unicodedata.normalize("NFKC", number).upper()
    if len(number) != 18 or not number[:17].isdigit():
        return False
    if number[:2] not in ID_PROVINCES or not _is_date(number[6:14]):
        return False
    # Not `ric.is_valid`: it also looks the first six digits up in stdnum's county list,
    # which would leave unmasked the numbers of counties renamed or created since.
    return ric.calc_check_digit(number) == number[17]


def is_valid_old_id_card(number: str) -> bool:
    """A 15-digit resident ID number (issued before 1999): a province code and a real
    birth date in 19YYMMDD; it has no check digit."""
    return (
        len(number) == 15
        and number.isdigit()
        and number[:2] in ID_PROVINCES
        and _is_date("19" + number[6:12])
    )


def is_bank_card(digits: str) -> bool:
    """16 to 19 digits with a card network's first digit (3, 4, 5, 6, 9, or 2221-2720)
    that pass the Luhn check; order numbers and timestamps mostly start otherwise."""
    if len(digits) not in CARD_LENGTHS or not digits.isdigit():
        return False
    network = digits[0] in "34569" or 2221 <= int(digits[:4]) <= 2720
    return network and luhn.is_valid(digits)


def is_mobile(digits: str) -> bool:
    """A mainland mobile number: 11 digits, 13x to 19x."""
    return (
        len(digits) == 11
        and digits.isdigit()
        and digits[0] == "1"
        and digits[1] in MOBILE_SECOND_DIGITS
    )


def _is_date(yyyymmdd: str) -> bool:
    """Whether YYYYMMDD is a real date between 1900 and 2099."""
    year, month, day = int(yyyymmdd[:4]), int(yyyymmdd[4:6]), int(yyyymmdd[6:8])
    if not 1900 <= year <= 2099 or not 1 <= month <= 12:
        return False
    return 1 <= day <= calendar.monthrange(year, month)[1]
