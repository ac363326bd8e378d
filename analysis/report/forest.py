"""Forest plots of paired a - b deltas as standalone SVG (matplotlib, Agg, text kept as text).

`family_forest_svg`: one figure per metric family, one row per cell (agent x scenario x contrast)
and one panel per metric whose x axis is shared by every cell, so cells compare at a glance while a
family's mixed scales (counts, seconds, proportions) keep their own axes. Text stays text
(svg.fonttype none) so the redaction scan can read every label, and ids and dates are fixed so the
same numbers give the same bytes.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from voice_audit.analysis.report.model import DeltaRow

_RC: Any = {
    "svg.fonttype": "none",
    "svg.hashsalt": "voice-audit-report",
    "font.size": 8,
    "axes.spines.top": False,
    "axes.spines.right": False,
}


def forest_svg(rows: Sequence[DeltaRow], title: str) -> str | None:
    """SVG text, or None when no row has an estimate."""
    shown = [r for r in rows if r.estimate is not None]
    if not shown:
        return None
    with plt.rc_context(_RC):
        fig, axes = plt.subplots(len(shown), 1, figsize=(6.0, 0.55 * len(shown) + 0.7), squeeze=False)
        for ax, r in zip(axes[:, 0], shown, strict=True):
            assert r.estimate is not None
            lo = r.ci_low if r.ci_low is not None else r.estimate
            hi = r.ci_high if r.ci_high is not None else r.estimate
            span = max(abs(lo), abs(hi), abs(r.estimate), 1e-9) * 1.15
            ax.axvline(0.0, color="#888", linewidth=0.8)
            ax.hlines(0, lo, hi, color="#1f4e79", linewidth=2)
            ax.plot([r.estimate], [0], "o", color="#1f4e79", markersize=5)
            ax.set_xlim(-span, span)
            ax.set_yticks([0], [r.metric])
            ax.tick_params(axis="x", labelsize=7)
            ax.spines["left"].set_visible(False)
        fig.suptitle(f"{title}  (a − b, {round(100 * (1 - shown[0].alpha))}% CI)", fontsize=8)
        fig.tight_layout()
        buf = io.StringIO()
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
        plt.close(fig)
    return buf.getvalue()


def family_forest_svg(
    family: str, cells: Sequence[tuple[str, Sequence[DeltaRow]]], alpha: float = 0.05
) -> str | None:
    """One figure for `family`: rows are the (label, rows) cells, columns the family's metrics."""
    metrics = list(dict.fromkeys(r.metric for _, rows in cells for r in rows if r.estimate is not None))
    if not metrics:
        return None
    n_rows = len(cells)
    with plt.rc_context(_RC):
        fig, axes = plt.subplots(
            1,
            len(metrics),
            figsize=(1.2 + 1.9 * len(metrics), 0.6 + 0.24 * n_rows),
            squeeze=False,
            sharey=True,
        )
        ys = list(range(n_rows))[::-1]
        for ax, metric in zip(axes[0], metrics, strict=True):
            spans = [1e-9]
            for y, (_, rows) in zip(ys, cells, strict=True):
                r = next((x for x in rows if x.metric == metric), None)
                if r is None or r.estimate is None:
                    continue
                lo = r.ci_low if r.ci_low is not None else r.estimate
                hi = r.ci_high if r.ci_high is not None else r.estimate
                spans.append(max(abs(lo), abs(hi), abs(r.estimate)))
                strong = lo > 0 or hi < 0
                colour = "#1f4e79" if strong else "#8a9bb0"
                ax.hlines(y, lo, hi, color=colour, linewidth=1.6)
                ax.plot([r.estimate], [y], "o", color=colour, markersize=3.5)
            span = max(spans) * 1.15
            ax.axvline(0.0, color="#888", linewidth=0.8)
            ax.set_xlim(-span, span)
            ax.set_title(metric, fontsize=7)
            ax.tick_params(axis="x", labelsize=6)
            ax.tick_params(axis="y", length=0)
            ax.spines["left"].set_visible(False)
        axes[0][0].set_yticks(ys, [label for label, _ in cells], fontsize=6)
        axes[0][0].set_ylim(-0.7, n_rows - 0.3)
        fig.suptitle(
            f"{family}: a − b per cell, {round(100 * (1 - alpha))}% CI, shared axis per metric", fontsize=8
        )
        fig.tight_layout()
        buf = io.StringIO()
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None}, bbox_inches="tight")
        plt.close(fig)
    return buf.getvalue()
