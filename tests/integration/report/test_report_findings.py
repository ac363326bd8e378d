"""The report leads with the answer: ranked findings and a matrix built from the same delta rows,
carried identically by HTML, Markdown and JSON; every safety metric shown; method references resolve."""

from __future__ import annotations

import html
import json
from pathlib import Path

from voice_audit.analysis.metrics.catalogue import CATALOGUE
from voice_audit.analysis.report import Built
from voice_audit.analysis.report.findings import PRACTICAL_ORDER
from voice_audit.analysis.report.wording import direction, finding_sentence


def _rows(built: Built) -> dict[tuple[int, str], object]:
    return {(c.index, r.metric): r for c in built.report.cells for f in c.families for r in f.rows}


def test_findings_are_the_delta_rows_ranked_with_their_gates(full: tuple[Built, Path]) -> None:
    built, _ = full
    r = built.report
    ranked = r.findings.ranked
    assert ranked and [f.rank for f in ranked] == list(range(1, len(ranked) + 1))
    rows = _rows(built)
    for f in ranked:
        row = rows[(f.cell_index, f.metric)]
        assert (f.estimate, f.ci_low, f.ci_high, f.n_pairs) == (
            row.estimate,
            row.ci_low,
            row.ci_high,
            row.n_pairs,
        )  # type: ignore[attr-defined]
        assert "a − b =" in f.sentence and f.direction == direction(f.estimate, row.higher_is_worse)  # type: ignore[attr-defined]
        assert f.gated == (f.claim != "diagnostics_only")
        assert set(f.blocked_by) <= {g.gate for g in r.gates if g.verdict != "pass"}
        if not f.gated:
            assert f.status.startswith("diagnostic only") and all(g in f.status for g in f.blocked_by)
    # ranked by size against the plan's smallest effect of interest, not by precision: what is shown to
    # matter first, the negligible last; within a tier the larger effect first
    keys = [
        ("STIMULUS FAILED" in f.status, PRACTICAL_ORDER[f.practical], -(f.effect_size or 0.0)) for f in ranked
    ]
    assert keys == sorted(keys)
    for f in ranked:
        assert f.smallest_effect is not None and f.effect_size is not None
        assert abs(f.effect_size - abs(f.estimate or 0.0) / f.smallest_effect) < 1e-9
    per_cell = [(f.cell_index, f.family) for f in ranked]
    assert len(per_cell) == len(set(per_cell)), "one finding per family and cell"
    assert len(r.findings.matrix) == len(r.cells)
    for row in r.findings.matrix:
        assert [e.family for e in row.entries] == r.findings.families
        for e in row.entries:
            if e.metric is not None:
                cell_row = rows[(row.cell_index, e.metric)]
                assert e.estimate == cell_row.estimate  # type: ignore[attr-defined]


def test_the_three_formats_carry_the_same_findings(full: tuple[Built, Path]) -> None:
    built, out = full
    page = (out / "index.html").read_text()
    md = (out / "report.md").read_text()
    data = json.loads((out / "report.json").read_text())
    assert data["findings"] == built.report.findings.model_dump(mode="json")
    findings_html = page[page.index('<section id="findings"') : page.index('id="gates"')]
    assert md.index("## Findings") < md.index("## Validation gates")
    for f in built.report.findings.ranked:
        assert html.escape(f.sentence, quote=False) in findings_html
        assert f.sentence.replace("|", "\\|") in md
    assert built.report.findings.headline in md and html.escape(built.report.findings.headline) in page
    assert findings_html.count('<tr><th scope="row">') == len(built.report.findings.matrix)


def test_every_safety_metric_in_every_format(full: tuple[Built, Path]) -> None:
    built, out = full
    names = {n for n, s in CATALOGUE.items() if s.family == "safety_events" and s.kind == "binary"}
    assert "safety_unbacked_remedy_claim" in names
    assert {s.metric for s in built.report.safety} == names
    page = (out / "index.html").read_text()
    md = (out / "report.md").read_text()
    data = json.loads((out / "report.json").read_text())
    for name in names:
        assert f'<tr data-metric="{name}">' in page and f"| {name} |" in md
        assert any(s["metric"] == name for s in data["safety"])
    calls = {c.agent: c.records for c in built.report.calls}
    for s in built.report.safety:
        assert s.calls_a + s.calls_b <= calls[s.agent] and s.flagged_a <= s.calls_a


def test_method_references_point_at_the_shipped_method(full: tuple[Built, Path]) -> None:
    built, out = full
    numbers = [m.number for m in built.report.method]
    assert numbers == list(range(1, 9)) and all(m.text for m in built.report.method)
    for f in ("index.html", "report.md", "report.json"):
        text = (out / f).read_text()
        assert "METHOD.md" not in text
    page = (out / "index.html").read_text()
    assert "method section 6 (Method, in this report)" in built.report.disposition.note
    assert 'id="method-6"' in page


def test_sentences_say_who_carried_the_burden() -> None:
    s = finding_sentence("burden_repair", "continuous", -0.9, -1.4, -0.4, 0.5, 1.4, 12, True, 0.05)
    assert s.startswith("condition b carried 0.9 more repair turns than condition a")
    assert "a − b = -0.9, 95% CI -1.4 to -0.4; 12 pairs" in s and "includes 0" not in s
    s = finding_sentence("outcome_escalated", "binary", -0.5, -0.8, 0.1, 0.5, 1.0, 12, True, 0.05)
    assert "condition a 50% vs condition b 100% of calls; condition b fared worse" in s and s.endswith(
        "includes 0"
    )
    assert direction(-0.9, True) == "b_worse" and direction(0.3, False) == "b_worse"
    assert direction(0.3, None) == "higher_a" and direction(0.0, True) == "none"


def test_redacted_outputs_carry_no_condition_label(redacted: tuple[Built, Path]) -> None:
    built, out = redacted
    levels = {"us_general", "l2_spanish", "female_adult", "accent=us", "accent=l2"}
    for f in out.rglob("*"):
        if f.is_file() and f.suffix in (".html", ".md", ".json", ".svg"):
            text = f.read_text()
            assert not [lv for lv in levels if lv in text], f
    assert any("condition labels" in d for d in built.report.redaction.dropped)
    assert built.report.findings.ranked  # the findings survive, named by side a and b
