"""Secrets and real-system text: what a report must never print, and what a release must drop.

Credentials are masked in every report (a report is not a place for keys). `--redact` also drops
endpoint URLs, raw audio, the words of real systems and the condition labels (the persona level of
each side: the sides stay "a" and "b" with their contrast axis), keeping every field so the schema holds.

Secret values are found with the run's own mechanism (`voice_audit.harness.model.secrets.literal_pattern`,
which the run folder's `Redactor` uses on the bytes it writes); condition terms use the same pattern
in its word form. What differs is the walk: a run folder is masked as serialised bytes, a report as
the strings (values and keys) of its model.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from voice_audit.harness.model.secrets import MASK, literal_pattern
from voice_audit.personas import AXES

# Adapters whose words are synthetic and bundled with voice-audit; everything else (protocol
# adapters, module:attr, third-party entry points) is treated as a real system.
BUNDLED_ADAPTERS: frozenset[str] = frozenset({"cascaded", "hybrid", "native", "scripted"})
URL = re.compile(r"\b(?:https?|wss?|ftp)://[^\s\"'<>)]+", re.IGNORECASE)
URL_MASK = "[redacted-url]"
LEVEL_MASK = "[redacted]"
LEVEL_MASK_NOTE = "condition labels (persona levels such as accent=...; the sides are named a and b)"
PERSONA_AXES: tuple[str, ...] = (*AXES, "gender", "age_band")
"""The persona axes and the voice attributes a condition label may name."""
LEVEL = re.compile(r"\b(" + "|".join(PERSONA_AXES) + r")=(?!\[redacted\])[^|\s,;:\"'<>&)(#\]]+")
TEXT_MASK = "[redacted: real-system text]"

COMMON_WORDS: frozenset[str] = frozenset(
    {"english", "general", "new", "city", "west", "received", "framing", "gender"}
)
"""Words of catalogue labels that a report's own sentences use, or that every caller shares (they all
speak English), and that on their own point at no level: masking them would blank prose, not a
condition. The level's id and whole label are masked all the same."""
MIN_WORD = 3
"""Shorter words of a label or id (`L1`, `gb`, `us`) are abbreviations shared by many levels."""
_WORD = re.compile(r"[^\W_]+")


def is_real_system(adapter: str) -> bool:
    return adapter not in BUNDLED_ADAPTERS


def _leaves(value: Any) -> Iterable[str]:
    if isinstance(value, Mapping):
        for v in value.values():
            yield from _leaves(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _leaves(v)
    elif value is not None and not isinstance(value, bool):
        yield str(value)


class Scrubber:
    """Replaces every known secret (and, when redacting, every URL and condition term) inside any
    string of a tree, keys included."""

    def __init__(
        self,
        secrets: Iterable[str],
        drop_urls: bool,
        mask_levels: bool = False,
        level_terms: Iterable[str] = (),
    ) -> None:
        self._secrets = literal_pattern(secrets)
        self._drop_urls = drop_urls
        self._mask_levels = mask_levels
        terms = {t.strip() for t in level_terms}
        self._terms = literal_pattern(terms, min_len=2, words=True) if mask_levels else None
        self.hits = 0

    def text(self, s: str) -> str:
        if self._secrets is not None:
            s, n = self._secrets.subn(MASK, s)
            self.hits += n
        if self._drop_urls:
            s, n = URL.subn(URL_MASK, s)
            self.hits += n
        if self._mask_levels:
            s = LEVEL.sub(rf"\1={LEVEL_MASK}", s)
        if self._terms is not None:
            s = self._terms.sub(LEVEL_MASK, s)
        return s

    def _key(self, key: str, taken: Mapping[Any, Any]) -> str:
        """A masked key that two keys of one mapping share (agents named `gb_scottish` and `scottish`)
        is numbered, so neither entry is lost."""
        out, n = self.text(key), 1
        while out in taken:
            n += 1
            out = f"{self.text(key)} ({n})"
        return out

    def tree(self, node: Any) -> Any:
        if isinstance(node, str):
            return self.text(node)
        if isinstance(node, Mapping):
            out: dict[Any, Any] = {}
            for k, v in node.items():
                out[self._key(k, out) if isinstance(k, str) else k] = self.tree(v)
            return out
        if isinstance(node, list | tuple):
            return [self.tree(v) for v in node]
        return node


def _words(text: str) -> set[str]:
    return {w.casefold() for w in _WORD.findall(text)}


def distinctive_words(names: Mapping[str, Iterable[str]]) -> dict[str, set[str]]:
    """The words that point at each level, given the names (id, label, ...) of the levels of one axis
    that a campaign contrasts: `{level: names}` -> `{level: words}`.

    A word of a level's names (letters and digits, case-folded) is distinctive of it unless
    - every other contrasted level of the axis has it too: it tells no side from the other
      ("English" when Scottish English is contrasted with Lancastrian English);
    - it is shorter than `MIN_WORD` or has no letter (`L1`, `gb`, `029`);
    - it is in `COMMON_WORDS` ("English" and "General" when General American faces Scottish English).

    So "Scottish" is masked wherever a campaign contrasts Scottish English, "male" and "female" when
    it contrasts voice profiles of those genders, and neither when the voice profile is shared by
    both sides of every pair (a shared level names no condition)."""
    words = {level: set().union(*(_words(n) for n in ns)) for level, ns in names.items()}
    out: dict[str, set[str]] = {}
    for level, own in words.items():
        others = [w for other, w in words.items() if other != level]
        shared = set.intersection(*others) if others else set()
        out[level] = {
            w
            for w in own - shared
            if len(w) >= MIN_WORD and any(c.isalpha() for c in w) and w not in COMMON_WORDS
        }
    return out


def _names(catalogue: Any, axis: str, level: str) -> list[str]:
    """A level's id, its catalogue label, and for an accent the eSpeak voice that realises it (a
    stimulus example names its voice: `en-gb-scotland` says Scottish as plainly as the label)."""
    table = getattr(catalogue, axis, {}) if catalogue is not None else {}
    entry = table.get(level) if isinstance(table, Mapping) else None
    found = [level]
    for attr in ("label", "voice"):
        value = getattr(entry, attr, None)
        if isinstance(value, str) and value:
            found.append(value)
    return found


def level_terms(campaign: Any, catalogue: Any) -> set[str]:
    """Every text a redacted report masks so that no condition level is named: each contrasted level's
    id, label and voice with their distinctive words (`distinctive_words`), and, whole, the free texts
    written to name a contrast (the campaign's description and the pair names). Levels shared by both
    sides of every pair (`calm`, `none`) are not masked: they name no condition.

    The masking runs over every string of the report, so the other user-written fields (campaign,
    batch, agent and scenario names, agent options, the stimulus override's reason) lose these terms
    wherever they reach it."""
    terms: set[str] = {campaign.description} if campaign.description else set()
    contrasted: dict[str, dict[str, list[str]]] = {}
    for pair in campaign.pairs:
        if pair.name:
            terms.add(pair.name)
        for side in (pair.a, pair.b):
            for axis, level in side.items():
                contrasted.setdefault(axis, {})[level] = _names(catalogue, axis, level)
    for levels in contrasted.values():
        for level, names in levels.items():
            terms.update(n for n in names if n == level or len(n) >= MIN_WORD)  # a voice `it` is no term
        for words in distinctive_words(levels).values():
            terms.update(words)
    return terms
