"""The findings of a report: per cell each family's largest delta, ranked, and the agents x contrasts x
families matrix built from the same rows (`FINDINGS_RULE` is the rule as the report prints it)."""

from __future__ import annotations

import math
from collections.abc import Mapping

from voice_audit.analysis.metrics.catalogue import CATALOGUE
from voice_audit.analysis.report.model import (
    CellBlock,
    DeltaRow,
    Disposition,
    FamilyBlock,
    Finding,
    Findings,
    GateRow,
    MatrixEntry,
    MatrixRow,
)
from voice_audit.analysis.report.wording import CONVENTION_TEXT, direction, finding_sentence

MAX_FINDINGS = 8
FINDINGS_PER_CELL = 3
FAMILY_PRIORITY = ("terminal_outcome", "safety_events", "path_burden", "tool_behaviour")
"""What happened to the caller leads: the outcome, then safety, then the path it took; the other
families follow in the plan's order."""
FINDINGS_RULE = (
    "per cell (agent x scenario x contrast) each family's largest delta by its size against the plan's smallest "
    "effect of interest (|estimate| / margin), not by its precision; findings of cells whose stimuli failed the "
    "pre-screen after all others; then those whose whole interval lies beyond the margin, then those whose "
    "estimate reaches it with an interval excluding 0, then those whose estimate reaches it, then the negligible "
    "(estimate below the margin); within each, by size against the margin and then family (outcome, safety, "
    "burden, tool use, the rest); at most three per cell, eight in all"
)
PRACTICAL_ORDER: dict[str, int] = {"shown": 0, "likely": 1, "possible": 2, "unknown": 3, "negligible": 4}


def short_conditions(a: str, b: str) -> tuple[str, str]:
    """Only the axes on which the two condition keys differ ("accent=us_general" vs "accent=l2_spanish")."""
    pa, pb = a.split("|"), b.split("|")
    if len(pa) != len(pb):
        return a, b
    da = [x for x, y in zip(pa, pb, strict=True) if x != y] or pa
    db = [y for x, y in zip(pa, pb, strict=True) if x != y] or pb
    return "|".join(da), "|".join(db)


def _short(v: float | None) -> str:
    if v is None:
        return "—"
    return f"{v:+.0f}" if abs(v) >= 100 else f"{v:+.2g}"


def _precision_score(r: DeltaRow) -> float:
    """|estimate| / half-width: only where the plan declares no smallest effect (older plans)."""
    if r.estimate is None:
        return -1.0
    if r.ci_low is None or r.ci_high is None:
        return 0.0
    half = (r.ci_high - r.ci_low) / 2.0
    return abs(r.estimate) / half if half > 0 else (math.inf if r.estimate else 0.0)


def practical(r: DeltaRow) -> str:
    """Where the delta stands against the plan's smallest effect of interest (see `Finding.practical`)."""
    m = r.smallest_effect
    if r.estimate is None or m is None:
        return "unknown"
    if abs(r.estimate) < m:
        return "negligible"
    if r.ci_low is not None and r.ci_high is not None:
        if r.ci_low >= m or r.ci_high <= -m:
            return "shown"
        if r.ci_low > 0 or r.ci_high < 0:
            return "likely"
    return "possible"


def _size(r: DeltaRow) -> float:
    """The delta's size against its smallest effect of interest; what findings are ranked by."""
    if r.estimate is None:
        return -1.0
    if r.smallest_effect:
        return abs(r.estimate) / r.smallest_effect
    return _precision_score(r)


def _rank_key(r: DeltaRow) -> tuple[int, float]:
    return PRACTICAL_ORDER[practical(r)], -_size(r)


def family_rank(family: str) -> int:
    """A family's place in the findings' order (`FAMILY_PRIORITY`, the rest after it)."""
    return FAMILY_PRIORITY.index(family) if family in FAMILY_PRIORITY else len(FAMILY_PRIORITY)


def _excludes_zero(r: DeltaRow) -> bool:
    return r.ci_low is not None and r.ci_high is not None and (r.ci_low > 0 or r.ci_high < 0)


def _blocked(dispo: Disposition, label: str, family: str) -> list[str]:
    cell = next((c for c in dispo.cells if c.label == label), None)
    fam = next((f for f in cell.families if f.family == family), None) if cell else None
    return [d.split(":", 1)[0].strip() for d in fam.drivers] if fam else []


def _status(claim: str, blocked: list[str], verdicts: Mapping[str, str]) -> str:
    if claim != "diagnostics_only":
        return f"{claim.replace('_', ' ')} (every guarding gate passed)"
    if not blocked:
        return "diagnostic only"
    return "diagnostic only: " + ", ".join(f"{g} {verdicts.get(g, 'not passed')}" for g in blocked)


def _repeats(c: CellBlock) -> str:
    if c.n_voices == 1 and c.intervals_over_voices:
        return (
            f"; {c.n_pairs} pairs from one voice per condition: the interval is about these two speakers' calls, "
            "not about their condition"
        )
    if c.n_voices is not None and c.intervals_over_voices:
        # Replicates of one voice share its cluster, so repeats no longer narrow the interval: what the
        # finding rests on is the number of voices.
        return f"; {c.n_pairs} pairs from {c.n_voices} distinct voice(s), the interval over the voices"
    d = c.n_pairs_distinct
    if d is None or 2 * d > c.n_pairs:  # a few repeats happen by chance on a noisy line
        return ""
    return (
        f"; only {d} of {c.n_pairs} pairs are distinct calls (replicates repeated each other call for call), "
        "so the interval is too narrow"
    )


