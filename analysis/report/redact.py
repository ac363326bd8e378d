"""Secrets and real-system text: what a report must never print, and what a release must drop.

Credentials are masked in every report (a report is not a place for keys). `--redact` also drops
endpoint URLs, raw audio, the words of real systems and the condition labels (the persona level of
each side: the sides stay "a" and "b" with their contrast axis), keeping every field so the schema holds.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from voice_audit.harness.model.secrets import MASK, MIN_SECRET
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
_MIN_SECRET = MIN_SECRET


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
    """Replaces every known secret (and, when redacting, every URL) inside any string of a tree."""

    def __init__(
        self,
        secrets: Iterable[str],
        drop_urls: bool,
        mask_levels: bool = False,
        level_terms: Iterable[str] = (),
    ) -> None:
        ordered = sorted({s for s in secrets if len(s) >= _MIN_SECRET}, key=len, reverse=True)
        self._secrets = re.compile("|".join(map(re.escape, ordered))) if ordered else None
        self._drop_urls = drop_urls
        self._mask_levels = mask_levels
        terms = sorted({t.strip() for t in level_terms if len(t.strip()) >= 2}, key=len, reverse=True)
        self._terms = (
            re.compile(r"(?<![\w])(?:" + "|".join(map(re.escape, terms)) + r")(?![\w])", re.IGNORECASE)
            if terms and mask_levels
            else None
        )
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

    def tree(self, node: Any) -> Any:
        if isinstance(node, str):
            return self.text(node)
        if isinstance(node, Mapping):
            return {self.text(str(k)) if isinstance(k, str) else k: self.tree(v) for k, v in node.items()}
        if isinstance(node, list | tuple):
            return [self.tree(v) for v in node]
        return node


def level_terms(campaign: Any, catalogue: Any) -> set[str]:
    """Every user-written or catalogue text that can name a condition level: the pair names, the
    campaign's description, and each contrast level's id and label (both sides). Levels shared by
    both sides of every pair (`calm`, `none`) are not masked: they name no condition."""
    terms: set[str] = {campaign.description} if campaign.description else set()
    for pair in campaign.pairs:
        if pair.name:
            terms.add(pair.name)
        for side in (pair.a, pair.b):
            for axis, level in side.items():
                terms.add(level)
                table = getattr(catalogue, axis, {}) if catalogue is not None else {}
                entry = table.get(level) if isinstance(table, Mapping) else None
                label = getattr(entry, "label", None)
                if label:
                    terms.add(str(label))
    return terms
