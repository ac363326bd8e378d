"""The episode attribute table: who called (persona), about what, to whom, over which channel, how it sounded.

One row per episode of a run folder, read from the episode records (not from metrics.parquet) so the
attributes exist even for failed calls: a failed call still belongs to its subgroups' support.
Pre-treatment attributes (PRE_TREATMENT: persona, scenario, channel, and the STIMULUS measures of the
caller's opening anchor) describe the caller before the agent acted; REALISED measures describe the
call as it happened and are diagnostics (see `voice_audit.analysis.subgroups_run.signals`). Continuous signal
measures stay raw here; `discretise_attributes` bins them for mining.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from voice_audit.analysis.subgroups import discretise
from voice_audit.analysis.subgroups.discretise import bin_codes
from voice_audit.analysis.subgroups_run.signals import (
    REALISED_COLUMNS,
    SIGNAL_COLUMNS,
    STIMULUS_COLUMNS,
    caller_stimulus,
    signal_measures,
)
from voice_audit.harness.model.episode import RunManifest
from voice_audit.harness.runlog import RunReader
from voice_audit.personas import AXES, Catalogue, load_catalogue
from voice_audit.scenarios.errors import VoiceAuditError

VOICE_DERIVED: tuple[str, ...] = ("gender", "age_band")
"""Who the caller is, mined beside the voice profile: the recorded speaker's own gender when the
episode names a catalogued speaker (age band unknown: the voice catalogue records none), else the
voice profile's level in the run's catalogue (a synthetic voice renders the profile; an older
record names no speaker). A profile picks speakers, it does not describe them: Flite's three
voices of `young_neutral` are a woman and two men."""
PERSONA: tuple[str, ...] = tuple(
    name for axis in AXES for name in ((axis, *VOICE_DERIVED) if axis == "voice_profile" else (axis,))
)
"""The persona axes (`personas.AXES`, in their order), with the voice profile's derived attributes."""
CONTEXT: tuple[str, ...] = ("scenario", "agent", "channel")
STIMULUS: tuple[str, ...] = STIMULUS_COLUMNS
REALISED: tuple[str, ...] = REALISED_COLUMNS
SIGNALS: tuple[str, ...] = SIGNAL_COLUMNS
PRE_TREATMENT: tuple[str, ...] = (*PERSONA, *CONTEXT, *STIMULUS)
ALL_ATTRIBUTES: tuple[str, ...] = (*PERSONA, *CONTEXT, *SIGNALS)
KEYS: tuple[str, ...] = (
    "episode_id",
    "run_id",
    "pair_id",
    "caller_id",
    "side",
    "contrast",
    "replicate",
    "voice_index",
    "status",
    "events_sha256",
)
BINS: tuple[str, ...] = ("low", "medium", "high")


def channel_label(channel: Mapping[str, Any]) -> str:
    """A short, stable label of the simulated channel (telephone band, noise, packet loss)."""
    parts = ["telephone" if channel.get("telephone", True) else "wideband"]
    snr = channel.get("snr_db")
    if snr is not None:
        parts.append(f"snr{float(snr):g}dB")
    loss = float(channel.get("packet_loss") or 0.0)
    if loss > 0:
        parts.append(f"loss{loss:g}")
    return "+".join(parts)


def run_catalogue(manifest: RunManifest) -> Catalogue | None:
    """The persona catalogue the run used (for gender and age band); None if it cannot be found."""
    try:
        if manifest.campaign.catalogue:
            base = Path(manifest.campaign_file).parent
            return load_catalogue(base / manifest.campaign.catalogue)
        return load_catalogue()
    except (VoiceAuditError, OSError, ValueError):
        return None


def _records(reader: RunReader) -> pd.DataFrame:
    rows: dict[str, dict[str, object]] = {}
    for rec in reader.records():
        h, o = rec.header, rec.outcome
        cond = h.condition
        rows[h.episode_id] = {
            "episode_id": h.episode_id,
            "run_id": h.run_id,
            "pair_id": h.pair_id,
            "caller_id": h.caller_id,
            "side": h.side,
            "contrast": ",".join(h.contrast),
            "replicate": h.replicate,
            "voice_index": h.voice_index,
            "status": o.status,
            "events_sha256": o.events_sha256,
            "speaker_gender": h.speaker_gender,
            **{axis: getattr(cond, axis) for axis in AXES},
            "scenario": h.scenario_id,
            "agent": h.agent,
            "channel": channel_label(h.channel),
        }
    return pd.DataFrame(list(rows.values()), columns=[*KEYS, "speaker_gender", *PERSONA, *CONTEXT])


