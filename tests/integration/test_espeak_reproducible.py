"""eSpeak NG gives the same audio for the same line, voice and parameters in every process and in any
order: what was said before (another line, another voice, SSML) must not change the next utterance."""

from __future__ import annotations

import hashlib
import time

import pytest

from voice_audit.harness.audio import SpeechSynthesizer, create_tts
from voice_audit.personas import SpeechParams, load_catalogue

LINE = "Hello, I am calling about a charge on my account."
VOICE = SpeechParams(voice="en-us", variant="m3", pitch=40, pitch_range=45, rate_wpm=160)
BEFORE = [
    (
        "I was charged twice for my subscription and I would like a refund, please.",
        None,
        SpeechParams(voice="es", variant="f2", pitch=68, pitch_range=80, rate_wpm=200),
    ),
    (
        "Can I speak to a human agent, please?",
        '<speak>Can I <prosody rate="60%">speak</prosody> to a human <break time="300ms"/> agent?</speak>',
        SpeechParams(voice="en-gb-scotland", variant="klatt4", pitch=30),
    ),
    ("My date of birth is the fourth of July, nineteen eighty.", None, VOICE),
]


def digest(pcm: bytes) -> str:
    return hashlib.sha256(pcm).hexdigest()


def test_an_utterance_does_not_depend_on_what_was_said_before_in_the_process() -> None:
    tts = create_tts("espeak")
    alone = tts.synthesize(LINE, None, VOICE).pcm
    for text, ssml, params in BEFORE:
        tts.synthesize(text, ssml, params)
        again = tts.synthesize(LINE, None, VOICE).pcm
        assert again.size == alone.size and digest(again.tobytes()) == digest(alone.tobytes()), (
            f"{LINE!r} changed after {text!r} was spoken with {params.espeak_name}"
        )


@pytest.mark.slow
async def test_the_same_audio_in_fresh_worker_processes_in_any_order() -> None:
    """Three worker processes (each a fresh spawn) speak the line first, after the other lines, and
    interleaved; every process gives the same samples as the one that spoke it alone."""
    digests: list[str] = []
    for order in ([], BEFORE, list(reversed(BEFORE))):
        async with SpeechSynthesizer(
            "espeak",
            pool_size=1,
            cache_items=0,
            options={"match_rate": False},  # the engine alone
        ) as synth:
            for text, ssml, params in order:
                await synth.speak(text, ssml, params)
            first = await synth.speak(LINE, None, VOICE)
            pids = synth._workers().pids()
            await synth.speak(*BEFORE[0])
            second = await synth.speak(LINE, None, VOICE)
            assert synth.synthesized == len(order) + 3, (
                "every utterance must be synthesised, not served from cache"
            )
            assert synth._workers().pids() == pids, "the worker must not have been replaced in between"
        digests += [digest(first.pcm.tobytes()), digest(second.pcm.tobytes())]
    assert len(set(digests)) == 1, digests


def test_every_catalogue_voice_is_the_same_in_another_second() -> None:
    """The engine seeds its random generator (breath noise) from the clock at initialisation: every
    voice the catalogue uses, spoken again once the clock's second has changed, gives the same samples."""
    tts = create_tts("espeak")
    variants = sorted(
        {
            (r.variant, r.pitch, r.pitch_range)
            for p in load_catalogue().voice_profile.values()
            for r in p.realisations
        }
    )
    assert {"f2", "f5", "m1"} <= {v for v, _, _ in variants}, variants
    voices = [SpeechParams(voice="en-us", variant=v, pitch=p, pitch_range=r) for v, p, r in variants]
    first = [digest(tts.synthesize(LINE, None, params).pcm.tobytes()) for params in voices]
    second = int(time.time())
    while int(time.time()) == second:
        time.sleep(0.05)
    again = [digest(tts.synthesize(LINE, None, params).pcm.tobytes()) for params in voices]
    changed = [params.espeak_name for params, a, b in zip(voices, first, again, strict=True) if a != b]
    assert not changed, f"different audio a second later: {changed}"
