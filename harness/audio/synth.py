"""`SpeechSynthesizer`: the async face of TTS, with a content-addressed cache and a process pool.

eSpeak NG (and most native engines) keeps one global engine per process, so CPU-bound backends
run in worker processes, each building its own backend from the same (name, options) spec. A
crashed worker is reported as a SynthesisError naming the voice, and the pool is rebuilt; the
parent process never dies with it.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import pickle
import threading
import time
from concurrent.futures import Executor, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from types import TracebackType
from typing import Any

from harness.audio.cache import ContentCache, content_key, synthesis_cache
from harness.audio.errors import SynthesisError
from harness.audio.registry import create_tts
from harness.audio.types import AsyncTTSBackend, Synthesis, TTSBackend
from personas._model import SpeechParams
from scenarios.errors import VoiceAuditError

_worker_backends: dict[str, TTSBackend] = {}


def _worker_synthesize(
    name: str, options: dict[str, Any], text: str, ssml: str | None, params: SpeechParams
) -> Synthesis:
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


def _exit_with_parent(parent_pid: int) -> None:
    """Pool workers end when the process that started them dies (even by kill -9), instead of
    lingering as orphans holding an eSpeak engine."""

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(1.0)
        os._exit(0)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def default_pool_size() -> int:
    return max(1, min(2, os.cpu_count() or 1))


class SpeechSynthesizer:
    """`await synth.speak(text, ssml, params)` -> Synthesis, cached by content hash.

    `backend` is a registry name (run in a process pool of `pool_size` workers; 0 runs in a
    thread of this process) or a backend instance (always in-process, e.g. a test double or an
    HTTP client). A cache hit costs a dictionary lookup and no synthesis.
    """

    def __init__(
        self,
        backend: str | TTSBackend | AsyncTTSBackend = "espeak",
        *,
        options: dict[str, Any] | None = None,
        pool_size: int | None = None,
        cache_dir: str | Path | None = None,
        cache_items: int = 2048,
    ) -> None:
        self._options = dict(options or {})
        if isinstance(backend, str):
            self._name: str | None = backend
            self.backend: TTSBackend | AsyncTTSBackend = create_tts(backend, **self._options)
        else:
            self._name = None
            self.backend = backend
        self.pool_size = default_pool_size() if pool_size is None else pool_size
        self.cache: ContentCache[Synthesis] = synthesis_cache(cache_dir, cache_items)
        self._pool: Executor | None = None
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

    def _executor(self) -> Executor:
        if self._pool is None:
            self._pool = ProcessPoolExecutor(
                self.pool_size,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_exit_with_parent,
                initargs=(os.getpid(),),
            )
        return self._pool

    async def speak(self, text: str, ssml: str | None, params: SpeechParams) -> Synthesis:
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
        if isinstance(backend, AsyncTTSBackend):
            return await backend.synthesize_async(text, ssml, params)
        if not self.uses_pool:
            return await asyncio.to_thread(backend.synthesize, text, ssml, params)
        assert self._name is not None
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(
                self._executor(), _worker_synthesize, self._name, self._options, text, ssml, params
            )
        except BrokenProcessPool:
            self._reset_pool()
            raise SynthesisError(
                f"the {self._name} engine process crashed while speaking voice {params.espeak_name}; "
                "the pool was restarted (fix: check the voice name and the SSML of this utterance)"
            ) from None

    def _reset_pool(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    async def warm_up(self, params: SpeechParams | None = None) -> None:
        """Start the workers and their engines before timing-sensitive work."""
        if self.uses_pool and self._name is not None:
            name = self._name
            probe = params or SpeechParams(voice="en-us")
            loop = asyncio.get_running_loop()
            pool = self._executor()
            await asyncio.gather(
                *(
                    loop.run_in_executor(pool, _worker_synthesize, name, self._options, "ok", None, probe)
                    for _ in range(self.pool_size)
                )
            )

    def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)

    async def __aenter__(self) -> SpeechSynthesizer:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await asyncio.to_thread(self.close)
