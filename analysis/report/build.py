"""Build the one report model from a run folder's analysis outputs (plus the assets it points to).

Every renderer reads the model this returns; figures and recordings are assets written next to it.
Secrets are masked in every report; `redact=True` also drops URLs, audio and real-system words.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from analysis.cost import cost_report
from analysis.metrics.catalogue import CATALOGUE
from analysis.report import comparison_view, forest, pairs_view, stimuli_view, subgroups_view
from analysis.report.loader import RunOutputs, load
from analysis.report.model import (
    AgentRow,
    CallCounts,
    CellBlock,
    CellClaim,
    DeltaRow,
    Disposition,
    FailedCall,
    FamilyBlock,
    FamilyClaim,
    Finding,
    Findings,
    GateRow,
    Hashes,
    MatrixEntry,
    MatrixRow,
    MethodSection,
    ModelRow,
    Redaction,
    Report,
    SafetyRow,
)
from analysis.report.redact import LEVEL_MASK_NOTE, TEXT_MASK, URL_MASK, Scrubber, is_real_system, level_terms
from analysis.report.wording import CONVENTION_TEXT, claim_words, direction, finding_sentence, reading
from harness.model.secrets import mask_options, secret_values, url_secrets
from personas import Catalogue, load_catalogue
from scenarios.errors import VoiceAuditError

MAX_FAILED_LISTED = 500
MAX_FINDINGS = 8
FINDINGS_PER_CELL = 3
FAMILY_PRIORITY = ("terminal_outcome", "safety_events", "path_burden", "tool_behaviour")
"""What happened to the caller leads: the outcome, then safety, then the path it took; the other
families follow in the plan's order."""
METHOD_FILE = Path(__file__).parent / "templates" / "method.md"
_METHOD_HEADING = re.compile(r"^## (\d+)\. (.+)$", re.MULTILINE)
_METHOD_REF = re.compile(r"(?:METHOD\.md|docs/method/index\.md),? section (\d+)")
FINDINGS_RULE = (
    "per cell (agent x scenario x contrast) each family's largest delta (|estimate| / half the interval "
    "width); findings of cells whose stimuli failed the pre-screen after all others; those whose interval excludes 0 first, then by family (outcome, safety, burden, tool use, the "
    "rest) and size; at most three per cell, eight in all"
)


@dataclass
class Built:
    report: Report
    figures: dict[str, str] = field(default_factory=dict)  # file name -> SVG text
    copies: dict[str, Path] = field(default_factory=dict)  # report-relative path -> source file


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or v is None:
        return None
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def collect_secrets(out: RunOutputs, environ: Mapping[str, str] | None = None) -> set[str]:
    c = out.manifest.campaign
    found: set[str] = set()
    for a in c.agents:
        found |= secret_values(a.options, environ) | url_secrets(a.url)
    for b in (c.tts, c.asr):
        found |= secret_values(b.options, environ)
    for info in out.manifest.backends.values():
        found |= secret_values(info.params, environ)
    return found


def agents(out: RunOutputs, secrets: set[str], redact: bool) -> list[AgentRow]:
    m = out.metrics
    rows: list[AgentRow] = []
    for a in out.manifest.campaign.agents:
        sub = m[m["agent"] == a.name]
        url = a.url
        if url and redact:
            url = URL_MASK
        rows.append(
            AgentRow(
                name=a.name,
                adapter=a.adapter,
                architecture_declared=a.architecture,
                architectures_observed=sorted({str(x) for x in sub["architecture"].dropna()}),
                real_system=is_real_system(a.adapter),
                url=url,
                options=mask_options(a.options, secrets),
                episodes=len(sub),
            )
        )
    return rows


def gates(out: RunOutputs) -> list[GateRow]:
    counts = out.gates.get("pairs_by_verdict", {})
    return [
        GateRow(
            gate=g["gate"],
            verdict=g["verdict"],
            evidence=g.get("evidence", ""),
            thresholds=g.get("thresholds", {}),
            scope=list(g.get("scope", [])),
            pairs_by_verdict={str(k): int(v) for k, v in counts.get(g["gate"], {}).items()},
        )
        for g in out.gates.get("gates", [])
    ]


