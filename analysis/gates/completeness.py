"""Gate 6: every episode has its artifacts, and events and audio are in sync."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from voice_audit.analysis.audio import measures as audio_measures
from voice_audit.analysis.audio.run_pass import exists_in_run, sample_ids
from voice_audit.analysis.gates.base import GateInputs, GateResult, Verdict, audio_pass, gate_scope, pairwise


def artifact_completeness(inp: GateInputs) -> tuple[GateResult, pd.Series]:
    th = inp.plan.gates.completeness
    ep = inp.episodes
    df = inp.ing.table.df
    table = inp.ing.table
    base = str(inp.ing.run_dir)

    def has(t: str) -> pd.Series:
        seen = np.zeros(table.n_episodes, dtype=bool)
        seen[table.of_type(t, columns=["ep"])["ep"].to_numpy()] = True
        return pd.Series(seen, index=table.episodes)

    calls = table.of_type("tool_call", columns=["ep", "call_id"])
    results = table.of_type("tool_result", columns=["ep", "call_id"])
    unanswered = calls.merge(results.drop_duplicates(), on=["ep", "call_id"], how="left", indicator=True)
    unanswered = (
        table.per_episode(unanswered[unanswered["_merge"] == "left_only"].groupby("ep").size().astype(float))
        > 0
    )
    problems: dict[str, list[str]] = {str(e): [] for e in ep["episode_id"]}
    for e, ok, why in zip(ep["episode_id"], ep["analysable"], ep["drop_reason"], strict=True):
        if ok is not True:
            problems[str(e)].append(str(why))
    checks = {
        "timing (call_started)": has("call_started"),
        "transcript (agent_transcript)": has("agent_transcript") | ~has("agent_speech_start"),
        "caller timing (utterance start/end)": has("caller_utterance_start") & has("caller_utterance_end"),
    }
    for name, s in checks.items():
        for e in s.index[~s]:
            problems[str(e)].append(f"missing {name}")
    for e in unanswered.index[unanswered]:
        problems[str(e)].append("tool log incomplete: a tool_call without its tool_result")
    for e, h, m in zip(ep["episode_id"], ep["events_hash_ok"], ep["events_monotonic"], strict=True):
        if h == 0.0:
            problems[str(e)].append("events.jsonl hash differs from its record")
        if m == 0.0:
            problems[str(e)].append("event clock not monotonic")
    audio_ok = {
        str(e): isinstance(a, str) and exists_in_run(base, inp.ing.run_dir, a)
        for e, a in zip(ep["episode_id"], ep["audio_file"], strict=True)
    }
    for e, ok in audio_ok.items():
        if not ok:
            problems[e].append("audio (call.wav) missing")
    sync: dict[str, Any] = {"checked": 0}
    if inp.audio:
        candidates = [e for e, ok in audio_ok.items() if ok and e in table.episodes]
        sample = sample_ids(candidates, th.max_audio_files, inp.seed)
        pos = {e: i for i, e in enumerate(table.episodes)}
        offsets_all: list[float] = []
        unsynced = 0
        measured = audio_pass(inp)
        for e in sample:
            sub = df[df["ep"] == pos[e]]
            a_starts = sub.loc[sub["type"] == "agent_speech_start", "t_ms"].astype(int).tolist()
            c_starts = sub.loc[sub["type"] == "caller_utterance_start", "t_ms"].astype(int).tolist()
            m = measured.measures.get(e)
            if m is None or not m.readable:
                problems[e].append(f"audio unreadable: {m.read_error if m is not None else 'not measured'}")
                continue
            offs = audio_measures.nearest_onsets(m.onsets_ms("agent"), a_starts, th.onset_search_ms)
            offs += audio_measures.nearest_onsets(m.onsets_ms("caller"), c_starts, th.onset_search_ms)
            found = [o for o in offs if o is not None]
            offsets_all += found
            early = [o for o in found if o < -th.sync_tolerance_ms]
            med = float(np.median(np.abs(found))) if found else None
            if len(found) < len(offs):
                problems[e].append(
                    f"{len(offs) - len(found)} speech start(s) with no audio onset within {th.onset_search_ms} ms"
                )
            if early or med is None or med > th.sync_tolerance_ms:
                unsynced += 1
                problems[e].append(
                    f"events and audio out of sync (median |offset| {med} ms, {len(early)} onset(s) before the logged start)"
                )
        sync = {
            "checked": len(sample),
            "of": len(candidates),
            "unsynchronised": unsynced,
            "offset_ms_median": float(np.median(offsets_all)) if offsets_all else None,
            "offset_ms_p95_abs": float(np.percentile(np.abs(offsets_all), 95)) if offsets_all else None,
            "rule": f"median |onset - logged start| <= {th.sync_tolerance_ms} ms and no onset earlier than -{th.sync_tolerance_ms} ms "
            "(a later onset can be leading silence inside the clip)",
        }
    ep_v = pd.Series({e: ("fail" if v else "pass") for e, v in problems.items()}, dtype=object)
    n_fail = int((ep_v == "fail").sum())
    verdict: Verdict = "fail" if n_fail else ("pass" if len(ep_v) else "not-evaluable")
    if verdict == "pass" and not inp.audio:
        verdict = "not-evaluable"
    failing = {e: v for e, v in problems.items() if v}
    res = GateResult(
        gate="artifact_completeness",
        verdict=verdict,
        evidence=f"{len(ep_v) - n_fail} of {len(ep_v)} episodes complete (events schema-valid with matching hash, audio, "
        f"transcript, timing, tool log); sync checked on {sync.get('checked', 0)} recordings"
        + ("" if inp.audio else "; audio checks disabled, so sync is unverified"),
        thresholds=th.model_dump(),
        scope=gate_scope(inp.plan, "artifact_completeness"),
        details={
            "failing_episodes": dict(list(failing.items())[:50]),
            "n_failing": len(failing),
            "sync": sync,
        },
    )
    if not inp.audio:
        ep_v[ep_v == "pass"] = "not-evaluable"
    return res, pairwise(inp, ep_v)
