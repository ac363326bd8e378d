"""The audio pass measures what the per-gate functions measure: voice-to-voice latency and the
sync onsets come from the activity it caches, with the same values as reading the recording again,
and `analyze` reads each recording once."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import soundfile as sf

from tests.helpers.logs import Log, table
from voice_audit.analysis.audio import measures as audio_measures
from voice_audit.analysis.audio import onsets
from voice_audit.analysis.audio import recording as audio_file
from voice_audit.analysis.audio.measures import pool as audio_pool
from voice_audit.analysis.metrics.voice_latency import (
    VadParams,
    measure_turns,
    turns_from_activity,
    voice_latency,
)

SR = 8000
PARAMS = audio_measures.AudioParams(
    rate=16000, channels=2, subtype="PCM_16", target_lufs=-23.0, lufs_tolerance=0.5, max_seconds=2.0, f0=False
)


def _bursts(seconds: float, seed: int, noise: float) -> np.ndarray:
    """Turns of tone bursts of random length and gap on both channels, over line noise."""
    rng = np.random.default_rng(seed)
    n = int(seconds * SR)
    out = rng.normal(0, noise, (n, 2))
    for ch in (0, 1):
        t = int(rng.integers(0, SR // 2))
        while t < n:
            length = int(rng.integers(SR // 100, SR))  # 10 ms (a blip) to 1 s
            f = 150.0 + 100 * ch + 50 * rng.random()
            seg = np.arange(min(length, n - t))
            out[t : t + seg.size, ch] += 6000 * np.sin(2 * np.pi * f * seg / SR)
            t += length + int(rng.integers(SR // 50, SR))
    return out.clip(-32768, 32767).astype(np.int16)


def _windows(seed: int, seconds: float) -> pd.DataFrame:
    rng = np.random.default_rng(seed + 100)
    rows = []
    t = 0.0
    for turn in range(8):
        c0 = t + rng.uniform(-50, 300)
        c1 = c0 + rng.uniform(0, 1500)
        a0 = c1 + rng.uniform(-100, 900)
        a1 = a0 + rng.uniform(0, 1500)
        rows.append((turn, c0, c1, a0, a1))
        t = a1
        if t > seconds * 1000:
            break
    return pd.DataFrame(rows, columns=["turn", "caller_start", "caller_end", "agent_start", "agent_end"])


@pytest.mark.parametrize("seed", range(6))
def test_latency_from_cached_activity_equals_reading_the_recording(tmp_path: Path, seed: int) -> None:
    x = _bursts(8.0, seed, noise=[0.0, 30.0, 300.0][seed % 3])
    sf.write(tmp_path / "call.wav", x, SR, subtype="PCM_16")
    got, _ = audio_measures.measure_files(tmp_path, {"call.wav": (False, False)}, PARAMS, workers=1)
    m = got["call.wav"]
    w = _windows(seed, 8.0)
    expected = measure_turns(x, SR, w, VadParams())
    assert expected, "the case must have measurable turns"
    assert turns_from_activity(m, w, VadParams()) == expected
    # and after the cache has been written and read back
    again, stats = audio_measures.measure_files(tmp_path, {"call.wav": (False, False)}, PARAMS, workers=1)
    assert stats["from_cache"] == 1 and turns_from_activity(again["call.wav"], w, VadParams()) == expected


@pytest.mark.parametrize("seed", range(4))
def test_sync_onsets_from_the_pass_equal_the_per_file_check(tmp_path: Path, seed: int) -> None:
    x = _bursts(6.0, seed, noise=20.0)
    sf.write(tmp_path / "call.wav", x, SR, subtype="PCM_16")
    m = audio_measures.measure_files(tmp_path, {"call.wav": (False, False)}, PARAMS, workers=1)[0]["call.wav"]
    rng = np.random.default_rng(seed)
    a_starts = sorted(int(v) for v in rng.integers(0, 6000, 7))
    c_starts = sorted(int(v) for v in rng.integers(0, 6000, 5))
    expected = audio_measures.sync_offsets(tmp_path / "call.wav", a_starts, c_starts, 300, -45.0)
    got = audio_measures.nearest_onsets(m.onsets_ms("agent"), a_starts, 300)
    got += audio_measures.nearest_onsets(m.onsets_ms("caller"), c_starts, 300)
    assert got == expected and any(v is not None for v in got)


def test_frame_level_is_the_onset_module_s() -> None:
    x = _bursts(2.0, 7, noise=10.0)[:, 0]
    assert np.array_equal(audio_file.frame_db(x, SR), onsets.frame_db(x, SR))


def test_mono_unreadable_and_missing_recordings(tmp_path: Path) -> None:
    """As before the pass: a mono or unreadable recording gives 0 turns, no recording gives NaN."""
    (tmp_path / "episodes" / "m").mkdir(parents=True)
    (tmp_path / "episodes" / "bad").mkdir(parents=True)
    sf.write(tmp_path / "episodes" / "m" / "call.wav", _bursts(3.0, 1, 10.0)[:, :1], SR, subtype="PCM_16")
    (tmp_path / "episodes" / "bad" / "call.wav").write_bytes(b"not audio")
    talk = Log().wait(200 - 300).caller(ms=1400, gap=300).agent("hello", ms=750, gap=250).hang_up()
    files = pd.Series({"m": "episodes/m/call.wav", "bad": "episodes/bad/call.wav", "none": None})
    tab = table(talk, talk, talk)
    tab_ids = list(tab.episodes)
    files.index = tab_ids
    v = voice_latency(tab, files, tmp_path)
    assert v.loc[tab_ids[0], "speech_v2v_latency_n"] == 0 and v.loc[tab_ids[1], "speech_v2v_latency_n"] == 0
    assert np.isnan(v.loc[tab_ids[2], "speech_v2v_latency_n"])


def test_analysis_reads_each_recording_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every measure of a run (codec, F0, sync, voice-to-voice latency) from one read per file;
    a second analysis reads none."""
    from voice_audit.analysis.gates import measure_audio
    from voice_audit.analysis.plan import DEFAULT_PLAN, load_plan

    reads: list[str] = []
    real = audio_file.measure_file

    def counting(job: audio_file.FileJob) -> dict:
        reads.append(job.path)
        return real(job)

    monkeypatch.setattr(audio_pool, "measure_file", counting)
    monkeypatch.setattr(audio_pool, "pool_workers", lambda n, w: 1)
    (tmp_path / "episodes").mkdir()
    rows: list[dict[str, object]] = []
    for i in range(3):
        (tmp_path / "episodes" / f"e{i}").mkdir()
        sf.write(tmp_path / "episodes" / f"e{i}" / "call.wav", _bursts(3.0, i, 10.0), SR, subtype="PCM_16")
        rows.append(
            {
                "episode_id": f"e{i}",
                "audio_file": f"episodes/e{i}/call.wav",
                "analysable": True,
                "agent": "x",
                "condition_key": "a" if i else "b",
            }
        )
    plan = load_plan(DEFAULT_PLAN)
    measured = measure_audio(tmp_path, pd.DataFrame(rows), plan, 0)
    assert sorted(reads) == sorted(str(tmp_path / str(r["audio_file"])) for r in rows)
    assert all(m.frames and m.caller_active is not None for m in measured.measures.values())
    assert all(m.codec_ok is not None for m in measured.measures.values())
    reads.clear()
    again = measure_audio(tmp_path, pd.DataFrame(rows), plan, 0)
    assert reads == [] and again.measures == measured.measures


