"""`compare` counts speakers, not pairs, as analyze does: on small synthetic analysed run folders
(metrics.parquet, pairs.parquet, deltas.json as analyze writes them, no calls), the change intervals
are clustered by the speaker each episode records, a cell voiced by fewer speakers than the plan's
minimum shows its estimate without an interval and names its speakers per side (so a release check
cannot decide on it either way), a cell with enough speakers is judged as before, and analysed runs
whose records name no speaker compare by realisation with the limitation stated."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import typer
from typer.testing import CliRunner

from voice_audit.analysis.release.check import check_changes
from voice_audit.analysis.release.cli import compare_cmd
from voice_audit.analysis.release.compare import compare_runs
from voice_audit.analysis.release.policy import ChangeRule

A_KEY = "accent=us_general|voice_profile=young_neutral"
B_KEY = "accent=gb_scottish|voice_profile=young_neutral"
METRIC, FAMILY = "burden_auth", "path_burden"
RULE = ChangeRule(family=FAMILY, metric=METRIC, tolerance=0.5)


@dataclass(frozen=True)
class Pair:
    """One matched pair: voice index and replicate (the planner's keys), who voiced a and b (None: a
    record that names no speaker), and the metric on each side."""

    voice_index: int
    replicate: int
    speaker_a: str | None
    speaker_b: str | None
    value_a: float
    value_b: float


def write_run(run: Path, pairs: Sequence[Pair], *, columns: str = "v4", run_id: str | None = None) -> Path:
    """An analysed run folder with one cell (agent x, scenario s, contrast accent) holding `pairs`.
    `columns`: "v4" writes metrics.parquet as analyze writes it now (voice_id and speaker), "old" as
    an analysis before them wrote it (neither column: the voice is the realisation)."""
    run.mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({"run_id": run_id or run.name, "campaign": {"name": "c"}}))
    metrics, rows = [], []
    for i, p in enumerate(pairs):
        pid = f"p{i:03d}"
        rows.append(
            {
                "pair_id": pid,
                "agent": "x",
                "scenario_id": "s",
                "contrast": "accent",
                "condition_key_a": A_KEY,
                "condition_key_b": B_KEY,
                "replicate": p.replicate,
                "included": True,
            }
        )
        for side, key, speaker, value in (
            ("a", A_KEY, p.speaker_a, p.value_a),
            ("b", B_KEY, p.speaker_b, p.value_b),
        ):
            row: dict[str, object] = {
                "pair_id": pid,
                "side": side,
                "attempt": 0,
                "condition_key": key,
                "voice_index": p.voice_index,
                METRIC: value,
            }
            if columns == "v4":
                row["speaker"] = speaker
                row["voice_id"] = speaker or f"{key}#v{p.voice_index}"
            metrics.append(row)
    pd.DataFrame(metrics).to_parquet(run / "metrics.parquet")
    pd.DataFrame(rows).to_parquet(run / "pairs.parquet")
    estimate = {"family": FAMILY, "metric": METRIC, "alpha": 0.05, "smallest_effect": 0.5}
    cell = {
        "agent": "x",
        "scenario_id": "s",
        "contrast": "accent",
        "condition_key_a": A_KEY,
        "condition_key_b": B_KEY,
    }
    (run / "deltas.json").write_text(json.dumps({"cells": [{"cell": cell, "estimates": [estimate]}]}))
    (run / "disposition.json").write_text(json.dumps({"cells": []}))
    return run


def versions(
    speakers: Sequence[tuple[str | None, str | None]], replicates: int, shift: float, seed: int = 7
) -> tuple[list[Pair], list[Pair]]:
    """Old and new pairs on the given speaker pairs (one voice index each) x `replicates`: the new
    version adds `shift` plus a per-speaker offset (sd 0.6) and a little per-call noise to condition
    b's burden, so pairs of one speaker share their change: replicates of a speaker are not
    independent evidence."""
    rng = np.random.default_rng(seed)
    old: list[Pair] = []
    new: list[Pair] = []
    for v, (sa, sb) in enumerate(speakers):
        offset = rng.normal(0.0, 0.6)
        for r in range(replicates):
            a, b = rng.normal(2.0, 0.3), rng.normal(2.0, 0.3)
            old.append(Pair(v, r, sa, sb, a, b))
            new.append(Pair(v, r, sa, sb, a, b + shift + offset + rng.normal(0.0, 0.05)))
    return old, new


def gap(doc: dict) -> dict:
    (cell,) = doc["cells"]
    (row,) = [c for c in cell["changes"] if c["metric"] == METRIC and c["of"] == "gap"]
    return {**row, "speakers": cell["speakers"]}


def compare(tmp: Path, old: list[Pair], new: list[Pair], **kw: object) -> dict:
    columns = str(kw.pop("columns", "v4"))
    o = write_run(tmp / "old", old, columns=columns, run_id="v1")
    n = write_run(tmp / "new", new, columns=columns, run_id="v2")
    return compare_runs(o, n, subgroups=False, **kw)  # type: ignore[arg-type]


def test_one_speaker_pair_gives_no_interval_and_no_verdict(tmp_path: Path) -> None:
    # 8 matched pairs on 8 realisations, every a call voiced by one person, every b call by another
    old, new = versions([("cmu-rms", "cmu-awb")] * 8, 1, shift=1.0)
    doc = compare(tmp_path / "named", old, new)
    g = gap(doc)
    assert g["n_pairs"] == 8 and g["n_clusters"] == 1
    assert g["estimate"] is not None and g["estimate"] < -0.5  # b's burden grew: a - b fell
    assert g["ci_low"] is None and g["ci_high"] is None and g["p_value"] is None
    assert g["no_interval"] == "no interval: 1 speaker"
    spk = g["speakers"]
    assert spk["a"] == {"old": 1, "new": 1} and spk["b"] == {"old": 1, "new": 1}
    assert spk["clusters"] == 1 and spk["enough"] is False and spk["min_speakers"] == 3
    assert any("1 distinct voice(s) < 3 needed" in n for n in spk["notes"])
    (v,) = check_changes([RULE], doc, min_pairs=4, diagnostic="allowed")
    assert v.status == "not_evaluable" and (v.speakers_a, v.speakers_b) == (1, 1)
    line = v.line()
    assert "no interval: 1 speaker" in line and "(a 1, b 1)" in line
    assert "neither for nor against the contrast" in line
    # the same calls with the realisation as the voice (the per-pair reading the comparison made
    # before it counted speakers): a narrow interval on 8 "independent" pairs and a verdict on it
    per_pair = gap(compare(tmp_path / "realisations", _unnamed(old), _unnamed(new)))
    assert per_pair["n_clusters"] == 8 and per_pair["ci_low"] is not None and per_pair["ci_high"] is not None
    assert per_pair["estimate"] == pytest.approx(g["estimate"])
    (v8,) = check_changes([RULE], compare(tmp_path / "r2", _unnamed(old), _unnamed(new)), 4, "allowed")
    assert v8.status in ("exceeded", "inconclusive")


def test_two_speaker_pairs_give_a_wider_cluster_interval_withheld_below_the_minimum(tmp_path: Path) -> None:
    old, new = versions([("cmu-rms", "cmu-awb"), ("cmu-slt", "cmu-kal")], 6, shift=1.0, seed=3)
    # the twelve pairs as twelve realisations: what a per-pair interval sees
    spread = [Pair(i, 0, None, None, p.value_a, p.value_b) for i, p in enumerate(old)]
    spread_new = [Pair(i, 0, None, None, p.value_a, p.value_b) for i, p in enumerate(new)]
    pp = gap(compare(tmp_path / "pairs", spread, spread_new))
    assert pp["n_clusters"] == 12 and "sign-flip" in pp["method"]
    # clustered by speaker (allowed down to 2 clusters here): CR2 over the 2 speaker clusters, wider
    clustered = gap(compare(tmp_path / "clustered", old, new, speakers=2))
    assert (
        clustered["n_clusters"] == 2
        and "CR2" in clustered["method"]
        and "speaker cluster" in clustered["method"]
    )
    assert clustered["estimate"] == pytest.approx(pp["estimate"])
    assert clustered["ci_high"] - clustered["ci_low"] > 2 * (pp["ci_high"] - pp["ci_low"])
    # under the plan's minimum of 3 the interval is withheld and the cell says why
    default = gap(compare(tmp_path / "default", old, new))
    assert default["ci_low"] is None and default["no_interval"] == "no interval: 2 speakers"
    assert default["speakers"]["a"]["new"] == 2 and default["speakers"]["b"]["new"] == 2
    assert not default["speakers"]["enough"]


def test_three_or_more_speakers_per_side_are_judged_as_before(tmp_path: Path) -> None:
    # one pair per speaker pair: every cluster a single pair, the interval the per-pair one
    people = [(f"a{i}", f"b{i}") for i in range(8)]
    old, new = versions(people, 1, shift=1.5, seed=11)
    doc = compare(tmp_path / "named", old, new)
    g = gap(doc)
    before = gap(compare(tmp_path / "realisations", _unnamed(old), _unnamed(new)))
    assert (g["estimate"], g["ci_low"], g["ci_high"]) == (
        before["estimate"],
        before["ci_low"],
        before["ci_high"],
    )
    assert g["speakers"]["enough"] and g["speakers"]["notes"] == [] and g["no_interval"] is None
    (v,) = check_changes([RULE], doc, 4, "allowed")
    (v_before,) = check_changes([RULE], compare(tmp_path / "r2", _unnamed(old), _unnamed(new)), 4, "allowed")
    assert v.status == v_before.status == "exceeded"
    assert (v.speakers_a, v.speakers_b, v.n_speakers) == (8, 8, 8)
    assert not any("distinct voice(s) <" in r for r in v.reasons)
    # four speaker pairs x 3 replicates: clustered over the 4, a verdict all the same
    old4, new4 = versions([(f"a{i}", f"b{i}") for i in range(4)], 3, shift=2.5, seed=5)
    doc4 = compare(tmp_path / "four", old4, new4)
    g4 = gap(doc4)
    assert g4["n_clusters"] == 4 and g4["ci_low"] is not None and "CR2" in g4["method"]
    (v4,) = check_changes([RULE], doc4, 4, "allowed")
    assert v4.status == "exceeded" and (v4.speakers_a, v4.speakers_b) == (4, 4)


def test_a_person_in_both_conditions_is_one_speaker_cluster(tmp_path: Path) -> None:
    # a wording cell: three people, each voicing both conditions, 4 replicates each
    old, new = versions([(p, p) for p in ("cmu-slt", "cmu-kal", "cmu-rms")], 4, shift=2.5, seed=2)
    g = gap(compare(tmp_path / "w", old, new))
    assert g["n_clusters"] == 3 and g["speakers"]["a"]["new"] == 3 and g["speakers"]["enough"]
    assert g["ci_low"] is not None and g["ci_high"] is not None


def test_old_records_without_speakers_compare_by_realisation(tmp_path: Path) -> None:
    # an analysis written before voice_id and speaker: 3 realisations per condition x 2 replicates
    old, new = versions([(None, None)] * 3, 2, shift=2.5, seed=9)
    doc = compare(tmp_path / "old-tables", old, new, columns="old")
    g = gap(doc)
    assert g["n_pairs"] == 6 and g["n_clusters"] == 3 and g["ci_low"] is not None
    spk = g["speakers"]
    assert spk["named"] == {"old": "none", "new": "none"} and spk["a"]["new"] == 3 and spk["enough"]
    assert any("do not name the speaker" in n and "realisation" in n for n in spk["notes"])
    assert sum("do not name the speaker" in n for n in doc["notes"]) == 2  # once per run
    (v,) = check_changes([RULE], doc, 4, "allowed")
    assert v.status != "not_evaluable" and any("realisation" in r for r in v.reasons)
    # the same folders with today's columns and no speaker recorded give the same numbers
    same = gap(compare(tmp_path / "v4-unnamed", old, new))
    assert (same["ci_low"], same["ci_high"]) == (g["ci_low"], g["ci_high"])


def test_compare_cli_names_the_speakers_per_side(tmp_path: Path) -> None:
    old, new = versions([("cmu-rms", "cmu-awb")] * 6, 1, shift=1.0)
    o = write_run(tmp_path / "old", old, run_id="v1")
    n = write_run(tmp_path / "new", new, run_id="v2")
    app = typer.Typer()
    app.command()(compare_cmd)
    res = CliRunner().invoke(app, [str(o), str(n), "-o", str(tmp_path / "cmp"), "--no-subgroups"])
    assert res.exit_code == 0, res.output
    assert "speakers a 1 (old 1), b 1 (old 1), 1 cluster(s), fewer than 3: no interval" in res.output
    assert "1 of 1 compared cell(s) rest on fewer than 3 speaker clusters" in res.output
    written = json.loads((tmp_path / "cmp" / "comparison.json").read_text())
    assert written["cells"][0]["speakers"]["clusters"] == 1 and written["min_speakers"] == 3


def _unnamed(pairs: list[Pair]) -> list[Pair]:
    """The same calls from records that name no speaker: each voice index its own realisation."""
    return [Pair(p.voice_index, p.replicate, None, None, p.value_a, p.value_b) for p in pairs]