def _who(df: pd.DataFrame, profiles: Mapping[str, Any]) -> tuple[list[str | None], list[str | None]]:
    """Gender and age band of each episode's caller (`VOICE_DERIVED`)."""
    gender: list[str | None] = []
    age: list[str | None] = []
    for profile, spoken in zip(df["voice_profile"], df["speaker_gender"], strict=True):
        if spoken is not None:  # a catalogued person: their gender, an age nobody recorded
            gender.append(str(spoken))
            age.append(None)
        elif profile in profiles:
            gender.append(profiles[profile].gender)
            age.append(profiles[profile].age_band)
        else:
            gender.append(None)
            age.append(None)
    return gender, age


def episode_attributes(
    run_dir: str | Path, *, signals: bool = True, write_cache: bool = True
) -> pd.DataFrame:
    """Raw attribute table of a run, indexed by episode_id: KEYS, PERSONA, CONTEXT and SIGNALS columns.

    gender and age band describe the caller (`VOICE_DERIVED`: a catalogued speaker's own gender, else
    the run's persona catalogue, missing if the catalogue is gone);
    signal measures come from the cache in the run folder or, for new episodes, from the audio; the
    stimulus measures are pooled per caller, so every call of one caller has the same values.
    """
    reader = RunReader(run_dir)
    df = _records(reader)
    cat = run_catalogue(reader.manifest)
    profiles = cat.voice_profile if cat is not None else {}
    df["gender"], df["age_band"] = _who(df, profiles)
    df = df.set_index("episode_id", drop=False)
    if signals and len(df):
        measured, _ = signal_measures(
            run_dir, list(zip(df["episode_id"], df["events_sha256"], strict=True)), write_cache=write_cache
        )
        measured[list(STIMULUS)] = caller_stimulus(measured, df["caller_id"])
        df = df.join(measured)
    else:
        for col in SIGNALS:
            df[col] = math.nan
    return df[[*KEYS, *PERSONA, *CONTEXT, *SIGNALS]]


def cut_points(values: pd.Series, binned: pd.Series) -> list[float]:
    """Thresholds between consecutive non-empty bins, so other data can be binned the same way."""
    x = values.to_numpy(dtype=np.float64, na_value=np.nan)
    codes = np.asarray(pd.Categorical(binned).codes)
    cuts: list[float] = []
    present = sorted(int(c) for c in np.unique(codes[codes >= 0]))
    for lo, hi in itertools.pairwise(present):
        cuts.append((float(np.nanmax(x[codes == lo])) + float(np.nanmin(x[codes == hi]))) / 2.0)
    return cuts


def discretise_attributes(
    df: pd.DataFrame,
    continuous: Sequence[str] = SIGNALS,
    edges: Mapping[str, tuple[list[str], list[float]]] | None = None,
) -> tuple[pd.DataFrame, dict[str, tuple[list[str], list[float]]]]:
    """Bin continuous columns into low/medium/high by frequency, or with given (labels, cut points).

    Returns the binned copy and, per column, the labels used and the cut points between them, so a
    follow-up run can be binned on the original's scale.
    """
    cols = [c for c in continuous if c in df.columns]
    out = df.copy()
    used: dict[str, tuple[list[str], list[float]]] = {}
    for col in cols:
        x = pd.to_numeric(df[col], errors="coerce").astype(float)
        if edges is not None and col in edges:
            labels, cuts = edges[col]
            values = x.to_numpy()
            idx = np.searchsorted(np.asarray(cuts, dtype=np.float64), values, side="right")
            lookup = np.array([BINS.index(lb) for lb in labels] or [0], dtype=np.int64)
            codes = np.where(np.isnan(values), -1, lookup[np.minimum(idx, len(lookup) - 1)])
            out[col] = pd.Categorical.from_codes(codes, categories=list(BINS), ordered=True)
            used[col] = (list(labels), list(cuts))
            continue
        binned = discretise(pd.DataFrame({col: x}), [col], BINS)[col]
        codes = bin_codes(x.to_numpy(), len(BINS))
        present = [BINS[int(c)] for c in sorted(set(codes[codes >= 0].tolist()))]
        out[col] = binned
        used[col] = (present, cut_points(x, binned))
    return out, used
