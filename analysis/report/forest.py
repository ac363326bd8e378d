"""Forest plots of paired a - b deltas as standalone SVG (matplotlib, Agg, text kept as text).

One small panel per metric with its own x range and a zero line, because a family mixes scales
(counts, seconds, proportions). Text stays text (svg.fonttype none) so the redaction scan can
read every label, and ids and dates are fixed so the same numbers give the same bytes.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from analysis.report.model import DeltaRow

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
