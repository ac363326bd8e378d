"""A hung TTS engine: the utterance times out, only its worker is killed, and the pool keeps speaking."""

from __future__ import annotations

import asyncio
import os
import signal
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from voice_audit.harness.audio import SpeechSynthesizer, SynthesisError
from voice_audit.harness.audio.synth import SynthesisTimeout, SynthesisTimeoutError
from voice_audit.personas import SpeechParams

HANGING_TTS = """
import time
from voice_audit.harness.audio.espeak import EspeakBackend

class HangOnMagic(EspeakBackend):
    def synthesize(self, text, ssml, params):
        if "xyzzy" in text:
            time.sleep(3600)
        return super().synthesize(text, ssml, params)
"""

pytestmark = pytest.mark.serial  # synthesis timeouts and elapsed wall time are asserted

LIMIT = SynthesisTimeout(base_s=1.5, per_char_s=0.0, cold_start_s=60.0)
VOICE = SpeechParams(voice="en-us", variant="f2")


@pytest.fixture
def hanging_backend(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    (tmp_path / "hanging_tts.py").write_text(textwrap.dedent(HANGING_TTS))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "hanging_tts:HangOnMagic"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _running(pid: int) -> bool:
    """Not yet a zombie waiting to be reaped. The main thread of a killed process turns zombie
    before its other threads have exited, and waitpid sees it only after they have."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split()[2]
        return state not in ("Z", "X") or len(list(Path(f"/proc/{pid}/task").iterdir())) > 1
    except FileNotFoundError:
        return False


async def test_a_hung_worker_times_out_is_killed_and_the_pool_recovers(hanging_backend: str) -> None:
    async with SpeechSynthesizer(hanging_backend, pool_size=1, timeout=LIMIT) as synth:
        await synth.warm_up()
        assert synth._pool is not None
        (stuck_pid,) = synth._pool.pids()
        t0 = time.monotonic()
        with pytest.raises(SynthesisTimeoutError) as info:
            await synth.speak("Please say xyzzy to my account manager today, thanks.", None, VOICE)
        elapsed = time.monotonic() - t0
        assert LIMIT.base_s <= elapsed < LIMIT.base_s + 5.0
        err = info.value
        assert (err.kind, err.backend, err.voice, err.stopped) == (
            "tts_timeout",
            hanging_backend,
            "en-us+f2",
            "killed",
        )
        assert err.words == "Please say xyzzy to my account ..."
        assert err.timeout_s == pytest.approx(LIMIT.base_s)
        assert "\n" not in str(err)
        assert "en-us+f2 within 1.5 s" in str(err) and "'Please say xyzzy" in str(err)
        assert isinstance(err, SynthesisError)
        assert not _alive(stuck_pid), "the hung worker must be killed, not left running"
        assert synth._pool.pids() == []

        after = await synth.speak("I would like to check my balance.", None, VOICE)
        assert after.duration_s > 1.0 and after.params["voice"] == "en-us+f2"
        (new_pid,) = synth._pool.pids()
        assert new_pid != stuck_pid


async def test_a_hang_does_not_break_the_utterance_on_the_other_worker(hanging_backend: str) -> None:
    async with SpeechSynthesizer(hanging_backend, pool_size=2, timeout=LIMIT) as synth:
        await synth.warm_up()
        assert synth._pool is not None and len(synth._pool.pids()) == 2
        hung, fine = await asyncio.gather(
            synth.speak("xyzzy", None, VOICE),
            synth.speak("Thank you, that is all I needed.", None, VOICE),
            return_exceptions=True,
        )
        assert isinstance(hung, SynthesisTimeoutError)
        assert not isinstance(fine, BaseException) and fine.duration_s > 1.0
        assert len(synth._pool.pids()) == 1


async def test_the_cold_start_allowance_applies_to_a_new_worker_only(hanging_backend: str) -> None:
    """A fresh worker builds its engine inside the first utterance; that must not trip a tight limit."""
    tight = SynthesisTimeout(base_s=0.2, per_char_s=0.0, cold_start_s=60.0)
    async with SpeechSynthesizer(hanging_backend, pool_size=1, timeout=tight) as synth:
        first = await synth.speak("Hello there.", None, VOICE)
        assert first.duration_s > 0.3
        with pytest.raises(SynthesisTimeoutError, match=r"within 0\.2 s"):
            await synth.speak("xyzzy now", None, VOICE)


async def test_an_in_process_backend_that_hangs_is_reported_too() -> None:
    class Stuck:
        name = "stuck"
        version = "1"
        sample_rate = 16000

        def synthesize(self, text: str, ssml: str | None, params: SpeechParams) -> None:
            time.sleep(2.0)

    synth = SpeechSynthesizer(Stuck(), timeout=SynthesisTimeout(base_s=0.3, per_char_s=0.0, cold_start_s=0.0))  # type: ignore[arg-type]
    t0 = time.monotonic()
    with pytest.raises(SynthesisTimeoutError, match="cannot be stopped") as info:
        await synth.speak("hello", None, VOICE)
    assert time.monotonic() - t0 < 1.5
    assert info.value.stopped == "abandoned"


async def test_a_worker_that_died_while_idle_is_replaced_before_the_next_utterance(
    hanging_backend: str,
) -> None:
    async with SpeechSynthesizer(hanging_backend, pool_size=1, timeout=LIMIT) as synth:
        await synth.warm_up()
        assert synth._pool is not None
        (pid,) = synth._pool.pids()
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 5
        while _running(pid) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        s = await synth.speak("Is anybody there?", None, VOICE)
        assert s.duration_s > 0.5
        assert synth._pool.pids() != [pid]
