"""Rate matching's time-scale modification runs off the event loop: in the loop thread its phase
vocoder (and, on a fresh install, the compilation of its kernels) stalls every call in flight."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from voice_audit.harness.audio import SpeechSynthesizer, Synthesis
from voice_audit.harness.audio import synth as synth_module
from voice_audit.personas import SpeechParams


class FixedPaceBackend:
    """Speaks each word as 0.3 s of noise and 0.1 s of silence whatever the rate asked: no rate
    control, and a pace (about 3.3 words a second) the matching must change."""

    name = "fixed-pace"
    version = "1"
    sample_rate = 16000

    def synthesize(self, text: str, ssml: str | None, params: SpeechParams) -> Synthesis:
        rng = np.random.default_rng(len(text))
        word = np.concatenate([rng.normal(0, 3000, 4800), np.zeros(1600)])
        pcm = np.tile(word, max(1, len(text.split()))).astype(np.int16)
        return Synthesis(
            pcm=pcm, sample_rate=16000, backend=self.name, backend_version=self.version, params={}
        )


async def test_time_scale_runs_outside_the_event_loop_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    threads: list[bool] = []

    def scale(pcm: np.ndarray, factor: float) -> np.ndarray:
        threads.append(threading.current_thread() is threading.main_thread())
        return pcm[: int(len(pcm) / factor)]

    monkeypatch.setattr(synth_module, "time_scale", scale)
    synth = SpeechSynthesizer(FixedPaceBackend(), options={"match_rate": True}, pool_size=0)
    line = "Hello, I was charged twice for my subscription."
    out = await synth.speak(line, None, SpeechParams(voice="en-us"))
    assert out.params["rate_match"]["method"] == "time-scale modification"
    assert threads == [False]  # called once, and not in the loop's (main) thread
    assert len(out.pcm) < 6400 * len(line.split())  # the scaled audio, sped up to the common pace


async def test_warming_rate_matching_runs_the_time_scale_once_off_the_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    threads: list[bool] = []
    monkeypatch.setattr(
        synth_module,
        "warm_time_scale",
        lambda: threads.append(threading.current_thread() is threading.main_thread()),
    )
    await SpeechSynthesizer(
        FixedPaceBackend(), options={"match_rate": True}, pool_size=0
    ).warm_rate_matching()
    await SpeechSynthesizer(FixedPaceBackend(), pool_size=0).warm_rate_matching()  # matching off: nothing
    assert threads == [False]
