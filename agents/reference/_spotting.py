"""Keyword spotting for the native agent, on top of its own internal recogniser's word string.

A speech-to-speech system does not parse a transcript; it reacts to the words it is listening
for. The native agent spots the service's keywords in what its recogniser heard, tolerating the
near-misses a telephone-band recogniser makes ("refunt", "outages", "premiun"), and hands the
keywords it spotted to its dialogue along with the words. Words that would send the call to a
human ("person", "agent") are never spotted fuzzily: a false hit there ends the call.
"""

from __future__ import annotations

import re
from difflib import SequenceMatcher

KEYWORDS: tuple[str, ...] = (
    "refund", "charged", "charge", "duplicate", "twice", "credit", "outage", "internet", "broadband",
    "connection", "router", "premium", "basic", "plan", "switch", "revert",
)  # fmt: skip
MIN_RATIO = 0.8
"""SequenceMatcher ratio a heard word needs to count as a keyword it is not spelt as."""
MIN_LENGTH = 5
"""Shorter words are spotted only exactly (fuzzy matches of short words are mostly other words)."""

_WORD = re.compile(r"[a-z]+")


def spot(text: str) -> tuple[str, ...]:
    """The keywords `text` contains, exactly or as a near-miss, in keyword order."""
    words = set(_WORD.findall(text.lower()))
    found: list[str] = []
    for key in KEYWORDS:
        if key in words or (
            len(key) >= MIN_LENGTH
            and any(
                len(w) >= MIN_LENGTH and SequenceMatcher(None, key, w).ratio() >= MIN_RATIO for w in words
            )
        ):
            found.append(key)
    return tuple(found)


def with_spotted(text: str) -> str:
    """The words followed by every keyword spotted only as a near-miss (exact ones are already there)."""
    words = set(_WORD.findall(text.lower()))
    extra = [k for k in spot(text) if k not in words]
    return f"{text} {' '.join(extra)}" if extra else text
