"""HTML, Markdown and JSON print the same numbers, and the sign convention sits next to every delta."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import pandas as pd

from voice_audit.analysis.gates import GATES
from voice_audit.analysis.report import Built
from voice_audit.analysis.report.wording import CONVENTION_TEXT, fmt, fmt_p

TAG = re.compile(r"<[^>]+>")


def _cells_of_row(page: str, row_id: str) -> list[str]:
    m = re.search(rf'<tr class="delta-row" id="{re.escape(row_id)}"[^>]*>(.*?)</tr>', page, re.DOTALL)
    assert m, row_id
    return [
        html.unescape(TAG.sub("", td)).strip()
        for td in re.findall(r"<td[^>]*>(.*?)</td>", m.group(1), re.DOTALL)
    ]


def _md_sections(md: str, report: dict[str, Any]) -> list[str]:
    starts = [
        md.index(f"### {c['agent']} · {c['scenario_id']} · contrast {c['contrast'] or '—'}")
        for c in report["cells"]
    ]
    ends = [*starts[1:], md.index("## Matched pairs")]
    return [md[s:e] for s, e in zip(starts, ends, strict=True)]


def test_three_renderings_carry_the_same_numbers(full: tuple[Built, Path]) -> None:
    built, out = full
    data = json.loads((out / "report.json").read_text())
    page = (out / "index.html").read_text()
    md = (out / "report.md").read_text()
    assert data == built.report.model_dump(mode="json", by_alias=True)
    sections = _md_sections(md, data)
    checked = 0
    for cell, section in zip(data["cells"], sections, strict=True):
        for fam in cell["families"]:
            for row in fam["rows"]:
                expect = [
                    fmt(row["estimate"]),
                    f"{fmt(row['ci_low'])} to {fmt(row['ci_high'])}"
                    if row["ci_low"] is not None and row["ci_high"] is not None
                    else row["no_interval"] or "no interval",
                    fmt_p(row["p_value"]),
                    fmt_p(row["p_adjusted"]),
                    str(row["n_pairs"]),
                ]
                cells = _cells_of_row(page, f"delta-{cell['index']}-{row['metric']}")
                assert cells[1:6] == expect, row["metric"]
                line = next(x for x in section.splitlines() if x.startswith(f"| {row['metric']}"))
                md_cells = [c.strip() for c in line.strip("|").split(" | ")]
                assert md_cells[1:6] == expect, row["metric"]
                checked += 1
    assert checked >= 20
    some = next(
        r for c in data["cells"] for f in c["families"] for r in f["rows"] if r["estimate"] not in (None, 0)
    )
    assert fmt(some["estimate"]) in page and fmt(some["estimate"]) in md


def test_planted_effect_reads_as_burden_on_b(full: tuple[Built, Path], run_dir: Path) -> None:
    """Long (b) callers get a planted repair; the calls the agent crashed stay in their pairs as
    non-service outcomes with the burden they carried, so the delta is the mean over every pair."""
    built, _ = full
    m = pd.read_parquet(run_dir / "metrics.parquet").set_index("episode_id")
    p = pd.read_parquet(run_dir / "pairs.parquet")
    p = p[(p["agent"] == "vendor_x") & p["included"]]
    diff = (
        m.loc[p["episode_id_a"], "burden_repair"].to_numpy()
        - m.loc[p["episode_id_b"], "burden_repair"].to_numpy()
    )
    crashed = m.loc[list(p["episode_id_a"]) + list(p["episode_id_b"])]["failure_kind"].eq("agent_error").sum()
    assert len(p) == 4 and crashed == 2  # the crashed calls' pairs are in the delta
    vendor = next(c for c in built.report.cells if c.agent == "vendor_x")
    assert vendor.delta_b["repair"] == diff.mean() < 0
    row = next(r for f in vendor.families for r in f.rows if r.metric == "burden_repair")
    assert row.estimate == diff.mean()
    # four pairs from two voices (2 x 2 replicates): fewer speakers than the plan's minimum, so the
    # estimate stands without an interval or a test, and the row says why rather than reading burden on b
    assert vendor.n_voices == 2  # the default plan asks for 3 (claims.min_voices_paired_disparity)
    assert row.ci_low is None and row.ci_high is None and row.p_value is None and row.p_adjusted is None
    assert row.no_interval == "no interval: 2 speakers" and row.interval_text == "no interval: 2 speakers"
    assert row.reading == "no interval"


def test_sign_convention_next_to_every_delta(full: tuple[Built, Path]) -> None:
    built, out = full
    page = (out / "index.html").read_text()
    md = (out / "report.md").read_text()
    for m in re.finditer(r'<table class="(deltas|models)">', page):
        before = page[max(0, m.start() - 600) : m.start()]
        assert 'class="convention"' in before, m.group(0)
        assert ("a − b" in before) and (CONVENTION_TEXT in before or "coefficient of condition a" in before)
    for m in re.finditer(r'<span class="delta"', page):
        assert CONVENTION_TEXT in page[max(0, m.start() - 900) : m.start()]
    assert page.count('<table class="deltas">') == sum(len(c.families) for c in built.report.cells)
    lines = md.splitlines()
    headers = [
        i
        for i, x in enumerate(lines)
        if x.startswith(("| metric | Δ (a − b)", "| metric | model | coefficient (a − b)"))
    ]
    assert len(headers) >= 12
    for i in headers:
        assert lines[i - 2].startswith("_Sign: ") and "a − b" in lines[i - 2]
    for i, x in enumerate(lines):
        if x.startswith("Path-burden vector"):
            assert CONVENTION_TEXT in lines[i - 1]
    for c in built.report.cells:
        assert c.convention == "a - b"
        assert all(r.convention == "a - b" for f in c.families for r in f.rows)


def test_front_page_has_hashes_gates_and_plain_claim(full: tuple[Built, Path]) -> None:
    built, out = full
    r = built.report
    page = (out / "index.html").read_text()
    for h in (r.hashes.campaign_sha256, r.hashes.analysis_plan_sha256, *r.hashes.scenario_hashes.values()):
        assert h and h in page
    assert [g.gate for g in r.gates] == list(GATES)
    for g in r.gates:
        assert f'data-gate="{g.gate}" data-verdict="{g.verdict}"' in page
    assert r.disposition.claim == "diagnostics_only"
    assert "Diagnostic only" in page and "support no claim" in page
    assert {a.name: a.architectures_observed for a in r.agents}["vendor_x"] == ["casc"]
    assert {a.name: a.real_system for a in r.agents} == {"reference": False, "vendor_x": True}