def disposition(out: RunOutputs) -> Disposition:
    d = out.disposition
    camp = d.get("campaign", {})
    cells = [
        CellClaim(
            label=c["label"],
            claim=c["claim"],
            claim_text=claim_words(c["claim"]),
            n_pairs=int(c["n_pairs"]),
            n_included=int(c["n_included"]),
            families=[
                FamilyClaim(
                    family=f,
                    claim=v["claim"],
                    pairs_supporting=int(v["pairs_supporting"]),
                    drivers=[str(x) for x in v.get("drivers", [])],
                )
                for f, v in c.get("families", {}).items()
            ],
        )
        for c in d.get("cells", [])
    ]
    return Disposition(
        claim=camp.get("claim", "diagnostics_only"),
        claim_text=claim_words(camp.get("claim", "diagnostics_only")),
        gates_not_passed=list(camp.get("gates_not_passed", [])),
        architecture_comparison=camp.get("architecture_comparison"),
        note=camp.get("note", ""),
        cells=cells,
        instances_by_claim={str(k): int(v) for k, v in d.get("instances_by_claim", {}).items()},
    )


def delta_row(e: Mapping[str, Any]) -> DeltaRow:
    est, lo, hi = _num(e.get("estimate")), _num(e.get("ci_low")), _num(e.get("ci_high"))
    return DeltaRow(
        metric=e["metric"],
        family=e["family"],
        estimate=est,
        ci_low=lo,
        ci_high=hi,
        alpha=float(e.get("alpha", 0.05)),
        p_value=_num(e.get("p_value")),
        p_adjusted=_num(e.get("p_adjusted")),
        adjustment=e.get("adjustment"),
        n_pairs=int(e.get("n_pairs", 0)),
        n_dropped=int(e.get("n_dropped", 0)),
        mean_a=_num(e.get("mean_a")),
        mean_b=_num(e.get("mean_b")),
        method=str(e.get("method", "")),
        higher_is_worse=e.get("higher_is_worse"),
        proxy=bool(e.get("proxy", False)),
        reading=reading(est, lo, hi, e.get("higher_is_worse")),
        notes=[str(n) for n in e.get("notes", [])],
        convention=str(e.get("convention", "a - b")),
    )


def model_row(m: Mapping[str, Any]) -> ModelRow:
    return ModelRow(
        metric=str(m.get("metric", "")),
        method=str(m.get("method", "")),
        scale=str(m.get("scale", "")),
        coefficient=_num(m.get("coefficient")),
        ci_low=_num(m.get("ci_low")),
        ci_high=_num(m.get("ci_high")),
        p_value=_num(m.get("p_value")),
        converged=bool(m.get("converged", False)),
        n_pairs=int(m.get("n_pairs", 0)),
        components=[str(x) for x in m.get("components", [])],
        fallback_reason=m.get("fallback_reason"),
        error=m.get("error"),
        convention=str(m.get("convention", "a - b")),
    )


def cells(out: RunOutputs, dispo: Disposition, figures: dict[str, str], plots: bool) -> list[CellBlock]:
    claims = {c.label: {f.family: f.claim for f in c.families} for c in dispo.cells}
    stimulus = stimuli_view.cell_verdicts(out.gates.get("gates", []))
    blocks: list[CellBlock] = []
    for i, c in enumerate(out.deltas.get("cells", [])):
        rows = [delta_row(e) for e in c.get("estimates", [])]
        models = [model_row(m) for m in c.get("models", [])]
        fams: list[FamilyBlock] = []
        for fam in dict.fromkeys(r.family for r in rows):
            fam_rows = [r for r in rows if r.family == fam]
            fams.append(
                FamilyBlock(
                    family=fam,
                    claim=claims.get(c["label"], {}).get(fam, "diagnostics_only"),
                    rows=fam_rows,
                    models=[m for m in models if m.metric in {r.metric for r in fam_rows}],
                    forest=None,
                )
            )
        cell = c["cell"]
        stim = stimulus.get(
            (
                str(cell.get("scenario_id", "")),
                str(cell.get("condition_key_a", "")),
                str(cell.get("condition_key_b", "")),
            )
        )
        blocks.append(
            CellBlock(
                index=i,
                agent=cell.get("agent", ""),
                scenario_id=cell.get("scenario_id", ""),
                contrast=cell.get("contrast", ""),
                condition_a=cell.get("condition_key_a", ""),
                condition_b=cell.get("condition_key_b", ""),
                label=c["label"],
                n_pairs=int(c.get("n_pairs", 0)),
                n_pairs_total=int(c.get("n_pairs_total", 0)),
                n_pairs_excluded=int(c.get("n_pairs_excluded", 0)),
                n_pairs_distinct=None if c.get("n_pairs_distinct") is None else int(c["n_pairs_distinct"]),
                n_voices=None if c.get("n_voices") is None else int(c["n_voices"]),
                intervals_over_voices=any(e.get("n_clusters") is not None for e in c.get("estimates", [])),
                delta_b={k: _num(v) for k, v in c.get("delta_B", {}).get("components", {}).items()},
                families=fams,
                notes=[str(n) for n in c.get("notes", [])],
                convention=str(c.get("convention", "a - b")),
                stimulus=stim[0] if stim else None,
                stimulus_reasons=stim[1] if stim else "",
            )
        )
    return blocks


