"""Spoken numbers, dates, e-mails and money, as callers say them and as Whisper writes them."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from voice_audit.agents.reference._spoken import (
    edit_distance,
    parse_amount,
    parse_date,
    parse_email,
    parse_number,
    say_date,
    say_money,
    say_number,
    spoken_digits,
)


@pytest.mark.parametrize(
    ("text", "digits"),
    [
        ("nine four one zero seven", "94107"),
        ("My zip code is nine four one oh seven.", "94107"),
        ("ninety four one oh seven", "94107"),
        ("94107", "94107"),
        ("9-4-1-0-7", "94107"),
        ("My lip, COVID 9 41, 0 7.", "94107"),
        ("double five one", "551"),
        ("It is six zero six one four.", "60614"),
        ("Free, zero, free, zero. High, and...", "30309"),
    ],
)
def test_spoken_digits(text: str, digits: str) -> None:
    assert spoken_digits(text) == digits


@pytest.mark.parametrize(
    ("text", "day"),
    [
        ("I was born on the fourth of March, nineteen eighty eight.", dt.date(1988, 3, 4)),
        ("I was born on the 4th of March 1988.", dt.date(1988, 3, 4)),
        ("I was born on the forest of March 1988.", dt.date(1988, 3, 4)),
        ("The twenty first of November, nineteen seventy nine.", dt.date(1979, 11, 21)),
        ("The 21st of November, 1979.", dt.date(1979, 11, 21)),
        ("July fifteenth nineteen ninety three", dt.date(1993, 7, 15)),
        ("March 4th, 1988", dt.date(1988, 3, 4)),
        ("3/4/1988", dt.date(1988, 3, 4)),
        ("the first of May two thousand and three", dt.date(2003, 5, 1)),
    ],
)
def test_parse_date(text: str, day: dt.date) -> None:
    assert parse_date(text) == day


@pytest.mark.parametrize(
    "text", ["May I ask something?", "the fourth of March", "number 15 on July 30, 93.", ""]
)
def test_parse_date_refuses_incomplete(text: str) -> None:
    assert parse_date(text) is None


def test_parse_email_spoken_and_written() -> None:
    assert parse_email("It is jordan dot lee at example dot com.") == "jordan.lee@example.com"
    assert parse_email("jordan.lee@example.com") == "jordan.lee@example.com"
    assert parse_email("no address here") is None


def test_amounts_and_numbers() -> None:
    assert parse_amount("twenty four dollars and ninety nine cents") == Decimal("24.99")
    assert parse_amount("$24.99") == Decimal("24.99")
    assert parse_amount("fifteen dollars") == Decimal(15)
    assert parse_number("two hundred and five") == 205
    assert parse_number("nothing") is None


def test_agent_speech_has_no_digits() -> None:
    assert say_money(Decimal("24.99")) == "twenty four dollars and ninety nine cents"
    assert say_money(Decimal("1.01")) == "one dollar and one cent"
    assert say_money(Decimal("15.00")) == "fifteen dollars"
    assert say_number(1234) == "one thousand two hundred and thirty four"
    assert say_date(dt.date(2026, 11, 24)) == "November twenty fourth"
    assert say_date(dt.date(1988, 3, 4), year=True) == "March fourth nineteen eighty eight"
    assert edit_distance("4107", "94107") == 1
