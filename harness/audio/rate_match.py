"""Rate matching: every voice speaks a persona's rate at the same measured articulation rate.

Engines give their speakers their own pace: at one nominal rate Flite's `awb` articulates about
10% faster than `rms`, and a difference in how fast two voices speak would ride along with any
contrast between them (a slower caller spends more of the call talking; an agent's recogniser
may follow slower speech better). So a persona's `rate_wpm` is made to mean one articulation rate
for every voice: `MATCHED_WPS` words per second of speech (pauses excluded) at the reference rate,
in proportion at other rates. A declared rate difference (an affect contrast, a slower repeat)
stays as declared; a speaker's own pace does not.

Each voice (its speech parameters without the rate) is calibrated once per process: the engine
says `CALIBRATION_TEXT` at the reference rate and at a slower one, and its articulation rate is
measured (`speech_time`). An engine that follows its rate control (Flite's duration stretch,
eSpeak's words per minute, ...) is then sent the nominal rate that lands on the target. One that
does not (recordings, a vendor voice without a rate) is time-scaled after synthesis, keeping its
pitch (librosa's phase vocoder, when installed); without librosa the line is left as it is and the
record says so. Every synthesis records what was done (`rate_match` in its parameters).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from voice_audit.harness.audio.speech_time import articulation_wps, word_count
from voice_audit.personas import SpeechParams

MATCHED_WPS = 4.2
"""Words per second of speech at the reference rate: the middle of the offline voices' own paces
(Flite rms 4.0, slt 4.2, awb 4.5; eSpeak English voices 3.8-4.4 at 160 wpm)."""
REFERENCE_WPM = int(SpeechParams.model_fields["rate_wpm"].default)
PROBE_WPM = 120
"""The second calibration rate: a voice whose pace does not follow 160 -> 120 by at least
`MIN_RESPONSE` has no usable rate control."""
MIN_RESPONSE = 1.15
MIN_WPM, MAX_WPM = 80, 450
FOLLOWS_RATE = frozenset({"espeak", "flite"})
"""Registry engines that apply the rate they are sent to every voice themselves (eSpeak's words per
minute, Flite's duration stretch): each of their voices calibrates as following it (checked on every
Flite speaker and on eSpeak's English voices, variants and second-language voices), so a line of
theirs is never time-scaled and warming the time-scaling for them is wasted (`warm_time_scale`)."""
CALIBRATION_TEXT = (
    "Hello, I am calling about a charge on my account. I was charged twice for my subscription last "
    "month, and I would like the second payment refunded to my card, please. My name is Jordan Miller "
    "and the zip code on the account is nine four one oh seven."
)


@dataclass(frozen=True)
class Calibration:
    """One voice's own pace and how it is brought to the common one."""

    native_wps: float
    """Its articulation rate at the reference rate."""
    follows_rate: bool
    """Whether its pace follows the rate it is sent."""

    @property
    def factor(self) -> float:
        """Multiply the nominal rate by this (or speed the audio up by it) to reach the target."""
        return MATCHED_WPS / self.native_wps if self.native_wps > 0 else 1.0


Speak = Callable[[str, SpeechParams], Awaitable[tuple[np.ndarray, int]]]


class RateMatcher:
    """Calibrates each voice once (concurrent callers of one voice wait for one calibration)."""

    def __init__(self, speak: Speak) -> None:
        self._speak = speak
        self._done: dict[str, asyncio.Future[Calibration]] = {}

    async def calibration(self, params: SpeechParams) -> Calibration:
        key = params.model_dump_json(exclude={"rate_wpm"})
        pending = self._done.get(key)
        if pending is None:
            pending = self._done[key] = asyncio.ensure_future(self._calibrate(params))
        try:
            return await asyncio.shield(pending)
        except BaseException:
            if pending.done() and pending.exception() is not None:
                self._done.pop(key, None)  # a failed calibration is tried again by the next line
            raise

    async def _calibrate(self, params: SpeechParams) -> Calibration:
        words = word_count(CALIBRATION_TEXT)
        ref = await self._speak(CALIBRATION_TEXT, params.model_copy(update={"rate_wpm": REFERENCE_WPM}))
        slow = await self._speak(CALIBRATION_TEXT, params.model_copy(update={"rate_wpm": PROBE_WPM}))
        native = articulation_wps(ref[0], ref[1], words)
        slower = articulation_wps(slow[0], slow[1], words)
        follows = native / slower >= MIN_RESPONSE if slower > 0 else False
        return Calibration(native_wps=native, follows_rate=follows)

    async def sent_params(self, params: SpeechParams) -> tuple[SpeechParams, Calibration]:
        """The parameters to send for `params`: the nominal rate that lands on the common pace."""
        cal = await self.calibration(params)
        if not cal.follows_rate:
            return params, cal
        rate = min(MAX_WPM, max(MIN_WPM, round(params.rate_wpm * cal.factor)))
        return params.model_copy(update={"rate_wpm": rate}), cal


def time_scale(pcm: np.ndarray, factor: float) -> np.ndarray | None:
    """`pcm` (int16) spoken `factor` times faster with its pitch kept, or None without librosa."""
    try:
        import librosa  # optional (the `pyin` / `offline` extras): a heavy import, needed only here
    except ImportError:
        return None
    x = np.asarray(pcm, dtype=np.float32) / 32768.0
    y = librosa.effects.time_stretch(x, rate=float(factor))
    return np.clip(np.rint(y * 32768.0), -32768, 32767).astype(np.int16)


def warm_time_scale() -> None:
    """Import librosa and load (or, on a fresh install, compile) the numba kernels of its phase
    vocoder before the first call: compiled inside a call, they cost tens of seconds of CPU."""
    time_scale(np.zeros(4000, dtype=np.int16), 1.1)


def record(persona: SpeechParams, sent: SpeechParams, cal: Calibration, how: str) -> dict[str, Any]:
    """What rate matching did to one line, for its synthesis parameters."""
    return {
        "method": how,
        "persona_rate_wpm": persona.rate_wpm,
        "sent_rate_wpm": sent.rate_wpm,
        "native_wps": round(cal.native_wps, 3),
        "matched_wps_at_reference": MATCHED_WPS,
    }


__all__ = [
    "CALIBRATION_TEXT",
    "FOLLOWS_RATE",
    "MATCHED_WPS",
    "REFERENCE_WPM",
    "Calibration",
    "RateMatcher",
    "record",
    "time_scale",
    "warm_time_scale",
]
