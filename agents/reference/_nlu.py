"""Intents and slots from one caller transcript: deterministic keyword rules, no model.

The rules are deliberately forgiving of recogniser noise (a topic word anywhere counts), because
the agent decides the remedy from the account facts, not from the caller's wording: the transcript
only has to say *that* the caller has a problem and *what they want done* (yes, no, a human, ...).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from difflib import SequenceMatcher

from voice_audit.agents.reference._spoken import (
    DateParts,
    edit_distance,
    parse_date,
    parse_date_parts,
    parse_email,
    spoken_digits,
)

Topic = str  # "billing" | "outage" | "plan"

_RULES: dict[str, re.Pattern[str]] = {
    "human": re.compile(
        r"\b(human|real person|a person|someone|somebody|representative|operator|manager|supervisor|"
        r"(live|real|human) agent|speak to an agent|talk to an agent|transfer me)\b"
    ),
    "repeat": re.compile(
        r"\b(repeat( that| yourself)?|say that again|pardon|come again|what did you say|"
        r"didn'?t (catch|hear|understand) (that|you)|sorry\?$)"
    ),
    "yes": re.compile(
        r"\b(yes|yeah|yep|yup|sure|correct|right|okay|ok|please do|go ahead|sounds good|that'?s fine|"
        r"that would be great|absolutely|of course)\b"
    ),
    "no": re.compile(r"\b(no|nope|don'?t|do not|not now|never ?mind|no thanks)\b"),
    "goodbye": re.compile(
        r"\b(good ?bye|bye|that'?s all|that is all|nothing else|that'?s everything|have a good)\b"
    ),
    "thanks": re.compile(r"\b(thanks?|thank you|cheers|appreciate)\b"),
    "request": re.compile(
        r"\b(refund|credit|money back|reimburse|compensat\w*|switch (me |it )?back|put me back|"
        r"change (it |me )?back|revert|undo|fix (it|this)|reverse)\b"
    ),
}
_TOPICS: dict[Topic, re.Pattern[str]] = {
    "billing": re.compile(
        r"\b(charge[ds]?|charging|billed|bill|refund\w*|duplicate|twice|double|payment|overcharged)\b"
    ),
    "outage": re.compile(
        r"\b(internet|outage|broadband|wi-?fi|router|connection|offline|(is|been|went|gone) down|"
        r"not working|stopped working|no service|without service)\b"
    ),
    "plan": re.compile(r"\b(plan|premium|basic|tariff|package|upgraded|downgraded|migrat\w*)\b"),
}
_FILLERS = re.compile(r"\b(um+|uh+|er+|erm|hmm+|ah+)\b")
_NAME_PREFIX = re.compile(
    r"^(?:(?:yes|yeah|sure|okay|ok|hi|hello)[,.]?\s+)?(?:(?:my|the) (?:full )?name(?: on the account)? is|"
    r"it'?s|it is|this is|i'?m|i am|name'?s|that'?s|that is)\s+"
)


def normalise(text: str) -> str:
    """Lower case, fillers removed, whitespace collapsed; keeps '.', '@' and digits for slot parsers."""
    low = text.lower().replace("\u2019", "'")
    low = _FILLERS.sub(" ", low)
    return re.sub(r"\s+", " ", low).strip(" ,")


@dataclass(frozen=True)
class Understanding:
    """What one caller turn says: intents, topics and the raw text slot parsers read."""

    text: str
    intents: frozenset[str] = field(default_factory=frozenset)
    topics: frozenset[Topic] = field(default_factory=frozenset)

    def has(self, intent: str) -> bool:
        return intent in self.intents

    @property
    def empty(self) -> bool:
        return not re.search(r"[a-z0-9]", self.text)


def understand(text: str) -> Understanding:
    norm = normalise(text)
    intents = frozenset(name for name, rx in _RULES.items() if rx.search(norm))
    topics = frozenset(name for name, rx in _TOPICS.items() if rx.search(norm))
    return Understanding(text=norm, intents=intents, topics=topics)


# ---- identity slots: parse what was said, then match it to the record with a tolerance ----


def parse_name(text: str) -> str | None:
    """The name part of "My name is Jordan Avery Lee." (None when nothing name-like is left)."""
    norm = re.sub(r"[^a-z' -]", " ", normalise(text))
    norm = _NAME_PREFIX.sub("", re.sub(r"\s+", " ", norm).strip())
    words = [w for w in norm.split() if w not in ("and", "the", "is", "my", "name", "please")]
    return " ".join(words) if words else None


def name_matches(heard: str, record: str, *, min_ratio: float = 0.8) -> bool:
    """At least two thirds of the record's name tokens (and at least one) heard, each fuzzily.

    Tolerance is what a human agent reading the screen would allow ("Jordan Henry Lee" for Jordan
    Avery Lee); it is a documented policy knob (`name_min_ratio`), not a hidden effect.
    """
    want = [w for w in re.split(r"[^a-z']+", record.lower()) if w]
    got = [w for w in re.split(r"[^a-z']+", heard.lower()) if w]
    if not want or not got:
        return False
    hits = sum(any(SequenceMatcher(None, w, g).ratio() >= min_ratio for g in got) for w in want)
    return hits >= max(1, -(-2 * len(want) // 3))


def parse_postcode(text: str) -> str | None:
    digits = spoken_digits(text)
    return digits if len(digits) >= 3 else None


def postcode_matches(heard: str, record: str, *, max_edits: int = 1) -> bool:
    want = re.sub(r"\D", "", record) or record.lower().replace(" ", "")
    if len(heard) < max(3, len(want) - max_edits):
        return False
    return edit_distance(heard, want) <= max_edits


def parse_dob(text: str) -> dt.date | None:
    return parse_date(normalise(text))


def parse_dob_parts(text: str, *, pivot: int = 2026) -> DateParts:
    """Whatever part of a date of birth the answer gave (see `parse_date_parts`)."""
    return parse_date_parts(normalise(text), pivot=pivot)


def parse_email_slot(text: str) -> str | None:
    return parse_email(normalise(text))


def email_matches(heard: str, record: str, *, min_ratio: float = 0.85) -> bool:
    return SequenceMatcher(None, heard.lower(), record.lower()).ratio() >= min_ratio
