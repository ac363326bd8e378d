"""Spoken numbers, dates, e-mails and money: parse what callers say, and say amounts for TTS.

Callers speak numbers as words ("nine four one zero seven", "the fourth of March, nineteen eighty
eight") and the recogniser may return either words or digits ("94107", "4th of March 1988"), so
every parser here accepts both. eSpeak reads digits in the voice's own language, so everything the
agent says goes through the `say_*` helpers and contains no digits.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

UNITS = {
    "zero": 0, "oh": 0, "o": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5,
    "six": 6, "seven": 7, "eight": 8, "nine": 9,
}  # fmt: skip
TEENS = {
    "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19,
}  # fmt: skip
TENS = {
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "fifty": 50,
    "sixty": 60,
    "seventy": 70,
    "eighty": 80,
    "ninety": 90,
}
HOMOPHONES = {"for": "four", "to": "two", "too": "two", "won": "one", "ate": "eight", "nein": "nine",
              "free": "three", "tree": "three", "high": "nine", "narrow": "zero", "yellow": "zero", "nero": "zero",
              "zeros": "zero"}  # fmt: skip
"""Recogniser confusions accepted only where a digit is expected (postcodes), never in free text.
"free"/"tree", "high" and "narrow"/"yellow" are what Whisper tiny.en made of "three", "nine" and
"zero" on the telephone band ("Free, narrow, free, narrow. High" for three zero three zero nine)."""

ORDINALS = {
    "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7,
    "eighth": 8, "ninth": 9, "tenth": 10, "eleventh": 11, "twelfth": 12, "thirteenth": 13,
    "fourteenth": 14, "fifteenth": 15, "sixteenth": 16, "seventeenth": 17, "eighteenth": 18,
    "nineteenth": 19, "twentieth": 20, "thirtieth": 30,
    "forth": 4, "force": 4, "forest": 4, "fort": 4, "fourths": 4,
}  # fmt: skip
MONTHS = {
    m: i
    for i, names in enumerate(
        [("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",), ("june", "jun"),
         ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"), ("october", "oct"),
         ("november", "nov"), ("december", "dec")],
        start=1,
    )
    for m in names
}  # fmt: skip
MONTH_NAMES = ("", "January", "February", "March", "April", "May", "June", "July", "August", "September",
               "October", "November", "December")  # fmt: skip

_WORD = re.compile(r"[a-z]+|\d+(?:st|nd|rd|th)?")


def tokens(text: str) -> list[str]:
    """Lower-case words and digit runs; punctuation and hyphens split tokens ("9-4-1" -> 9, 4, 1)."""
    return _WORD.findall(text.lower().replace("'", ""))


def spoken_digits(text: str) -> str:
    """Every digit the caller said, in order: "nine four one oh seven" and "941 07" both give "94107".

    Two-digit words expand in place ("ninety four" -> "94", "twenty" -> "20"), "double five" -> "55".
    """
    out: list[str] = []
    toks = tokens(text)
    i = 0
    while i < len(toks):
        tok = HOMOPHONES.get(toks[i], toks[i])
        if tok.isdigit():
            out.append(tok)
        elif tok in ("double", "triple") and i + 1 < len(toks):
            nxt = HOMOPHONES.get(toks[i + 1], toks[i + 1])
            digit = str(UNITS[nxt]) if nxt in UNITS else nxt if nxt.isdigit() and len(nxt) == 1 else ""
            if digit:
                out.append(digit * (2 if tok == "double" else 3))
                i += 1
        elif tok in UNITS:
            out.append(str(UNITS[tok]))
        elif tok in TEENS:
            out.append(str(TEENS[tok]))
        elif tok in TENS:
            nxt = HOMOPHONES.get(toks[i + 1], toks[i + 1]) if i + 1 < len(toks) else ""
            if nxt in UNITS and UNITS[nxt] > 0 and nxt not in ("oh", "o"):
                out.append(str(TENS[tok] + UNITS[nxt]))
                i += 1
            else:
                out.append(str(TENS[tok]))
        i += 1
    return "".join(out)


def _small_number(toks: list[str], i: int) -> tuple[int, int] | None:
    """A number below 100 spoken at toks[i]: (value, tokens used)."""
    tok = toks[i]
    if tok.isdigit():
        return int(tok), 1
    if tok in TEENS:
        return TEENS[tok], 1
    if tok in TENS:
        if i + 1 < len(toks) and toks[i + 1] in UNITS and UNITS[toks[i + 1]] > 0:
            return TENS[tok] + UNITS[toks[i + 1]], 2
        return TENS[tok], 1
    if tok in UNITS and tok not in ("oh", "o"):
        return UNITS[tok], 1
    return None


def parse_number(text: str) -> int | None:
    """A cardinal number below a million in words or digits: "two hundred and five" -> 205."""
    toks = [t for t in tokens(text) if t != "and"]
    total = current = 0
    seen = False
    i = 0
    while i < len(toks):
        tok = toks[i]
        if tok == "hundred" and seen:
            current = max(current, 1) * 100
            i += 1
            continue
        if tok == "thousand" and seen:
            total += max(current, 1) * 1000
            current = 0
            i += 1
            continue
        small = _small_number(toks, i)
        if small is None:
            if seen:
                break
            i += 1
            continue
        value, used = small
        current += value
        seen = True
        i += used
    return total + current if seen else None


MONTH_CONFUSIONS = {"marsh": 3, "julie": 7, "juli": 7, "augusts": 8, "septembre": 9, "octobre": 10}
"""What the recogniser made of a month name on the telephone band; read only inside a date."""

_DATE_FILLER = frozenset(
    [
        "the",
        "of",
        "on",
        "and",
        "in",
        "i",
        "im",
        "was",
        "born",
        "its",
        "it",
        "is",
        "my",
        "date",
        "birth",
        "birthday",
        "a",
        "um",
        "uh",
        "er",
        "that",
        "would",
        "be",
    ]
)
_NUMERIC_DATE = re.compile(r"\b(\d{1,2})\s*[/.-]\s*(\d{1,2})\s*[/.-]\s*(\d{4}|\d{2})\b")
_ISO_DATE = re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b")


@dataclass(frozen=True)
class DateParts:
    """Whatever a caller's answer gave of a date: each part may be missing.

    An agent fills a date slot over several hearings ("the fifteenth of July" now, "nineteen
    ninety three" when asked for the year), as a human agent would, so a partial hearing is kept
    rather than thrown away; `merged` lets a newer hearing override the parts it states.
    """

    day: int | None = None
    month: int | None = None
    year: int | None = None

    @property
    def empty(self) -> bool:
        return self.day is None and self.month is None and self.year is None

    @property
    def complete(self) -> bool:
        return self.date is not None

    @property
    def date(self) -> dt.date | None:
        if self.day is None or self.month is None or self.year is None:
            return None
        try:
            return dt.date(self.year, self.month, self.day)
        except ValueError:
            return None

    @property
    def missing(self) -> tuple[str, ...]:
        return tuple(n for n in ("day", "month", "year") if getattr(self, n) is None)

    def merged(self, newer: DateParts) -> DateParts:
        """The parts `newer` states replace these; the rest are kept."""
        return DateParts(
            newer.day if newer.day is not None else self.day,
            newer.month if newer.month is not None else self.month,
            newer.year if newer.year is not None else self.year,
        )

    def agrees(self, other: DateParts) -> bool:
        """No part stated by both differs."""
        return all(
            a is None or b is None or a == b
            for a, b in ((self.day, other.day), (self.month, other.month), (self.year, other.year))
        )


def _ordinal_day(toks: list[str], i: int) -> tuple[int, int] | None:
    """An ordinal day at toks[i] ("fifteenth", "15th", "twenty first", "twenty-first")."""
    tok = toks[i]
    m = re.fullmatch(r"(\d{1,2})(st|nd|rd|th)", tok)
    if m:
        return int(m.group(1)), 1
    if tok in TENS and i + 1 < len(toks):
        nxt = toks[i + 1]
        if nxt in ORDINALS and ORDINALS[nxt] < 10:
            return TENS[tok] + ORDINALS[nxt], 2
    if tok in ORDINALS:
        return ORDINALS[tok], 1
    return None


def _day(toks: list[str], i: int) -> tuple[int, int] | None:
    """A day of the month at toks[i]: an ordinal, or a cardinal 1-31 ("March four", "4 March")."""
    found = _ordinal_day(toks, i)
    if found is not None:
        return found
    tok = toks[i]
    if tok.isdigit() and len(tok) <= 2:
        return int(tok), 1
    if tok.isdigit():
        return None
    small = _small_number(toks, i)
    if small is not None and 1 <= small[0] <= 31:
        return small
    return None


def _year(toks: list[str], i: int, *, short: bool = False, pivot: int = 2026) -> tuple[int, int] | None:
    """A year at toks[i]: "1988", "19 88", "nineteen eighty eight", "nineteen oh five", "two thousand
    and three", "twenty ten"; with `short`, a spoken two-digit year ("eighty six") read against
    `pivot` (a year after the pivot's is last century)."""
    tok = toks[i]
    nxt = toks[i + 1] if i + 1 < len(toks) else ""
    if tok.isdigit() and len(tok) == 4:
        return int(tok), 1
    if tok in ("19", "20") and nxt.isdigit() and len(nxt) == 2:
        return int(tok + nxt), 2
    if tok.isdigit() and short and len(tok) == 2:
        yy = int(tok)
        return (1900 + yy if yy > pivot % 100 else 2000 + yy), 1
    if tok.isdigit():
        return None
    if tok == "two" and nxt == "thousand":
        j = i + 2
        if j < len(toks) and toks[j] == "and":
            j += 1
        rest = _small_number(toks, j) if j < len(toks) else None
        if rest is not None and rest[0] >= 100:
            rest = None
        return (2000 + rest[0], j - i + rest[1]) if rest else (2000, j - i)
    first = _small_number(toks, i)
    if first is None:
        return None
    j = i + first[1]
    if 19 <= first[0] <= 20 and first[1] == 1:
        if j < len(toks) and toks[j] in ("oh", "o") and j + 1 < len(toks) and toks[j + 1] in UNITS:
            return first[0] * 100 + UNITS[toks[j + 1]], first[1] + 2
        second = _small_number(toks, j) if j < len(toks) and not toks[j].isdigit() else None
        if second is not None and 10 <= second[0] <= 99:
            return first[0] * 100 + second[0], first[1] + second[1]
    if short and 10 <= first[0] <= 99 and toks[i] in TENS:
        yy = first[0]
        return (1900 + yy if yy > pivot % 100 else 2000 + yy), first[1]
    return None


def _month_at(toks: list[str]) -> int | None:
    for i, t in enumerate(toks):
        if (t in MONTHS and (t != "may" or i > 0)) or t in MONTH_CONFUSIONS:
            return i
    return None


def _numeric_parts(text: str, pivot: int) -> DateParts | None:
    iso = _ISO_DATE.search(text)
    if iso:
        return DateParts(int(iso.group(3)), int(iso.group(2)), int(iso.group(1)))
    numeric = _NUMERIC_DATE.search(text)
    if not numeric:
        return None
    a, b, y = int(numeric.group(1)), int(numeric.group(2)), numeric.group(3)
    year = int(y) if len(y) == 4 else (1900 + int(y) if int(y) > pivot % 100 else 2000 + int(y))
    # US order (month first), as the bundled scenarios' accounts are American; a first
    # number above twelve can only be the day.
    month, day = (b, a) if a > 12 >= b else (a, b)
    return DateParts(day, month, year)


def parse_date_parts(text: str, *, pivot: int = 2026) -> DateParts:
    """Every part of a date the text states, in words or digits, in either order: "the fourth of
    March, nineteen eighty eight", "March the fourth 1988", "March 4th, '88", "04/03/86" (US
    order), "July, 1993" (no day), "the fifteenth of July" (no year). Where the recogniser wrote
    two months, the first counts. A lone cardinal without a month is never read as a day."""
    numeric = _numeric_parts(text, pivot)
    if numeric is not None:
        return numeric
    toks = [t for t in tokens(text) if t not in _DATE_FILLER]
    month_at = _month_at(toks)
    day = year = None
    if month_at is None:
        # No month: only an unmistakable year or an ordinal day is kept.
        for j in range(len(toks)):
            found = _year(toks, j, pivot=pivot)
            if found is not None:
                year = found[0]
                break
        days = [d for j in range(len(toks)) if (d := _ordinal_day(toks, j)) is not None and d[0] <= 31]
        if len(days) == 1:
            day = days[0][0]
        return DateParts(day, None, year)
    name = toks[month_at]
    month = MONTHS.get(name) or MONTH_CONFUSIONS[name]
    after = month_at + 1
    # An ordinal just before the month ("the fifteenth of July") is the day, whatever follows.
    before = None
    if month_at >= 1:
        two = _ordinal_day(toks, month_at - 2) if month_at >= 2 else None
        before = two if two is not None and two[1] == 2 else _ordinal_day(toks, month_at - 1)
        if before is not None and before[0] > 31:
            before = None
    if before is not None:
        day = before[0]
    # After the month: a day then a year ("March fourth, eighty six", "July nineteen, nineteen
    # ninety three"), else a year alone ("July nineteen ninety three"), else a day alone.
    found = _day(toks, after) if after < len(toks) and day is None else None
    if found is not None and found[0] <= 31 and after + found[1] < len(toks):
        ordinal = _ordinal_day(toks, after) is not None
        then = _year(toks, after + found[1], short=ordinal, pivot=pivot)
        if then is not None:
            day, year = found[0], then[0]
            after += found[1] + then[1]
    if year is None:
        lead = _year(toks, after, pivot=pivot) if after < len(toks) else None
        if lead is not None:
            year, after = lead[0], after + lead[1]
        elif found is not None and found[0] <= 31:
            day, after = found[0], after + found[1]
    if day is None and month_at >= 1:
        one = _day(toks, month_at - 1)
        if one is not None and one[0] <= 31:
            day = one[0]
    if year is None:
        for j in range(after, len(toks)):
            if toks[j] in MONTHS or toks[j] in MONTH_CONFUSIONS:
                break
            found_year = _year(toks, j, pivot=pivot)
            if found_year is not None:
                year = found_year[0]
                break
    return DateParts(day, month, year)


def parse_date(text: str, *, pivot: int = 2026) -> dt.date | None:
    """A complete calendar date in `text` (see `parse_date_parts`), or None."""
    return parse_date_parts(text, pivot=pivot).date


def parse_email(text: str) -> str | None:
    """An e-mail address spoken ("jordan dot lee at example dot com") or written ("jordan.lee@example.com")."""
    t = text.lower().strip()
    t = re.sub(r"^(it is|it's|its|my email is|my e-mail is|the email is|email is|sure,?)\s+", "", t)
    # "not" is how the recogniser often writes a spoken "dot" on the telephone band.
    t = re.sub(r"\s+(dot|period|point|not)\s+", ".", t)
    t = re.sub(r"\s+(at)\s+", "@", t)
    t = re.sub(r"\s*@\s*", "@", t)
    t = re.sub(r"\s*\.\s*(?=[a-z])", ".", t)
    m = re.search(r"([a-z0-9._+-]+)@([a-z0-9-]+(?:\.[a-z0-9-]+)+)", t)
    if not m:
        return None
    return f"{m.group(1).strip('.')}@{m.group(2).strip('.')}"


def parse_amount(text: str) -> Decimal | None:
    """Money: "$24.99", "24.99", "twenty four dollars and ninety nine cents"."""
    m = re.search(r"\$?\s*(\d+(?:\.\d{1,2})?)", text)
    if m:
        return Decimal(m.group(1))
    low = text.lower()
    if "dollar" not in low and "cent" not in low:
        return None
    dollars_part, _, cents_part = low.partition("dollar")
    dollars = parse_number(dollars_part) or 0
    cents = parse_number(cents_part.replace("and", " ")) if "cent" in cents_part else None
    if "dollar" not in low:
        cents, dollars = parse_number(low), 0
    return Decimal(dollars) + Decimal(cents or 0) / 100


_ONES = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
         "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen")  # fmt: skip
_TENS_W = ("", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")


def say_number(n: int) -> str:
    """Cardinal in words (0 <= n < 1,000,000): 24 -> "twenty four"."""
    if n < 0:
        return "minus " + say_number(-n)
    if n < 20:
        return _ONES[n]
    if n < 100:
        return _TENS_W[n // 10] + ("" if n % 10 == 0 else " " + _ONES[n % 10])
    if n < 1000:
        rest = n % 100
        return _ONES[n // 100] + " hundred" + ("" if rest == 0 else " and " + say_number(rest))
    if n < 1_000_000:
        rest = n % 1000
        joiner = " and " if 0 < rest < 100 else " "
        return say_number(n // 1000) + " thousand" + ("" if rest == 0 else joiner + say_number(rest))
    raise ValueError(f"number too large to say: {n}")


_ORD_W = {1: "first", 2: "second", 3: "third", 4: "fourth", 5: "fifth", 6: "sixth", 7: "seventh", 8: "eighth",
          9: "ninth", 10: "tenth", 11: "eleventh", 12: "twelfth", 20: "twentieth", 30: "thirtieth"}  # fmt: skip


def say_ordinal(n: int) -> str:
    if n in _ORD_W:
        return _ORD_W[n]
    if n < 20:
        return say_number(n) + "th"
    return _TENS_W[n // 10] + " " + _ORD_W[n % 10]


def say_money(amount: Decimal, currency: str = "USD") -> str:
    """Decimal -> words: 24.99 -> "twenty four dollars and ninety nine cents"."""
    cents_total = int((amount * 100).quantize(Decimal(1), rounding=ROUND_HALF_UP))
    dollars, cents = divmod(cents_total, 100)
    unit = "dollar" if currency.upper() in ("USD", "CAD", "AUD") else currency.lower()
    parts = []
    if dollars or not cents:
        parts.append(f"{say_number(dollars)} {unit}{'' if dollars == 1 else 's'}")
    if cents:
        parts.append(f"{say_number(cents)} cent{'' if cents == 1 else 's'}")
    return " and ".join(parts)


def say_date(day: dt.date, *, year: bool = False) -> str:
    """ "November twenty fourth" (and the year in words when asked)."""
    text = f"{MONTH_NAMES[day.month]} {say_ordinal(day.day)}"
    if year:
        y = day.year
        text += " " + (
            say_number(y)
            if y % 100 == 0 or 2000 <= y < 2010
            else f"{say_number(y // 100)} {say_number(y % 100)}"
        )
    return text


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance; used to tolerate one misheard digit in a postcode."""
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]
