"""`SpeechRecognizer`: the async face of ASR, cached by audio hash + backend + model.

Recognition runs in a thread pool: CTranslate2, PocketSphinx and torch release the GIL while
decoding, and the model is loaded once per process instead of once per worker process.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol, cast

import numpy as np

from voice_audit.harness.audio.cache import ContentCache, content_key, transcript_cache
from voice_audit.harness.audio.dsp import pcm_sha256
from voice_audit.harness.audio.registry import create_asr
from voice_audit.harness.audio.types import ASRBackend, AsyncASRBackend, Transcript


class _PromptedBackend(Protocol):
    """A backend with `accepts_prompt = True` (faster-whisper's initial prompt)."""

    def transcribe(self, pcm: np.ndarray, sample_rate: int, prompt: str | None = None) -> Transcript: ...


def transcript_key(
    pcm: np.ndarray, sample_rate: int, backend: str, model: str, prompt: str | None = None
) -> str:
    """The cache key of a transcript: the audio, the backend and model that read it (and the prompt,
    for a backend that takes one); a reader that knows which recogniser would read can look a
    transcript up without loading it."""
    extra = {"prompt": prompt} if prompt else {}
    return content_key(audio=pcm_sha256(pcm, sample_rate), backend=backend, model=model, **extra)


class SpeechRecognizer:
    """`await asr.transcribe(pcm, sample_rate)` -> Transcript, off the event loop and cached."""

    def __init__(
        self,
        backend: str | ASRBackend = "faster-whisper",
        *,
        options: dict[str, Any] | None = None,
        max_workers: int = 1,
        cache_dir: str | Path | None = None,
        cache_items: int = 4096,
    ) -> None:
        self.backend: ASRBackend = (
            create_asr(backend, **(options or {})) if isinstance(backend, str) else backend
        )
        self.cache: ContentCache[Transcript] = transcript_cache(cache_dir, cache_items)
        self._pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="asr")
        self.recognised = 0

    @property
    def accepts_prompt(self) -> bool:
        """Whether the backend decodes with a context prompt (Whisper's initial prompt); others ignore it."""
        return bool(getattr(self.backend, "accepts_prompt", False))

    def key(self, pcm: np.ndarray, sample_rate: int, prompt: str | None = None) -> str:
        return transcript_key(
            pcm, sample_rate, self.backend.name, self.backend.model, prompt if self.accepts_prompt else None
        )

    async def transcribe(self, pcm: np.ndarray, sample_rate: int, *, prompt: str | None = None) -> Transcript:
        """`prompt`: context text that biases recognition (the agent's last question, domain words),
        used by backends that support it and part of the cache key then."""
        prompt = prompt if prompt and self.accepts_prompt else None
        key = self.key(pcm, sample_rate, prompt)
        hit = self.cache.get(key)
        if hit is not None:
            return hit.model_copy(update={"cached": True})
        self.recognised += 1
        backend = self.backend
        if isinstance(backend, AsyncASRBackend):
            result = await backend.transcribe_async(pcm, sample_rate)
        else:
            loop = asyncio.get_running_loop()
            call: Callable[[np.ndarray, int], Transcript] = (
                partial(cast(_PromptedBackend, backend).transcribe, prompt=prompt)
                if prompt
                else backend.transcribe
            )
            result = await loop.run_in_executor(self._pool, call, pcm, sample_rate)
        self.cache.put(key, result)
        return result

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)

    async def __aenter__(self) -> SpeechRecognizer:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await asyncio.to_thread(self.close)
