"""TTS worker processes with a per-utterance time limit.

eSpeak NG (and most native engines) keeps one global engine per process, so CPU-bound backends
run in worker processes (`voice_audit.harness.procs.WorkerPool`), each building its own backend
from the same (name, options) spec on its first utterance. A worker speaks one utterance at a
time, so a crashed or hung engine is killed and replaced alone: utterances running on other
workers finish, and the parent process never dies with it.
"""

from __future__ import annotations

import asyncio
import pickle
from typing import Any, Literal

from pydantic import Field

from voice_audit.harness import procs
from voice_audit.harness.audio.errors import SynthesisError
from voice_audit.harness.audio.registry import create_tts
from voice_audit.harness.audio.types import Synthesis, TTSBackend
from voice_audit.personas import SpeechParams
from voice_audit.scenarios.base import Frozen
from voice_audit.scenarios.errors import VoiceAuditError

_SYNTHESIZE = "voice_audit.harness.audio.tts_pool:_worker_synthesize"
_worker_backends: dict[str, TTSBackend] = {}

Stopped = Literal["killed", "cancelled", "abandoned"]
_STOPPED: dict[Stopped, str] = {
    "killed": "its engine process was killed and replaced",
    "cancelled": "the request was cancelled",
    "abandoned": "it runs in a thread of this process, which cannot be stopped",
}


class SynthesisTimeout(Frozen):
    """How long one utterance may take: `base_s + per_char_s * len(text)`, plus `cold_start_s`
    the first time a worker speaks (it builds the engine and loads the model then).

    The defaults leave room for a neural model at several times real time on two CPU cores,
    yet fire well before a call's own time limit (300 s by default) would blame the agent.
    """

    base_s: float = Field(default=15.0, gt=0)
    per_char_s: float = Field(default=0.2, ge=0)
    cold_start_s: float = Field(default=60.0, ge=0)

    def for_text(self, text: str, *, cold: bool = False) -> float:
        return self.base_s + self.per_char_s * len(text) + (self.cold_start_s if cold else 0.0)


class SynthesisTimeoutError(SynthesisError):
    """An utterance outlived its time limit; `stopped` says what became of the work.

    `kind`, `backend`, `voice`, `words`, `timeout_s` and `stopped` let a caller branch and log
    without parsing the message.
    """

    kind = "tts_timeout"

    def __init__(self, backend: str, voice: str, words: str, timeout_s: float, stopped: Stopped) -> None:
        self.backend = backend
        self.voice = voice
        self.words = words
        self.timeout_s = timeout_s
        self.stopped: Stopped = stopped
        super().__init__(
            f"{backend} did not finish speaking voice {voice} within {timeout_s:.1f} s "
            f"(text {words!r}); {_STOPPED[stopped]} (fix: check this text and voice with the "
            "backend alone, or raise the synthesis timeout)"
        )

    def __reduce__(self) -> tuple[type, tuple[str, str, str, float, Stopped]]:
        return (type(self), (self.backend, self.voice, self.words, self.timeout_s, self.stopped))


def first_words(text: str, n: int = 6) -> str:
    words = text.split()
    return " ".join(words[:n]) + (" ..." if len(words) > n else "")


def _worker_synthesize(job: tuple[str, dict[str, Any], str, str | None, SpeechParams]) -> Synthesis:
    """One utterance in a worker process, with the backend this process built for (name, options)."""
    name, options, text, ssml, params = job
    key = f"{name}:{sorted(options.items())!r}"
    backend = _worker_backends.get(key)
    if backend is None:
        backend = _worker_backends[key] = create_tts(name, **options)
    try:
        return backend.synthesize(text, ssml, params)
    except VoiceAuditError as exc:
        try:
            pickle.dumps(exc)
        except Exception:
            raise SynthesisError(str(exc)) from None
        raise
    except Exception as exc:
        raise SynthesisError(
            f"{name} failed on voice {params.espeak_name}: {type(exc).__name__}: {exc}"
        ) from None


class WorkerPool:
    """`size` TTS worker processes (each started on its first utterance) with the time limits of
    `timeout`; waiting happens in the pool's threads, so it is not tied to one event loop."""

    def __init__(self, size: int, timeout: SynthesisTimeout) -> None:
        self.size = size
        self.timeout = timeout
        self._pool = procs.WorkerPool(
            size, _SYNTHESIZE, preload=[__name__], cold_start_s=timeout.cold_start_s, name="tts"
        )

    def pids(self) -> list[int]:
        return self._pool.pids()

    async def run(
        self, name: str, options: dict[str, Any], text: str, ssml: str | None, params: SpeechParams
    ) -> Synthesis:
        job = self._pool.submit((name, options, text, ssml, params), timeout=self.timeout.for_text(text))
        try:
            result = await asyncio.wrap_future(job)
        except procs.WorkerCrashed:
            raise SynthesisError(
                f"the {name} engine process crashed while speaking voice {params.espeak_name}; "
                "its worker was restarted (fix: check the voice name and the SSML of this utterance)"
            ) from None
        except procs.WorkerTimeout as exc:
            raise SynthesisTimeoutError(
                name, params.espeak_name, first_words(text), exc.timeout_s, "killed"
            ) from None
        assert isinstance(result, Synthesis)
        return result

    def close(self) -> None:
        """Wait for utterances in flight (each is bounded by its time limit), then stop the workers."""
        self._pool.close(cancel_pending=True)