def short_conditions(a: str, b: str) -> tuple[str, str]:
    """Only the axes on which the two condition keys differ ("accent=us_general" vs "accent=l2_spanish")."""
    pa, pb = a.split("|"), b.split("|")
    if len(pa) != len(pb):
        return a, b
    da = [x for x, y in zip(pa, pb, strict=True) if x != y] or pa
    db = [y for x, y in zip(pa, pb, strict=True) if x != y] or pb
    return "|".join(da), "|".join(db)


def cell_title(c: CellBlock) -> str:
    a, b = short_conditions(c.condition_a, c.condition_b)
    return f"{c.agent} · {c.scenario_id} · {a} vs {b}"


def family_forests(blocks: list[CellBlock], figures: dict[str, str]) -> list[CellBlock]:
    """One forest plot per family over every cell; each family block names its family's figure."""
    names: dict[str, str] = {}
    for fam in dict.fromkeys(f.family for c in blocks for f in c.families):
        per_cell = [(cell_title(c), f.rows) for c in blocks for f in c.families if f.family == fam]
        alpha = next((r.alpha for _, rows in per_cell for r in rows), 0.05)
        svg = forest.family_forest_svg(fam, per_cell, alpha)
        if svg is not None:
            names[fam] = f"forest-{fam}.svg"
            figures[names[fam]] = svg
    return [
        c.model_copy(
            update={"families": [f.model_copy(update={"forest": names.get(f.family)}) for f in c.families]}
        )
        for c in blocks
    ]


def _short(v: float | None) -> str:
    if v is None:
        return "—"
    return f"{v:+.0f}" if abs(v) >= 100 else f"{v:+.2g}"


def _score(r: DeltaRow) -> float:
    if r.estimate is None:
        return -1.0
    if r.ci_low is None or r.ci_high is None:
        return 0.0
    half = (r.ci_high - r.ci_low) / 2.0
    return abs(r.estimate) / half if half > 0 else (math.inf if r.estimate else 0.0)


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


def _finding_key(t: tuple[CellBlock, FamilyBlock, DeltaRow]) -> tuple[bool, bool, int, float]:
    c, fam, r = t
    return (_stimulus_failed(c), not _excludes_zero(r), family_rank(fam.family), -_score(r))


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
            best = max(rows, key=lambda r: (_excludes_zero(r), _score(r)))
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
                ),
                claim=fam.claim,
                gated=fam.claim != "diagnostics_only",
                blocked_by=blocked,
                status=_status(fam.claim, blocked, verdicts) + _repeats(c) + _stimulus_note(c),
            )
        )
    n_all = sum(1 for c in blocks for f in c.families for r in f.rows if r.estimate is not None)
    n_excl = sum(1 for c in blocks for f in c.families for r in f.rows if _excludes_zero(r))
    n_gated = sum(
        1
        for c in blocks
        for f in c.families
        for r in f.rows
        if _excludes_zero(r) and f.claim != "diagnostics_only"
    )
    headline = (
        f"{n_excl} of {n_all} paired deltas have an interval that excludes 0; {n_gated} of them are in a family "
        f"whose gates all passed. Campaign claim: {dispo.claim.replace('_', ' ')}."
    )
    return Findings(
        headline=headline,
        convention=CONVENTION_TEXT,
        ranked=ranked,
        families=families,
        matrix=matrix,
        rule=FINDINGS_RULE,
    )