@pytest.mark.parametrize("case", ["speech", "clipping", "quiet", "short"])
def test_codec_loudness_after_gain_is_normalise_s(case: str) -> None:
    """The pass's normalisation is `voice_audit.harness.audio.dsp.normalise`: the same samples, and the loudness
    after the gain to 0.01 LU (computed from the input's block energies; measured when it clips)."""
    from voice_audit.harness.audio.dsp import normalise

    x = _bursts(4.0 if case != "short" else 0.6, 3, noise=5.0)[:, 1].astype(np.float64)
    if case == "clipping":
        x = x * 0.2
        x[SR : SR + 40] = 32000.0  # a click: the gain to -23 LUFS pushes it past full scale
    if case == "quiet":
        x = x * 0.01
    pcm = np.clip(x, -32768, 32767).astype(np.int16)
    ref = normalise(pcm, SR, 16000, -23.0, allow_clipped=True)
    prep = audio_file._prepare(pcm, SR, 16000, -23.0)
    assert not isinstance(prep, str)
    assert np.array_equal(prep.pcm(), ref.pcm) and prep.path == ref.resampling_path
    assert np.array_equal(prep.pcm(1000), ref.pcm[:1000])
    assert abs(prep.lufs_after() - ref.lufs_after) < 0.01
    if case == "clipping":
        # measured on normalise's own output samples, not computed from the input's blocks
        from voice_audit.harness.audio.loudness import block_energies_compiled, gated_loudness

        assert ref.clipped_samples > 0
        assert prep.lufs_after() == gated_loudness(block_energies_compiled([ref.pcm], 16000)[0])
        assert prep.lufs_after() == pytest.approx(ref.lufs_after, abs=1e-9)
    else:
        assert abs(prep.lufs_after() - ref.lufs_after) < 1e-3


def test_codec_refuses_what_normalise_refuses() -> None:
    from voice_audit.harness.audio.dsp import normalise
    from voice_audit.scenarios.errors import VoiceAuditError

    for pcm in (np.zeros(SR * 2, dtype=np.int16), np.zeros(SR // 10, dtype=np.int16)):
        with pytest.raises(VoiceAuditError) as err:
            normalise(pcm, SR, 16000, -23.0, allow_clipped=True)
        assert audio_file._prepare(pcm, SR, 16000, -23.0) == str(err.value)
