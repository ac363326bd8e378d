"""Findings are ranked by their size against the plan's smallest effect of interest, not by precision:
a precise, negligible difference (the F0 0.34 Hz [0.16, 0.52] the demo once ranked fourth) does not
outrank a larger one of practical size, and an estimate without an interval says why."""

from __future__ import annotations

from voice_audit.analysis.plan import load_plan
from voice_audit.analysis.report.findings import findings
from voice_audit.analysis.report.model import CellBlock, DeltaRow, Disposition, FamilyBlock
from voice_audit.analysis.report.wording import finding_sentence

PLAN = load_plan()


def _row(metric: str, family: str, est: float, lo: float | None, hi: float | None, **kw: object) -> DeltaRow:
    return DeltaRow(
        metric=metric,
        family=family,
        estimate=est,
        ci_low=lo,
        ci_high=hi,
        alpha=0.05,
        p_value=None,
        p_adjusted=None,
        adjustment=None,
        n_pairs=20,
        n_dropped=0,
        mean_a=None,
        mean_b=None,
        method="m",
        higher_is_worse=True,
        proxy=False,
        reading="",
        notes=[],
        convention="a - b",
        smallest_effect=PLAN.smallest_effect(metric),
        **kw,
    )


def _cell(index: int, fam: str, row: DeltaRow) -> CellBlock:
    return CellBlock(
        index=index,
        agent=f"agent{index}",
        scenario_id="s",
        contrast="accent",
        condition_a="accent=us_general",
        condition_b="accent=gb_scottish",
        label=f"cell {index}",
        n_pairs=20,
        n_pairs_total=20,
        n_pairs_excluded=0,
        delta_b={},
        families=[FamilyBlock(family=fam, claim="diagnostics_only", rows=[row], models=[], forest=None)],
        notes=[],
        convention="a - b",
    )


DISPO = Disposition(
    claim="diagnostics_only",
    claim_text="",
    gates_not_passed=[],
    architecture_comparison=None,
    note="",
    cells=[],
    instances_by_claim={},
)


def test_a_precise_negligible_difference_ranks_below_a_larger_one_of_practical_size() -> None:
    # 0.34 Hz [0.16, 0.52]: |est| / half-width = 3.8, far more precise than the time to resolution
    f0 = _row("speech_f0_median_hz", "speech_behaviour", 0.34, 0.16, 0.52)
    # 30 s more to resolution [-2, 62]: imprecise, but twice the plan's 15 s
    ttr = _row("burden_time_to_resolution_s", "path_burden", 30.0, -2.0, 62.0)
    # 25 s [20, 30]: the whole interval beyond 15 s
    shown = _row("burden_time_to_resolution_s", "path_burden", 25.0, 20.0, 30.0)
    out = findings(
        [_cell(0, "speech_behaviour", f0), _cell(1, "path_burden", ttr), _cell(2, "path_burden", shown)],
        DISPO,
        [],
    )
    ranked = [(f.cell_index, f.practical) for f in out.ranked]
    assert ranked == [(2, "shown"), (1, "possible"), (0, "negligible")], ranked
    f0_finding = out.ranked[-1]
    assert f0_finding.effect_size is not None and abs(f0_finding.effect_size - 0.034) < 1e-9
    assert "× the smallest effect of interest, 10" in f0_finding.sentence
    assert "1 more exclude 0 but are smaller than their smallest effect of interest" in out.headline
    assert "smallest effect of interest" in out.rule and "not by its precision" in out.rule


def test_an_estimate_without_an_interval_says_why() -> None:
    row = _row(
        "burden_time_to_resolution_s", "path_burden", 1.91, None, None, no_interval="no interval: 1 speaker"
    )
    assert row.interval_text == "no interval: 1 speaker"
    text = finding_sentence(
        "burden_time_to_resolution_s",
        "continuous",
        1.91,
        None,
        None,
        None,
        None,
        4,
        True,
        0.05,
        no_interval="no interval: 1 speaker",
    )
    assert "no interval: 1 speaker" in text and "[" not in text