def _stimulus_failed(c: CellBlock) -> bool:
    return c.stimulus == "fail"


def _stimulus_note(c: CellBlock) -> str:
    if not _stimulus_failed(c):
        return ""
    return (
        f"; STIMULUS FAILED the pre-screen ({c.stimulus_reasons}): the calls were placed under the campaign's "
        "override, so this gap may measure the text-to-speech engine, not the agent"
    )


def _finding_key(t: tuple[CellBlock, FamilyBlock, DeltaRow]) -> tuple[bool, int, float, int]:
    c, fam, r = t
    tier, size = _rank_key(r)
    return (_stimulus_failed(c), tier, size, family_rank(fam.family))


def findings(blocks: list[CellBlock], dispo: Disposition, gate_rows: list[GateRow]) -> Findings:
    """The ranked findings list and the agents x contrasts x families matrix, from the same rows."""
    verdicts = {g.gate: g.verdict for g in gate_rows}
    families = list(dict.fromkeys(f.family for c in blocks for f in c.families))
    candidates: list[tuple[CellBlock, FamilyBlock, DeltaRow]] = []
    matrix: list[MatrixRow] = []
    order = sorted(blocks, key=lambda c: (c.agent, c.contrast, c.scenario_id, c.index))
    for c in order:
        entries: list[MatrixEntry] = []
        per_cell: list[tuple[CellBlock, FamilyBlock, DeltaRow]] = []
        for fam_name in families:
            fam = next((f for f in c.families if f.family == fam_name), None)
            rows = [r for r in fam.rows if r.estimate is not None] if fam else []
            if fam is None or not rows:
                entries.append(
                    MatrixEntry(
                        family=fam_name,
                        metric=None,
                        estimate=None,
                        ci_low=None,
                        ci_high=None,
                        excludes_zero=False,
                        direction="none",
                        gated=False,
                        text="—",
                    )
                )
                continue
            best = min(rows, key=_rank_key)
            entries.append(
                MatrixEntry(
                    family=fam_name,
                    metric=best.metric,
                    estimate=best.estimate,
                    ci_low=best.ci_low,
                    ci_high=best.ci_high,
                    excludes_zero=_excludes_zero(best),
                    direction=direction(best.estimate, best.higher_is_worse),
                    gated=fam.claim != "diagnostics_only",
                    text=_short(best.estimate),
                )
            )
            per_cell.append((c, fam, best))
        per_cell.sort(key=_finding_key)
        candidates += per_cell[:FINDINGS_PER_CELL]
        a, b = short_conditions(c.condition_a, c.condition_b)
        matrix.append(
            MatrixRow(
                cell_index=c.index,
                agent=c.agent,
                scenario_id=c.scenario_id,
                contrast=c.contrast,
                label=f"a {a} vs b {b}",
                entries=entries,
            )
        )
    candidates.sort(key=_finding_key)
    ranked: list[Finding] = []
    for rank, (c, fam, r) in enumerate(candidates[:MAX_FINDINGS], start=1):
        spec = CATALOGUE.get(r.metric)
        blocked = _blocked(dispo, c.label, fam.family)
        ranked.append(
            Finding(
                rank=rank,
                cell_index=c.index,
                agent=c.agent,
                scenario_id=c.scenario_id,
                contrast=c.contrast,
                metric=r.metric,
                family=fam.family,
                estimate=r.estimate,
                ci_low=r.ci_low,
                ci_high=r.ci_high,
                n_pairs=r.n_pairs,
                excludes_zero=_excludes_zero(r),
                direction=direction(r.estimate, r.higher_is_worse),
                smallest_effect=r.smallest_effect,
                effect_size=_size(r) if r.smallest_effect else None,
                practical=practical(r),
                sentence=finding_sentence(
                    r.metric,
                    spec.kind if spec else "continuous",
                    r.estimate,
                    r.ci_low,
                    r.ci_high,
                    r.mean_a,
                    r.mean_b,
                    r.n_pairs,
                    r.higher_is_worse,
                    r.alpha,
                    smallest_effect=r.smallest_effect,
                    no_interval=r.no_interval,
                ),
                claim=fam.claim,
                gated=fam.claim != "diagnostics_only",
                blocked_by=blocked,
                status=_status(fam.claim, blocked, verdicts) + _repeats(c) + _stimulus_note(c),
            )
        )
    rows_all = [(f, r) for c in blocks for f in c.families for r in f.rows if r.estimate is not None]
    tiers = [(f, practical(r)) for f, r in rows_all]
    n_matter = sum(1 for _, t in tiers if t in ("shown", "likely"))
    n_shown = sum(1 for _, t in tiers if t == "shown")
    n_gated = sum(1 for f, t in tiers if t in ("shown", "likely") and f.claim != "diagnostics_only")
    n_small = sum(1 for _, r in rows_all if _excludes_zero(r) and practical(r) == "negligible")
    small = (
        f" {n_small} more exclude 0 but are smaller than their smallest effect of interest (listed last)."
        if n_small
        else ""
    )
    headline = (
        f"{n_matter} of {len(rows_all)} paired deltas reach their smallest effect of interest with an interval "
        f"that excludes 0 ({n_shown} with the whole interval beyond it); {n_gated} of them are in a family whose "
        f"gates all passed.{small} Campaign claim: {dispo.claim.replace('_', ' ')}."
    )
    return Findings(
        headline=headline,
        convention=CONVENTION_TEXT,
        ranked=ranked,
        families=families,
        matrix=matrix,
        rule=FINDINGS_RULE,
    )
