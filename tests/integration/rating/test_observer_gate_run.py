"""The observer-validity gate end to end: a real run, simulated blind labels of known agreement
written through the rating app's store, then the analysis pipeline's verdicts and claims."""

from __future__ import annotations

import datetime as dt
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.pilot_cache import home_with_session_cache
from voice_audit.analysis.pipeline import analyze
from voice_audit.analysis.rating.observer import ACTS
from voice_audit.analysis.rating.store import LabelRecord, LabelStore
from voice_audit.analysis.rating.tasks import build_task
from voice_audit.harness.runlog import RunReader

CAMPAIGN = """\
name: observer_gate_run
seed: 5
scenarios: [refund_duplicate_charge]
agents: [{name: scripted_ref, adapter: "voice_audit.agents.fakes.scripted:scripted"}]
pairs:
  - contrast: [accent]
    base: {voice_profile: female_adult, affect: calm, disfluency: none, wording: plain}
    a: {accent: us_general}
    b: {accent: l2_spanish}
voices: 3
replicates: 3
concurrency: 4
tts: {name: espeak}
"""


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    parent = tmp_path_factory.mktemp("observer-run")
    # a private HOME (never the user's cache) but for the session's audio cache
    home = home_with_session_cache(parent / "home", tmp_path_factory)
    (parent / "c.yaml").write_text(CAMPAIGN)
    exe = Path(sys.executable).with_name("voice-audit")
    subprocess.run(
        [str(exe), "run", str(parent / "c.yaml"), "--out", str(parent), "--run-id", "obs", "--quiet", "--no-stimulus-check"],
        check=True, capture_output=True, timeout=600, env={**os.environ, "HOME": str(home)},
    )  # fmt: skip
    return parent / "obs"


@pytest.fixture
def run(pristine: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(pristine, tmp_path / "run"))


def _caller_readings(run: Path) -> dict[tuple[str, int], tuple[str, tuple[str, ...]]]:
    reader = RunReader(run)
    out: dict[tuple[str, int], tuple[str, tuple[str, ...]]] = {}
    for rec in reader.records():
        eid = rec.header.episode_id
        for ev in reader.events(eid):
            if ev.type == "caller_decision":
                out[(eid, ev.turn)] = (ev.classification, tuple((ev.challenge_fact or "").split(",")))
    return out


def _label(run: Path, misread: set[str]) -> int:
    """Three raters label every sampled turn as the caller read it (act and facts), except one turn in each call of
    `misread` sides, where they all hear something else. Returns the number of rated turns."""
    reader = RunReader(run)
    side = {r.header.episode_id: r.header.side for r in reader.records()}
    readings = _caller_readings(run)
    spec = build_task(run, "observer")
    store = LabelStore(run)
    first_of_call: set[str] = set()
    for pos, item in enumerate(sorted(spec.items, key=lambda i: i.key)):
        assert item.turn is not None
        caller, facts = readings[(item.episode_id, item.turn)]
        act = caller if caller in ACTS else "other"
        if side[item.episode_id] in misread and item.episode_id not in first_of_call:
            first_of_call.add(item.episode_id)
            act = "hold" if act != "hold" else "offer"
        for rater in ("r1", "r2", "r3"):
            store.append(
                LabelRecord(
                    task="observer", rater=rater, item=item.key, episode_id=item.episode_id, audio="agent",
                    options=item.options, turn=item.turn, act=act, facts=facts if act == "challenge" else (), position=pos, plays=1, response_ms=900,
                    session="sim", labelled_at=dt.datetime.now(dt.UTC),
                )
            )  # fmt: skip
    return len(spec.items)


def _gate(run: Path) -> tuple[dict[str, object], dict[str, object]]:
    result = analyze(run, audio=False, write=False)
    gate = result.gates.result("observer_validity")
    (cell,) = result.disposition["cells"]
    return gate.model_dump(), cell["families"]


def test_without_raters_the_gate_is_not_evaluable_and_burden_is_diagnostic(run: Path) -> None:
    gate, families = _gate(run)
    assert gate["verdict"] == "not-evaluable"
    assert gate["scope"] == ("path_burden", "safety_events")
    for fam in ("path_burden", "safety_events"):
        assert families[fam]["claim"] == "diagnostics_only"  # type: ignore[index]
        assert any("observer_validity" in d for d in families[fam]["drivers"])  # type: ignore[index]
    assert gate["diagnostics"]["reader_agreement"]["turns"] == 0  # type: ignore[index]


def test_raters_agreeing_with_the_caller_pass(run: Path) -> None:
    n = _label(run, misread=set())
    assert n >= 30
    gate, families = _gate(run)
    assert gate["verdict"] == "pass", gate["evidence"]
    assert gate["details"]["kappa"] == pytest.approx(1.0)  # type: ignore[index]
    assert gate["details"]["turns_compared"] == n  # type: ignore[index]
    assert not any("observer_validity" in d for d in families["path_burden"]["drivers"])  # type: ignore[index]


def test_balanced_observer_errors_pass_but_errors_on_b_only_fail_the_cell(run: Path) -> None:
    n = _label(run, misread={"b"})
    gate, families = _gate(run)
    details = gate["details"]
    assert details["overall_verdict"] == "pass" and details["kappa"] >= 0.6  # type: ignore[index]
    (cell,) = details["cells"].values()  # type: ignore[union-attr]
    assert cell["pairs"] == 9 and cell["misread_a"] == 0 and cell["misread_b"] > 0
    assert cell["p"] == pytest.approx(2 / 2**9) and cell["verdict"] == "fail"
    assert gate["verdict"] == "fail" and "differential observer error" in str(gate["evidence"])
    assert families["path_burden"]["claim"] == "diagnostics_only"  # type: ignore[index]
    assert details["misread_rate"] == pytest.approx(9 / n)  # type: ignore[index]


def test_the_same_error_rate_on_both_sides_passes(run: Path) -> None:
    _label(run, misread={"a", "b"})
    gate, _ = _gate(run)
    (cell,) = gate["details"]["cells"].values()  # type: ignore[index]
    assert cell["misread_a"] > 0 and cell["misread_b"] > 0
    assert cell["verdict"] == "pass"
    assert gate["details"]["kappa"] >= 0.6  # type: ignore[index]
    assert gate["verdict"] == "pass", gate["evidence"]