def safety(metrics: pd.DataFrame, in_plan: set[str]) -> list[SafetyRow]:
    """Every safety metric of the catalogue, per agent and side: flagged calls of calls measured."""
    names = [n for n, spec in CATALOGUE.items() if spec.family == "safety_events" and spec.kind == "binary"]
    rows: list[SafetyRow] = []
    for name in names:
        col = metrics[name] if name in metrics.columns else pd.Series(math.nan, index=metrics.index)
        for agent, sub in metrics.groupby("agent", sort=True):
            side = sub["side"].astype(str)
            va, vb = col.loc[sub.index][side == "a"], col.loc[sub.index][side == "b"]
            rows.append(
                SafetyRow(
                    metric=name,
                    description=CATALOGUE[name].description,
                    in_plan=name in in_plan,
                    agent=str(agent),
                    flagged_a=int((va == 1.0).sum()),
                    calls_a=int(va.notna().sum()),
                    flagged_b=int((vb == 1.0).sum()),
                    calls_b=int(vb.notna().sum()),
                )
            )
    return rows


def method_sections() -> list[MethodSection]:
    """The method text shipped with the package (templates/method.md), by numbered section."""
    text = METHOD_FILE.read_text(encoding="utf-8")
    heads = list(_METHOD_HEADING.finditer(text))
    return [
        MethodSection(
            number=int(h.group(1)),
            title=h.group(2).strip(),
            text=text[h.end() : heads[i + 1].start() if i + 1 < len(heads) else len(text)].strip(),
        )
        for i, h in enumerate(heads)
    ]


