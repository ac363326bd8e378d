"""Recorded voices end to end: every line of a campaign's list is rendered to a WAV file (eSpeak,
standing in for a voice actor), the campaign runs on the `recorded` backend through agents that
walk every path of the caller (repeats, rephrases, multi-fact and unknown-fact answers, requests
for a human, a hold, patience prompts), and the caller channel of each call is the recordings,
byte for byte, after the declared trimming and normalisation."""

from __future__ import annotations

import asyncio
import csv
import json
from pathlib import Path

import numpy as np
import pytest
import soundfile

from voice_audit.harness.audio.espeak import EspeakBackend
from voice_audit.harness.audio.recorded import prepare
from voice_audit.harness.caller.lines import MISSING_LIST, planned_lines
from voice_audit.harness.planning import load_campaign
from voice_audit.harness.runlog import CALL_WAV, EPISODES_DIR, EVENTS_JSONL
from voice_audit.harness.runtime import CampaignRunner
from voice_audit.scenarios import ConfigError

pytestmark = pytest.mark.slow

REPAIR = "Sorry, could you repeat that?"
PATHS = [
    "Thank you for calling. How can I help you today?",
    "What seems to be the problem?",
    REPAIR,
    REPAIR,
    REPAIR,
    REPAIR,
    "Please hold while I check.",
    "Can you confirm your full name, your date of birth and the zip code on the account?",
    REPAIR,
    "What is your PIN?",
    "Can I have your email, your phone number, your account number and the last four digits of the card?",
    "What is the address on the account? And what was the amount and the date of the charge?",
    "I have issued a refund of twenty four dollars and ninety nine cents.",
]
SILENT = [
    "Thank you for calling. How can I help you today?",
    "What seems to be the problem?",
    "",
    "",
    "",
    "",
    "",
    "",
]

PAD_MS = 120
GAP_MS = 180
LUFS = -24.0


