"""Build the one report model from a run folder's analysis outputs (plus the assets it points to).

Every renderer reads the model this returns; figures and recordings are assets written next to it.
Secrets are masked in every report; `redact=True` also drops URLs, audio and real-system words.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from voice_audit.analysis.cost import cost_report
from voice_audit.analysis.metrics.catalogue import CATALOGUE
from voice_audit.analysis.report import comparison_view, forest, pairs_view, stimuli_view, subgroups_view
from voice_audit.analysis.report.calls import calls, mask_real_terminations
from voice_audit.analysis.report.findings import findings, short_conditions
from voice_audit.analysis.report.loader import RunOutputs, load
from voice_audit.analysis.report.method_text import method_refs, method_sections
from voice_audit.analysis.report.model import (
    AgentRow,
    CellBlock,
    CellClaim,
    DeltaRow,
    Disposition,
    FamilyBlock,
    FamilyClaim,
    GateRow,
    Hashes,
    ModelRow,
    Redaction,
    Report,
    SafetyRow,
)
from voice_audit.analysis.report.redact import (
    LEVEL_MASK_NOTE,
    URL_MASK,
    Scrubber,
    is_real_system,
    level_terms,
)
from voice_audit.analysis.report.wording import CONVENTION_TEXT, claim_words, reading
from voice_audit.harness.model.secrets import mask_options, secret_values, url_secrets
from voice_audit.personas import Catalogue, load_catalogue
from voice_audit.scenarios.errors import VoiceAuditError


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
        smallest_effect=_num(e.get("smallest_effect")),
        effect_size=_num(e.get("effect_size")),
        no_interval=e.get("no_interval"),
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
        failed = mask_real_terminations(failed, out.metrics)
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
            out.run_dir,
            man.campaign.prices,
            out.metrics,
            man.budget_stop.message if man.budget_stop else None,
        ),
    )
    scrub = Scrubber(
        secrets,
        drop_urls=redact,
        mask_levels=redact,
        level_terms=level_terms(man.campaign, _catalogue(out)) if redact else (),
    )
    data = method_refs(scrub.tree(report.model_dump(mode="json", by_alias=True)))
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
