"""Deterministic text transforms of a caller's words: disfluency and account-signal wording.

The transforms only add material (fillers, pauses, restarts, framing phrases). They never touch
the spans that carry facts (the scenario's `{placeholders}`), so both calls of a pair state the
same facts whatever their persona.
"""

from __future__ import annotations

import hashlib
import random
import re
from xml.sax.saxutils import escape

from voice_audit.personas._model import CallerCondition, Catalogue
from voice_audit.scenarios.base import Frozen
from voice_audit.scenarios.templates import PLACEHOLDER


class Utterance(Frozen):
    """What a caller says in one turn: the words, the SSML that speaks them, and the fact spans kept intact."""

    text: str
    ssml: str
    base_text: str
    protected: tuple[str, ...] = ()


def _rng(seed: int, key: str) -> random.Random:
    digest = hashlib.sha256(f"{seed}:{key}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def fill_placeholders(template: str, slots: dict[str, str]) -> tuple[list[tuple[str, bool]], str]:
    """Split a template into (chunk, is_fact) pieces with placeholders filled from `slots`."""
    pieces: list[tuple[str, bool]] = []
    pos = 0
    for m in PLACEHOLDER.finditer(template):
        if m.start() > pos:
            pieces.append((template[pos : m.start()], False))
        name = m.group(1)
        if name not in slots:
            raise KeyError(name)
        pieces.append((slots[name], True))
        pos = m.end()
    if pos < len(template):
        pieces.append((template[pos:], False))
    plain = "".join(chunk for chunk, _ in pieces)
    return pieces, re.sub(r"\s+", " ", plain).strip()


def render_utterance(
    template: str,
    slots: dict[str, str],
    condition: CallerCondition,
    catalogue: Catalogue,
    *,
    seed: int,
    key: str,
    framing: bool = True,
) -> Utterance:
    """Render one caller turn for a condition, deterministically from (seed, key).

    `framing` adds the wording level's opener/closer; the caller policy asks for it only on the
    turn that states the problem, so framing is said once per call, not on every answer.
    """
    pieces, base = fill_placeholders(template, slots)
    dis = catalogue.disfluency[condition.disfluency]
    wording = catalogue.wording[condition.wording]
    # The framing phrases draw from their own streams, so the scripted words get the same fillers
    # and restarts whether or not a wording level frames them (a wording contrast changes only the framing).
    body_rng, opener_rng, closer_rng = (
        _rng(seed, key),
        _rng(seed, key + ":opener"),
        _rng(seed, key + ":closer"),
    )
    words: list[str] = []
    ssml_parts: list[str] = []
    protected: list[str] = []
    brk = f'<break time="{dis.break_ms}ms"/>' if dis.break_ms else ""

    def emit(word: str, *, fact: bool, rng: random.Random = body_rng) -> None:
        if words and not any(ch.isalnum() for ch in word):
            words[-1] += word
            ssml_parts[-1] += escape(word)
            return
        if not fact and dis.filler_rate > 0 and rng.random() < dis.filler_rate:
            filler = rng.choice(dis.fillers)
            if words:  # never before the first word; drawn anyway, so what follows draws the same
                words.append(filler + ",")
                ssml_parts.append(f"{escape(filler)},{brk}")
        if not fact and dis.restart_rate > 0 and rng.random() < dis.restart_rate and word.isalpha():
            words.append(word)
            ssml_parts.append(f"{escape(word)}{brk}")
        words.append(word)
        ssml_parts.append(escape(word))

    if framing and wording.opener:
        for w in wording.opener.split():
            emit(w, fact=False, rng=opener_rng)
    for chunk, is_fact in pieces:
        if is_fact:
            protected.append(chunk)
            for w in chunk.split():
                emit(w, fact=True)
            continue
        for w in chunk.split():
            emit(w, fact=False)
    if framing and wording.closer:
        for w in wording.closer.split():
            emit(w, fact=False, rng=closer_rng)
    text = " ".join(words)
    ssml = "<speak>" + " ".join(ssml_parts) + "</speak>"
    return Utterance(text=text, ssml=ssml, base_text=base, protected=tuple(protected))