def _campaign(voices: Path) -> str:
    """The scripted agent walks the caller through every path, four repairs in a row included, so the
    caller's repair-loop patience is set beyond that walk (it is tested on its own elsewhere)."""
    return f"""\
name: recorded
seed: 11
batch: rec-1
scenarios: [refund_duplicate_charge]
agents:
  - {{name: paths, adapter: scripted, options: {{audio_ms: 200, lines: {json.dumps(PATHS)}}}}}
  - {{name: silent, adapter: scripted, options: {{audio_ms: 0, lines: {json.dumps(SILENT)}}}}}
pairs:
  - contrast: [accent]
    base: {{voice_profile: female_adult, affect: calm, disfluency: none, wording: plain}}
    a: {{accent: us_general}}
    b: {{accent: gb_scottish}}
  - contrast: [disfluency]
    base: {{accent: us_general, voice_profile: male_adult, affect: frustrated, wording: urgency}}
    a: {{disfluency: none}}
    b: {{disfluency: heavy}}
voices: 1
concurrency: 2
pacing: accelerated
tts: {{name: recorded, options: {{dir: "{voices}", pad_ms: {PAD_MS}, gap_ms: {GAP_MS}, target_lufs: {LUFS}}}}}
asr: {{name: pocketsphinx}}
channel: {{telephone: false}}
patience: {{prompt_after_s: 2, prompts_before_human: 2, hang_up_after_s: 9, repairs_before_human: 10, repairs_after_human: 10}}
timeouts: {{turn_s: 30, call_s: 200}}
"""


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The campaign file and a folder holding an eSpeak rendering of every line of its list, each
    with silence around it (as a real take has) so trimming to the pad is exercised."""
    root = tmp_path_factory.mktemp("recorded")
    voices = root / "voices"
    voices.mkdir()
    cfile = root / "campaign.yaml"
    cfile.write_text(_campaign(voices))
    espeak = EspeakBackend(use_ssml=False)
    for line in planned_lines(load_campaign(cfile)):
        synth = espeak.synthesize(line.text, None, line.speech)
        rate = synth.sample_rate
        take = np.concatenate(
            [np.zeros(rate * 3 // 10, np.int16), np.asarray(synth.pcm), np.zeros(rate // 4, np.int16)]
        )
        soundfile.write(str(voices / line.file), take, rate, subtype="PCM_16")
    return cfile, voices


def _events(episode: Path) -> list[dict[str, object]]:
    return [json.loads(x) for x in (episode / EVENTS_JSONL).read_text().splitlines() if x.strip()]


def test_campaign_on_recordings_plays_exactly_the_listed_lines(
    study: tuple[Path, Path], tmp_path: Path
) -> None:
    cfile, voices = study
    loaded = load_campaign(cfile)
    lines = {v.key: v for v in planned_lines(loaded)}
    run_dir = tmp_path / "run"
    summary = asyncio.run(CampaignRunner(loaded, run_dir, cache_dir=None, progress=False).run())
    assert summary.statuses.get("completed", 0) == len(loaded.plan.episodes), summary.lines()

    voice_of_side: dict[str, str] = {}
    for ep in loaded.plan.episodes:
        cond = ep.pair.condition_a if ep.side == "a" else ep.pair.condition_b
        voice_of_side[ep.episode_id] = (
            f"{cond.accent}/{cond.voice_profile}/{ep.pair.voice_index}/{cond.affect}"
        )

    kinds: set[str] = set()
    multi_line = 0
    prepared: dict[str, np.ndarray] = {}
    compared = 0
    for ep in loaded.plan.episodes:
        folder = run_dir / EPISODES_DIR / ep.episode_id
        audio, rate = soundfile.read(str(folder / CALL_WAV), dtype="int16", always_2d=True)
        assert rate == 16000
        caller = audio[:, 0]
        for ev in _events(folder):
            if ev["type"] != "caller_utterance_start":
                continue
            kinds.add(str(ev["kind"]))
            voice = ev["voice"]
            assert (
                isinstance(voice, dict) and voice["backend"] == "recorded" and voice["rate_applied"] is False
            )
            keys = voice["lines"]
            assert all(k in lines for k in keys), f"a line outside the list was played: {ev['text']!r}"
            assert {lines[k].voice for k in keys} == {voice_of_side[ep.episode_id]}, "a line of another voice"
            assert " ".join(lines[k].text for k in keys) == ev["text"]
            multi_line += len(keys) > 1
            pieces = []
            for i, k in enumerate(keys):
                if k not in prepared:
                    prepared[k] = prepare(
                        voices / f"{k}.wav", pad_ms=PAD_MS, sample_rate=16000, target_lufs=LUFS
                    ).pcm
                if i:
                    pieces.append(np.zeros(16000 * GAP_MS // 1000, np.int16))
                pieces.append(prepared[k])
            expected = np.concatenate(pieces)
            start = int(ev["t_ms"]) * 16
            got = caller[start : start + len(expected)]
            assert got.tobytes() == expected.tobytes(), (
                f"caller audio differs from the recording for {ev['text']!r}"
            )
            compared += 1
    assert kinds >= {
        "anchor",
        "repeat",
        "rephrase",
        "human_request",
        "nudge",
        "challenge_answer",
        "patience_prompt",
    }
    assert multi_line > 0
    assert compared > 40


def test_missing_lines_refuse_the_campaign_before_any_call(study: tuple[Path, Path], tmp_path: Path) -> None:
    cfile, voices = study
    loaded = load_campaign(cfile)
    victims = sorted(planned_lines(loaded), key=lambda v: v.key)[:2]
    moved = tmp_path / "moved"
    moved.mkdir()
    for v in victims:
        (voices / v.file).rename(moved / v.file)
    run_dir = tmp_path / "run"
    try:
        with pytest.raises(ConfigError) as err:
            asyncio.run(CampaignRunner(loaded, run_dir, cache_dir=None, progress=False).run())
    finally:
        for v in victims:
            (moved / v.file).rename(voices / v.file)
    message = str(err.value)
    assert f"2 of {len(planned_lines(loaded))} lines" in message
    assert str(voices / MISSING_LIST) in message
    assert not run_dir.exists()
    with (voices / MISSING_LIST).open() as f:
        listed = [row["key"] for row in csv.DictReader(f)]
    assert sorted(listed) == [v.key for v in victims]
    (voices / MISSING_LIST).unlink()


def test_a_recording_in_the_wrong_format_is_refused(study: tuple[Path, Path], tmp_path: Path) -> None:
    cfile, voices = study
    loaded = load_campaign(cfile)
    victim = planned_lines(loaded)[0]
    path = voices / victim.file
    original = path.read_bytes()
    mono, rate = soundfile.read(str(path), dtype="int16")
    soundfile.write(str(path), np.stack([mono, mono], axis=1), rate, subtype="PCM_16")
    try:
        with pytest.raises(ConfigError) as err:
            asyncio.run(CampaignRunner(loaded, tmp_path / "run", cache_dir=None, progress=False).run())
    finally:
        path.write_bytes(original)
    assert victim.file in str(err.value) and "2 channels" in str(err.value)
    assert not (tmp_path / "run").exists()


def test_check_command_reports_the_recordings(study: tuple[Path, Path]) -> None:
    import subprocess
    import sys

    cfile, voices = study
    main = "import sys; from voice_audit.harness.cli import main; sys.argv[0] = 'voice-audit'; main()"
    res = subprocess.run(
        [sys.executable, "-c", main, "personas", "check", str(cfile)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    n = len(planned_lines(load_campaign(cfile)))
    assert f"all {n} lines recorded in {voices}" in res.stdout and f"played at {LUFS:g} LUFS" in res.stdout
    victim = planned_lines(load_campaign(cfile))[-1]
    (voices / victim.file).rename(voices / "aside.tmp")
    try:
        res = subprocess.run(
            [sys.executable, "-c", main, "personas", "check", str(cfile)],
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        (voices / "aside.tmp").rename(voices / victim.file)
        (voices / MISSING_LIST).unlink(missing_ok=True)
    assert res.returncode != 0 and f"1 of {n} lines" in res.stderr and "Traceback" not in res.stderr
