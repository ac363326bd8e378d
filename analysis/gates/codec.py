"""Gate 5: every recording is normalised the same way (format, rate, loudness)."""

from __future__ import annotations

import pandas as pd

from voice_audit.analysis.gates.base import GateInputs, GateResult, Verdict, audio_pass, gate_scope, pairwise


def codec_normalisation(inp: GateInputs) -> tuple[GateResult, pd.Series]:
    th = inp.plan.gates.codec
    p = inp.pairs.set_index("pair_id")
    ep = inp.episodes
    scope = gate_scope(inp.plan, "codec_normalisation")
    measured = audio_pass(inp) if inp.audio else None
    if measured is None or not measured.files:
        why = "audio checks disabled" if not inp.audio else "no recordings present"
        res = GateResult(
            gate="codec_normalisation",
            verdict="not-evaluable",
            evidence=why,
            thresholds=th.model_dump(),
            scope=scope,
            details={},
        )
        return res, pd.Series("not-evaluable", index=p.index, dtype=object)
    files = measured.files
    checked = measured.codec_sample
    results = {e: measured.measures[e].codec(files[e]) for e in checked}
    bad = {e: r.detail for e, r in results.items() if not r.ok}
    verdict: Verdict = "fail" if bad else "pass"
    paths = sorted({r.resampling_path for r in results.values() if r.resampling_path})
    ep_v = pd.Series("not-evaluable", index=ep["episode_id"], dtype=object)
    ep_v[list(files)] = verdict  # a sampled check stands for the run's recording chain
    for e in bad:
        ep_v[e] = "fail"
    res = GateResult(
        gate="codec_normalisation",
        verdict=verdict,
        evidence=f"{len(checked)} of {len(files)} recordings checked: {th.channels} ch {th.subtype}, each channel normalised "
        f"to {th.target_lufs} LUFS +- {th.lufs_tolerance} at {th.sample_rate} Hz; resampling path(s): {paths}"
        + (f"; failures: {len(bad)}" if bad else ""),
        thresholds=th.model_dump(),
        scope=scope,
        details={"failures": dict(list(bad.items())[:50]), "resampling_paths": paths},
    )
    return res, pairwise(inp, ep_v)
