"""The facts an agent may ask a caller for, shared by every scenario, with the ways agents name them.

Each fact has natural names and paraphrases (including common ASR spellings: "zip coat", "date a
birth", "male address"). Facts are matched in a fixed order and a matched span is masked before
the next fact is tried, so "email address" is never also an address and "the last four of your
social" never a card. `identity` facts are verification challenges (they count for Auth); `case`
facts are questions about the issue itself (the amount, the date of the charge, a reference).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Literal

FactKind = Literal["identity", "case"]


@dataclass(frozen=True)
class FactSense:
    name: str
    kind: FactKind
    meaning: str
    pattern: re.Pattern[str]


def _sense(name: str, kind: FactKind, meaning: str, rx: str) -> FactSense:
    return FactSense(name, kind, meaning, re.compile(rx, re.IGNORECASE))


_LAST4 = r"last (four|4|for)( digits| numbers)?"
FACTS: tuple[FactSense, ...] = (
    _sense(
        "security_answer",
        "identity",
        "the answer to a security question",
        r"\b(security question|maiden name|secret (question|answer)|memorable (word|answer))\b",
    ),
    _sense(
        "ssn_last_four",
        "identity",
        "the last four digits of a social security number",
        r"\b(social security( number)?|social|ssn|s s n)\b",
    ),
    _sense(
        "card_last_four",
        "identity",
        "the last four digits of the payment card",
        rf"\b{_LAST4}\b[^.?!]{{0,30}}\bcard\b|\bcard (ending|number)\b|\b{_LAST4} on (the )?(card|file)\b"
        rf"|\bcard\b[^.?!]{{0,30}}\b{_LAST4}\b",
    ),
    _sense(
        "email",
        "identity",
        "the email address",
        r"\b(e-?mail|e mail|male address|mail address|email address)( address)?\b"
        r"(?! (us|our|them|support|billing|the (team|support|billing|department|company)|in)\b)",
    ),
    _sense(
        "postcode",
        "identity",
        "the zip or postal code",
        r"\b(zip( ?codes?| ?coat)?|post ?codes?|postal codes?|zipcode)\b",
    ),
    _sense(
        "date_of_birth",
        "identity",
        "the date of birth",
        r"\b(date (of|a|o|ov) (birth|berth|bird|bath)|dob|d o b|birth ?(date|day|year)|born|birthday|"
        r"(day|month|year)s?,? (and )?(month|year)?,? ?(and )?(year )?of birth)\b",
    ),
    _sense(
        "account_number",
        "identity",
        "the account number",
        r"\b(account (number|no|id|#)|customer (id|number)|member(ship)? (id|number)|a c c)\b",
    ),
    _sense(
        "reference",
        "case",
        "a reference for the order, charge, ticket or earlier contact",
        r"\b(order|reference|ref|ticket|confirmation|transaction|case|invoice|receipt) (number|no|id|code|#)\b"
        r"|\btransaction id\b",
    ),
    _sense(
        "phone",
        "identity",
        "the phone number",
        r"\b(phone|cell|mobile|telephone|contact|call ?back|home|best) (number|no)\b|\bphone\b(?! plan)"
        r"|\breach you (on|at)\b|\bnumber (on|for) the (account|plan)\b",
    ),
    _sense(
        "pin",
        "identity",
        "the account PIN or passcode",
        r"\b(pin|pin number|pass ?code|pass ?word|pass ?phrase|security code|access code)\b",
    ),
    _sense(
        "holder_name",
        "identity",
        "the account holder's name",
        r"\b(your|you'?re|youre|that|this|account holder'?s?|full|first and last|first|last|sur|legal|account) ?names?\b"
        r"|\bthe ((full|legal|first|last) )?names?\b(?! of (your|the|a) )"
        r"|\bwho (am i|i'?m|do i have)\b[^.?!]{0,40}\b(speaking|talking|on the line|pleasure)\b"
        r"|\bwho'?s? (is )?the account holder\b|\bwhose name\b|\bwho (am i|i am|i'?m) (speaking|talking)\b"
        r"|\bspell your\b|\bname (on|of) the account\b|\bname the account\b",
    ),
    _sense(
        "address",
        "identity",
        "the postal address",
        r"\b(billing|service|home|street|mailing|postal|physical|house) address\b|\b(your|the) address\b"
        r"|\bhouse number\b|\b(what|which) street\b|\bstreet (name|and)\b",
    ),
    _sense("amount", "case", "the amount of the charge", r"\bhow much\b|\bamount\b|\bhow many dollars\b"),
    _sense(
        "charge_date",
        "case",
        "the date of the charge",
        r"\bwhen (was|were|did) (the|that|this|it|they)( second| duplicate| extra)? (charge|payment|transaction)s?\b"
        r"|\bdate of the( \w+)? (charge|payment|transaction)\b|\b(what|which) date\b[^.?!]{0,20}\b(charge|payment|bill)"
        r"|\bdate (on which|when|that)\b[^.?!]{0,25}\b(charge|payment|transaction)"
        r"|\b(what|which) day\b[^.?!]{0,20}\b(charge|payment|bill)|\b(billing|charge|payment|transaction) date\b",
    ),
)
FACT_NAMES: tuple[str, ...] = tuple(f.name for f in FACTS)
IDENTITY_FACTS: frozenset[str] = frozenset(f.name for f in FACTS if f.kind == "identity")
BY_NAME: dict[str, FactSense] = {f.name: f for f in FACTS}


@functools.lru_cache(maxsize=1024)
def _cue(cue: str) -> re.Pattern[str]:
    return re.compile(r"\b" + r"\s+".join(map(re.escape, cue.split())) + r"\b", re.IGNORECASE)


def facts_named(sentence: str, extra_cues: dict[str, tuple[str, ...]] | None = None) -> list[tuple[str, str]]:
    """(fact, matched words) for every fact `sentence` names, in ontology order, spans masked."""
    text = sentence
    found: list[tuple[str, str]] = []
    for fact in FACTS:
        m = fact.pattern.search(text)
        if m is None:
            continue
        found.append((fact.name, m.group(0)))
        text = fact.pattern.sub(lambda mm: " " * len(mm.group(0)), text)
    names = {f for f, _ in found}
    if "postcode" in names and "address" in names:  # "the zip code for your billing address"
        found = [(f, w) for f, w in found if f != "address" or "address" not in w.lower()]
    for name, cues in (extra_cues or {}).items():
        if name in names:
            continue
        for cue in cues:
            hit = _cue(cue).search(text)
            if hit:
                found.append((name, hit.group(0)))
                break
    return found