def _method_refs(node: Any) -> Any:
    """References to the method point at the method section this report carries."""
    if isinstance(node, str):
        return _METHOD_REF.sub(r"method section \1 (Method, in this report)", node)
    if isinstance(node, Mapping):
        return {k: _method_refs(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_method_refs(v) for v in node]
    return node


def not_served(metrics: pd.DataFrame) -> pd.Series:
    """The non-service flag of each call the agent did not serve (None otherwise)."""
    flags = (
        metrics["outcome_flags"]
        if "outcome_flags" in metrics.columns
        else pd.Series(None, index=metrics.index)
    )
    return flags.map(pairs_view.not_served_flag)


def failed_mask(metrics: pd.DataFrame) -> pd.Series:
    """Calls that did not end in service: harness-side failures and cancellations (missing data), and
    completed calls the agent did not serve (an outcome, never a pass)."""
    status = metrics["status"].astype(str)
    return (status != "completed") | not_served(metrics).notna() | metrics["failure_kind"].notna()


def calls(metrics: pd.DataFrame) -> tuple[list[CallCounts], list[FailedCall]]:
    """Per agent; a call passes only when the agent served it to an acceptable outcome."""
    counts: list[CallCounts] = []
    bad_all = failed_mask(metrics)
    flag_all = not_served(metrics)
    for agent, sub in metrics.groupby("agent", sort=True):
        status = sub["status"].astype(str)
        bad = bad_all.loc[sub.index]
        flag = flag_all.loc[sub.index]
        served_not = (status == "completed") & bad
        passed = ~bad & (sub["outcome_acceptable"] == 1.0)
        kinds = sub.loc[bad, "failure_kind"].dropna().astype(str).value_counts()
        counts.append(
            CallCounts(
                agent=str(agent),
                records=len(sub),
                completed=int((status == "completed").sum()),
                not_served=int(served_not.sum()),
                failed=int((status == "failed").sum()),
                cancelled=int((status == "cancelled").sum()),
                failure_kinds={str(k): int(v) for k, v in kinds.items()},
                not_served_reasons={
                    str(k): int(v)
                    for k, v in flag[served_not].fillna("agent_error_event").value_counts().items()
                },
                acceptable=int(passed.sum()),
                acceptable_rate=float(passed.sum()) / len(sub) if len(sub) else None,
            )
        )
    bad = metrics[bad_all].sort_values(["agent", "pair_id", "side"])
    flags = flag_all.loc[bad.index]
    failed = [
        FailedCall(
            episode_id=str(r.episode_id),
            pair_id=str(r.pair_id),
            agent=str(r.agent),
            side=str(r.side),
            status="not served" if str(r.status) == "completed" else str(r.status),
            failure_kind=r.failure_kind
            if isinstance(r.failure_kind, str)
            else (f if isinstance(f, str) else None),
            termination=str(r.termination or ""),
        )
        for r, f in zip(bad.head(MAX_FAILED_LISTED).itertuples(), flags.head(MAX_FAILED_LISTED), strict=True)
    ]
    return counts, failed


def _mask_real_terminations(failed: list[FailedCall], metrics: pd.DataFrame) -> list[FailedCall]:
    real = {
        str(e)
        for e, a in zip(metrics["episode_id"], metrics["adapter"], strict=True)
        if is_real_system(str(a))
    }
    return [f.model_copy(update={"termination": TEXT_MASK}) if f.episode_id in real else f for f in failed]


def _catalogue(out: RunOutputs) -> Catalogue | None:
    """The campaign's persona catalogue (for level labels), or the bundled one; None if unreadable."""
    c = out.manifest.campaign
    try:
        if c.catalogue:
            return load_catalogue(Path(out.manifest.campaign_file).parent / c.catalogue)
        return load_catalogue()
    except (OSError, VoiceAuditError):
        return None


def build_report(
    run_dir: str | Path,
    *,
    redact: bool = False,
    max_pairs: int = 40,
    pairs: Sequence[str] = (),
    plots: bool = True,
    environ: Mapping[str, str] | None = None,
) -> Built:
    out = load(run_dir)
    man = out.manifest
    secrets = collect_secrets(out, environ)
    figures: dict[str, str] = {}
    dispo = disposition(out)
    counts, failed = calls(out.metrics)
    if redact:
        failed = _mask_real_terminations(failed, out.metrics)
    shown = pairs_view.build(out, max_pairs, pairs, redact)
    sub, sub_figs = subgroups_view.load(out.run_dir)
    compared, compare_warnings = comparison_view.load(out.run_dir)
    dropped = [
        "credential values (options named *key*/*token*/*secret*/*password*/*auth*, and env vars they name)"
    ]
    if redact:
        dropped += [
            "raw audio (no recordings copied, no players)",
            "endpoint URLs",
            "words of real systems (agent transcripts, error messages, failure messages of non-bundled adapters)",
            LEVEL_MASK_NOTE,
        ]
    summary = out.summary
    blocks = (
        family_forests(cells(out, dispo, figures, plots), figures)
        if plots
        else cells(out, dispo, figures, plots)
    )
    gate_rows = gates(out)
    stim, stim_copies = stimuli_view.build(out.run_dir, out.gates.get("gates", []), redact)
    in_plan = {r.metric for c in blocks for f in c.families for r in f.rows}
    report = Report(
        run_id=man.run_id,
        campaign=man.campaign.name,
        description=man.campaign.description,
        created_at=man.created_at.isoformat(),
        generated_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        convention="a - b",
        convention_text=CONVENTION_TEXT,
        hashes=Hashes(
            campaign_sha256=man.campaign_sha256,
            analysis_plan_sha256=out.deltas.get("plan_sha256"),
            run_plan_sha256=man.plan_sha256,
            catalogue_sha256=man.catalogue_sha256,
            scenario_hashes=dict(man.scenario_hashes),
            facts_hashes=dict(man.facts_hashes),
            git_sha=man.git_sha,
        ),
        agents=agents(out, secrets, redact),
        episodes={
            "planned": man.n_planned_episodes,
            **summary.get("episodes", {}),
            "pairs": summary.get("pairs", {}),
            "pairs_excluded_from_deltas": summary.get("dropped", {}).get("pairs_excluded_from_deltas", {}),
            "problems_by_category": summary.get("dropped", {}).get("problems_by_category", {}),
            "metrics_all_missing": summary.get("metrics_all_missing", []),
        },
        warnings=[*out.warnings, *compare_warnings],
        gates=gate_rows,
        disposition=dispo,
        cells=blocks,
        calls=counts,
        failed_calls=failed,
        pairs_total=len(out.pairs),
        pairs_shown=shown.views,
        pair_selection=pairs_view.SELECTION_RULE,
        subgroups=sub,
        comparison=compared,
        redaction=Redaction(redacted=redact, dropped=dropped, secrets_masked=0),
        findings=findings(blocks, dispo, gate_rows),
        safety=safety(out.metrics, in_plan),
        method=method_sections(),
        stimuli=stim,
        cost=cost_report(
            out.run_dir, man.campaign.prices, out.metrics, man.budget_stop.message if man.budget_stop else None
        ),
    )
    scrub = Scrubber(
        secrets,
        drop_urls=redact,
        mask_levels=redact,
        level_terms=level_terms(man.campaign, _catalogue(out)) if redact else (),
    )
    data = _method_refs(scrub.tree(report.model_dump(mode="json", by_alias=True)))
    figures = {k: scrub.text(v) for k, v in figures.items()}
    data["redaction"]["secrets_masked"] = scrub.hits
    built = Built(
        report=Report.model_validate(data),
        figures=figures,
        copies={**dict(shown.audio), **({} if redact else stim_copies)},
    )
    for name, src in sub_figs.items():
        try:
            figures[name] = scrub.text(src.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError):
            continue
    return built
