"""The intelligibility task: raters hear one caller turn and type the words they heard.

This is the human part of the stimulus gate (docs/method/index.md section 8): persona perceptibility asks
whether raters hear the intended accent, this asks whether they understand the words. A rater's
transcript is scored against the scripted words of the turn (``voice_audit.harness.audio.wer``'s normaliser
and word error count, the same the pilot's reference recogniser is scored with), so a condition's
human word error rate is on the same scale as the automatic pre-screen's.

Items are a seeded sample of the rendered caller turns of each voice of each condition (distinct
lines only: replicates of one line by one voice are one stimulus), so every voice is heard and a
rater's effort is spread over voices rather than over replicates. The reference words never reach
the browser; the page shows the same instruction for every clip, and the order is the rater's
seeded shuffle, which interleaves conditions and voices.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterable

from voice_audit.harness.model import EpisodeRecord
from voice_audit.harness.runlog import RunReader

LINES_PER_VOICE = 5
"""Distinct caller lines sampled per voice of a condition (about 50 scripted words per voice)."""

MIN_WORDS = 3
"""Shorter turns ("yes", "no thanks") test recognition of a word, not of speech: left out."""

MAX_TRANSCRIPT_CHARS = 1000

QUESTION = "Type the words the caller says, as you hear them. Guess a word you are unsure of; leave out a word you did not catch."


def caller_turns(reader: RunReader, episode_id: str) -> dict[int, str]:
    """Caller turns with rendered speech: turn -> the words the caller said in it (joined)."""
    words: dict[int, list[str]] = {}
    for ev in reader.events(episode_id):
        if ev.type == "caller_utterance_start" and ev.duration_ms > 0 and ev.text.strip():
            words.setdefault(ev.turn, []).append(ev.text.strip())
    return {t: " ".join(w) for t, w in sorted(words.items())}


def _voice_key(rec: EpisodeRecord) -> str:
    """The condition (every axis level) and voice index of a call: who the rater hears."""
    levels = rec.header.condition.model_dump(mode="json")
    return "|".join(f"{k}={levels[k]}" for k in sorted(levels)) + f"#v{rec.header.voice_index}"


def intelligibility_items(
    reader: RunReader, records: Iterable[EpisodeRecord], seed: int, lines_per_voice: int = LINES_PER_VOICE
) -> list[dict[str, object]]:
    """Item fields: per voice of each condition, a seeded sample of its distinct caller lines, each
    taken from one call (the first in a seeded order that said it)."""
    by_voice: dict[str, dict[str, tuple[str, int]]] = {}
    ordered = sorted(
        records, key=lambda r: hashlib.sha256(f"{seed}\0{r.header.episode_id}".encode()).digest()
    )
    for rec in ordered:
        eid = rec.header.episode_id
        lines = by_voice.setdefault(_voice_key(rec), {})
        for turn, text in caller_turns(reader, eid).items():
            if len(text.split()) >= MIN_WORDS and text not in lines:
                lines[text] = (eid, turn)
    out: list[dict[str, object]] = []
    for voice in sorted(by_voice):
        lines = by_voice[voice]
        digest = hashlib.sha256(f"{seed}\0intelligibility\0{voice}".encode()).digest()
        chosen = random.Random(int.from_bytes(digest[:8], "big")).sample(
            sorted(lines), min(lines_per_voice, len(lines))
        )
        for text in sorted(chosen):
            eid, turn = lines[text]
            out.append(
                {"key": f"intelligibility:{eid}:{turn}", "episode_id": eid, "turn": turn, "reference": text}
            )
    return out


def clean_transcript(answer: object) -> str:
    """A rater's transcript as stored: a string, whitespace collapsed; raises ValueError otherwise."""
    if not isinstance(answer, str):
        raise ValueError("answer must be the words heard, as text")
    text = " ".join(answer.split())
    if len(text) > MAX_TRANSCRIPT_CHARS:
        raise ValueError(f"transcript longer than {MAX_TRANSCRIPT_CHARS} characters")
    return text
