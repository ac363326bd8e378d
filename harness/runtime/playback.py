"""Agent audio playback on the episode clock, with Twilio semantics.

Agent audio plays in arrival order: a chunk starts at max(now, end of what is queued). A mark is
due when the audio queued before it has played; `clear` drops what has not played yet and makes
pending marks due at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from voice_audit.harness.adapter import AudioOut
from voice_audit.harness.audio import mulaw_decode
from voice_audit.harness.runtime.eventlog import Stamper
from voice_audit.harness.runtime.recorder import CallRecorder, to_recording_rate


def decode_agent_audio(audio: AudioOut) -> np.ndarray:
    if audio.encoding == "mulaw":
        pcm = np.asarray(mulaw_decode(audio.pcm), dtype=np.int16)
    else:
        pcm = np.frombuffer(audio.pcm[: len(audio.pcm) // 2 * 2], dtype="<i2").astype(np.int16)
    return to_recording_rate(pcm, audio.sample_rate)


@dataclass
class Playback:
    stamper: Stamper
    recorder: CallRecorder
    end_ms: int = 0
    turn: int = 0
    turn_start: int | None = None
    turn_pcm: list[np.ndarray] = field(default_factory=list)
    marks: list[tuple[int, str]] = field(default_factory=list)
    bytes_in: int = 0

    def enqueue(self, audio: AudioOut, now_ms: int) -> int:
        """Schedule one chunk; returns when it starts playing.

        The chunk starts where the log can stamp it: an event written since `now_ms` was read (a
        barge-in stamped a millisecond later) moves the log's instant, and the recording follows it.
        """
        pcm = decode_agent_audio(audio)
        start = self.stamper.floor(max(now_ms, self.end_ms))
        duration = round(1000 * len(pcm) / 16000)
        if self.turn_start is None:
            self.turn_start = start
            self.stamper.schedule("agent_speech_start", start, turn=self.turn)
        self.stamper.schedule(
            "agent_audio",
            start,
            duration_ms=1000 * len(pcm) / 16000,
            n_bytes=len(audio.pcm),
            encoding=audio.encoding,
            sample_rate=audio.sample_rate,
        )
        self.recorder.agent(start, pcm)
        self.turn_pcm.append(pcm)
        self.end_ms = start + duration
        self.bytes_in += len(audio.pcm)
        return start

    def mark(self, name: str, now_ms: int) -> int:
        due = max(now_ms, self.end_ms)
        self.marks.append((due, name))
        return due

    def due_marks(self, now_ms: int) -> list[str]:
        if not self.marks:  # called for every 20 ms frame; marks are rare
            return []
        due = [name for t, name in self.marks if t <= now_ms]
        self.marks = [(t, n) for t, n in self.marks if t > now_ms]
        return due

    def clear(self, now_ms: int) -> list[str]:
        """Drop unplayed audio; returns the marks that become due immediately."""
        if self.end_ms > now_ms:
            self.recorder.clear_agent_after(now_ms)
            self.stamper.drop_pending_after(now_ms, frozenset({"agent_audio"}))
            if self.turn_start is not None and self.turn_pcm:
                keep = max(0, (now_ms - self.turn_start) * 16)
                self.turn_pcm = [np.concatenate(self.turn_pcm)[:keep]]
            self.end_ms = now_ms
        names = [n for _, n in self.marks]
        self.marks = []
        return names

    def finish_turn(self, interrupted: bool = False) -> np.ndarray:
        """Close the agent's turn: schedule its end event and return its audio at 16 kHz."""
        pcm = np.concatenate(self.turn_pcm) if self.turn_pcm else np.zeros(0, dtype=np.int16)
        if self.turn_start is not None:
            self.stamper.schedule(
                "agent_speech_end",
                self.end_ms,
                turn=self.turn,
                duration_ms=self.end_ms - self.turn_start,
                interrupted=interrupted,
            )
        self.turn += 1
        self.turn_start = None
        self.turn_pcm = []
        return pcm
