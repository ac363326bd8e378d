"""Energy endpointer: turns a continuous 20 ms frame stream into caller utterances.

Deliberately simple and deterministic (frame RMS against a dBFS threshold, a minimum speech run
to start, a hangover of silence to end, a pre-roll so onsets are not clipped): the front ends
need the turn boundaries a telephone agent would find, not a state-of-the-art VAD.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

__all__ = ["Endpointer", "VadConfig"]


@dataclass(frozen=True)
class VadConfig:
    threshold_dbfs: float = -42.0
    min_speech_ms: int = 60
    hangover_ms: int = 500
    preroll_ms: int = 200
    max_utterance_ms: int = 30_000


class Endpointer:
    """Feed pcm16 at `sample_rate`; `push` returns ("start", b"") and ("end", utterance) markers.

    `start_ms` / `end_ms` place the last utterance on the input's own timeline (milliseconds of
    audio pushed so far, whole 20 ms frames): the start includes the pre-roll, the end the hangover.
    """

    def __init__(self, sample_rate: int, config: VadConfig | None = None) -> None:
        self.cfg = config or VadConfig()
        self.frame_bytes = sample_rate // 50 * 2
        # dbfs(frame) > threshold, without a log or a float mean per frame: the sum of squares
        # of the frame's samples against the same threshold in energy.
        n = self.frame_bytes // 2
        self._min_energy = n * (32768.0 * 10 ** (self.cfg.threshold_dbfs / 20)) ** 2
        self._rest = b""
        self._pre: deque[bytes] = deque(maxlen=max(1, self.cfg.preroll_ms // 20))
        self._utt: list[bytes] = []
        self._speech_run = 0
        self._silence_run = 0
        self.speaking = False
        self.frames = 0
        self.start_ms = 0
        self.end_ms = 0

    def push(self, pcm16: bytes) -> list[tuple[str, bytes]]:
        if not self._rest and len(pcm16) == self.frame_bytes:  # the common case: one whole frame
            return self._frame(pcm16)
        out: list[tuple[str, bytes]] = []
        data = self._rest + pcm16
        n = len(data) - len(data) % self.frame_bytes
        self._rest = data[n:]
        for i in range(0, n, self.frame_bytes):
            out.extend(self._frame(data[i : i + self.frame_bytes]))
        return out

    def _frame(self, frame: bytes) -> list[tuple[str, bytes]]:
        x = np.frombuffer(frame, dtype="<i2").astype(np.int64)
        voiced = float(np.dot(x, x)) > self._min_energy
        self.frames += 1
        if not self.speaking:
            self._pre.append(frame)
            self._speech_run = self._speech_run + 1 if voiced else 0
            if self._speech_run * 20 >= self.cfg.min_speech_ms:
                self.speaking, self._silence_run = True, 0
                self._utt = list(self._pre)
                self._pre.clear()
                self.start_ms = (self.frames - len(self._utt)) * 20
                return [("start", b"")]
            return []
        self._utt.append(frame)
        self._silence_run = 0 if voiced else self._silence_run + 1
        if self._silence_run * 20 >= self.cfg.hangover_ms or len(self._utt) * 20 >= self.cfg.max_utterance_ms:
            return [("end", self._finish())]
        return []

    def _finish(self) -> bytes:
        self.end_ms = self.frames * 20
        utt = b"".join(self._utt)
        self._utt, self.speaking, self._speech_run, self._silence_run = [], False, 0, 0
        return utt

    def flush(self) -> bytes | None:
        """End the current utterance now (an explicit end-of-turn hint); None when nobody is speaking."""
        return self._finish() if self.speaking else None
