"""`SpeechSynthesizer`: the async face of TTS, with a content-addressed cache, a process pool
(`voice_audit.harness.audio.tts_pool`) and a per-utterance time limit.

A crashed or hung engine is reported as a SynthesisError naming the backend, voice and text, and
only its own worker is replaced; the parent process never dies with it.

Rate matching (`voice_audit.harness.audio.rate_match`) is on by default: each voice is calibrated
once and sent the nominal rate that makes the persona's rate one articulation rate for every
voice; the backend option `match_rate: false` turns it off (and is not passed to the backend).
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np

from voice_audit.harness.audio.cache import ContentCache, content_key, synthesis_cache
from voice_audit.harness.audio.rate_match import (
    FOLLOWS_RATE,
    RateMatcher,
    record,
    time_scale,
    warm_time_scale,
)
from voice_audit.harness.audio.registry import create_tts
from voice_audit.harness.audio.tts_pool import (
    SynthesisTimeout,
    SynthesisTimeoutError,
    WorkerPool,
    first_words,
)
from voice_audit.harness.audio.types import AsyncTTSBackend, Synthesis, TTSBackend
from voice_audit.personas import SpeechParams

__all__ = [
    "MATCH_RATE_OPTION",
    "SpeechSynthesizer",
    "SynthesisTimeout",
    "SynthesisTimeoutError",
    "default_pool_size",
]

MATCH_RATE_OPTION = "match_rate"
"""The backend option that turns rate matching off (`false`); the harness's, never the backend's."""


def default_pool_size() -> int:
    return max(1, min(2, os.cpu_count() or 1))


class SpeechSynthesizer:
    """`await synth.speak(text, ssml, params)` -> Synthesis, cached by content hash.

    `backend` is a registry name (run in a process pool of `pool_size` workers; 0 runs in a
    thread of this process) or a backend instance (always in-process, e.g. a test double or an
    HTTP client). A cache hit costs a dictionary lookup and no synthesis.

    Every synthesis is bounded by `timeout` (scaled to the text's length). In the pool the stuck
    worker is killed and replaced; an in-process backend's thread cannot be stopped, so there the
    error is raised and the thread is abandoned; an async backend's request is cancelled.
    """

    def __init__(
        self,
        backend: str | TTSBackend | AsyncTTSBackend = "espeak",
        *,
        options: dict[str, Any] | None = None,
        pool_size: int | None = None,
        cache_dir: str | Path | None = None,
        cache_items: int = 2048,
        timeout: SynthesisTimeout | None = None,
    ) -> None:
        self._options = dict(options or {})
        # On for engines named from the registry; a backend instance (a test double, a client built
        # by hand) is matched only when asked to, and recordings are played as they were recorded
        # (an actor's pace is theirs; the line list's guidance names the rate to speak at).
        match = self._options.pop(MATCH_RATE_OPTION, isinstance(backend, str) and backend != "recorded")
        if not isinstance(match, bool):
            raise TypeError(f"tts option {MATCH_RATE_OPTION} must be true or false, not {match!r}")
        self.match_rate = match
        self._matcher = RateMatcher(self._speak_pcm)
        if isinstance(backend, str):
            self._name: str | None = backend
            self.backend: TTSBackend | AsyncTTSBackend = create_tts(backend, **self._options)
        else:
            self._name = None
            self.backend = backend
        self.pool_size = default_pool_size() if pool_size is None else pool_size
        self.cache: ContentCache[Synthesis] = synthesis_cache(cache_dir, cache_items)
        self.timeout = timeout or SynthesisTimeout()
        self._pool: WorkerPool | None = None
        self._warm_in_process = False
        self._inflight: dict[str, asyncio.Future[Synthesis]] = {}
        self.synthesized = 0

    @property
    def uses_pool(self) -> bool:
        return self._name is not None and self.pool_size > 0 and not isinstance(self.backend, AsyncTTSBackend)

    def key(self, text: str, ssml: str | None, params: SpeechParams) -> str:
        return content_key(
            text=text,
            ssml=ssml,
            backend=self.backend.name,
            version=self.backend.version,
            params=params.model_dump(mode="json"),
        )

    def _workers(self) -> WorkerPool:
        if self._pool is None:
            self._pool = WorkerPool(self.pool_size, self.timeout)
        return self._pool

    async def speak(self, text: str, ssml: str | None, params: SpeechParams) -> Synthesis:
        """`text` said by the voice of `params`; with rate matching, at the common articulation rate."""
        if not self.match_rate:
            return await self._speak_cached(text, ssml, params)
        sent, cal = await self._matcher.sent_params(params)
        out = await self._speak_cached(text, ssml, sent)
        how = "rate control"
        if not cal.follows_rate:
            if abs(cal.factor - 1.0) < 0.01:
                how = "unchanged (within 1%)"
            else:
                # off the event loop: the phase vocoder takes tens of ms a line (the calls in flight
                # keep their media clocks), and its kernels' first compilation tens of seconds
                scaled = await asyncio.to_thread(time_scale, np.asarray(out.pcm), cal.factor)
                if scaled is None:
                    how = "not matched: the backend has no rate control and librosa is not installed"
                else:
                    how = "time-scale modification"
                    out = out.model_copy(update={"pcm": scaled})
        return out.model_copy(update={"params": {**out.params, "rate_match": record(params, sent, cal, how)}})

    async def _speak_pcm(self, text: str, params: SpeechParams) -> tuple[np.ndarray, int]:
        out = await self._speak_cached(text, None, params)
        return np.asarray(out.pcm), out.sample_rate

    async def _speak_cached(self, text: str, ssml: str | None, params: SpeechParams) -> Synthesis:
        key = self.key(text, ssml, params)
        hit = self.cache.get(key)
        if hit is not None:
            return hit.model_copy(update={"cached": True, "cache_key": key})
        pending = self._inflight.get(key)
        if pending is not None:
            return (await asyncio.shield(pending)).model_copy(update={"cached": True})
        future: asyncio.Future[Synthesis] = asyncio.get_running_loop().create_future()
        self._inflight[key] = future
        try:
            result = (await self._run(text, ssml, params)).model_copy(update={"cache_key": key})
            self.cache.put(key, result)
            future.set_result(result)
            return result
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()
            raise
        finally:
            del self._inflight[key]

    async def _run(self, text: str, ssml: str | None, params: SpeechParams) -> Synthesis:
        self.synthesized += 1
        backend = self.backend
        if self.uses_pool:
            assert self._name is not None
            return await self._workers().run(self._name, self._options, text, ssml, params)
        limit = self.timeout.for_text(text, cold=not self._warm_in_process)
        try:
            async with asyncio.timeout(limit):
                if isinstance(backend, AsyncTTSBackend):
                    result = await backend.synthesize_async(text, ssml, params)
                else:
                    result = await asyncio.to_thread(backend.synthesize, text, ssml, params)
        except TimeoutError:
            raise SynthesisTimeoutError(
                backend.name,
                params.espeak_name,
                first_words(text),
                limit,
                "cancelled" if isinstance(backend, AsyncTTSBackend) else "abandoned",
            ) from None
        self._warm_in_process = True
        return result

    @property
    def may_time_scale(self) -> bool:
        """Whether rate matching may time-scale a line: it is on, and the engine is not one whose
        every voice follows its rate control (`FOLLOWS_RATE`; a line of theirs is sent a rate instead)."""
        return self.match_rate and self._name not in FOLLOWS_RATE

    async def warm_rate_matching(self) -> None:
        """Ready the time-scale modification rate matching may apply (see `warm_time_scale`): about
        2 s of CPU in each process, so only where a line may be time-scaled (`may_time_scale`). Were
        a voice of an engine in `FOLLOWS_RATE` ever to calibrate as not following, its lines would
        still be time-scaled, the same audio, the kernels loaded by the first."""
        if self.may_time_scale:
            await asyncio.to_thread(warm_time_scale)

    async def warm_up(self, params: SpeechParams | None = None) -> None:
        """Start the workers and their engines before timing-sensitive work."""
        if self.uses_pool and self._name is not None:
            probe = params or SpeechParams(voice="en-us")
            pool = self._workers()
            await asyncio.gather(
                *(pool.run(self._name, self._options, "ok", None, probe) for _ in range(self.pool_size))
            )

    def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()

    async def __aenter__(self) -> SpeechSynthesizer:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await asyncio.to_thread(self.close)
