"""Synthesis facade: cache hits run no synthesis, disk cache survives instances, errors pass through."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import numpy as np
import pytest

from voice_audit.harness.audio import EmptyTextError, SpeechSynthesizer, Synthesis
from voice_audit.personas import SpeechParams


class CountingBackend:
    name = "counting"
    version = "1"
    sample_rate = 16000

    def __init__(self) -> None:
        self.calls = 0

    def synthesize(self, text: str, ssml: str | None, params: SpeechParams) -> Synthesis:
        self.calls += 1
        if not text:
            raise EmptyTextError("nothing to say")
        pcm = (np.sin(np.arange(1600) * 0.1 * len(text)) * 1000).astype(np.int16)
        return Synthesis(
            pcm=pcm,
            sample_rate=16000,
            backend=self.name,
            backend_version=self.version,
            params=params.model_dump(),
        )


P = SpeechParams(voice="en-us", variant="f2")


async def test_cache_hit_runs_no_synthesis_and_is_fast() -> None:
    backend = CountingBackend()
    synth = SpeechSynthesizer(backend)
    first = await synth.speak("hello", None, P)
    assert backend.calls == 1 and not first.cached and first.cache_key
    t0 = time.perf_counter()
    for _ in range(200):
        again = await synth.speak("hello", None, P)
    per_hit = (time.perf_counter() - t0) / 200
    assert backend.calls == 1
    assert again.cached and np.array_equal(again.pcm, first.pcm)
    assert per_hit <= 0.001
    await synth.speak("hello", None, P.model_copy(update={"pitch": 60}))
    await synth.speak("hello", "<speak>hello</speak>", P)
    assert backend.calls == 3


async def test_concurrent_identical_requests_synthesise_once() -> None:
    backend = CountingBackend()
    synth = SpeechSynthesizer(backend)
    results = await asyncio.gather(*(synth.speak("same words", None, P) for _ in range(5)))
    assert backend.calls == 1
    assert all(np.array_equal(r.pcm, results[0].pcm) for r in results)


async def test_disk_cache_is_shared_between_instances(tmp_path: Path) -> None:
    a, b = CountingBackend(), CountingBackend()
    await SpeechSynthesizer(a, cache_dir=tmp_path).speak("persist me", None, P)
    hit = await SpeechSynthesizer(b, cache_dir=tmp_path).speak("persist me", None, P)
    assert a.calls == 1 and b.calls == 0 and hit.cached
    assert not list(tmp_path.rglob("*.tmp"))  # no interrupted write left behind


async def test_corrupt_disk_entry_is_a_miss(tmp_path: Path) -> None:
    backend = CountingBackend()
    synth = SpeechSynthesizer(backend, cache_dir=tmp_path)
    await synth.speak("x words", None, P)
    for f in tmp_path.rglob("*.npz"):
        f.write_bytes(b"torn")
    fresh = SpeechSynthesizer(backend, cache_dir=tmp_path)
    await fresh.speak("x words", None, P)
    assert backend.calls == 2


async def test_backend_errors_reach_the_caller_and_are_not_cached() -> None:
    backend = CountingBackend()
    synth = SpeechSynthesizer(backend)
    for _ in range(2):
        with pytest.raises(EmptyTextError):
            await synth.speak("", None, P)
    assert backend.calls == 2
