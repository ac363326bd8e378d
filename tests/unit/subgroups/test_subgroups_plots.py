"""Plots return a Figure and write SVG naming every item."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from matplotlib.figure import Figure

from voice_audit.analysis.subgroups import (
    global_item_divergence,
    mine,
    plot_global_divergence,
    plot_shapley,
    shapley_values,
)


def test_shapley_and_global_plots(tmp_path: Path, episodes: pd.DataFrame, attrs: list[str]) -> None:
    result = mine(episodes, ["latency"], attrs, min_support=0.05)
    values = shapley_values(result, "accent=ng, gender=m", "latency")
    svg = tmp_path / "shapley.svg"
    fig = plot_shapley(values, title="latency", path=svg)
    assert isinstance(fig, Figure)
    text = svg.read_text()
    assert text.lstrip().startswith("<?xml") and "accent=ng" in text and "gender=m" in text
    bars = fig.axes[0].patches
    assert sorted(round(b.get_width(), 12) for b in bars) == sorted(round(v, 12) for v in values)

    glob = global_item_divergence(result, "latency")
    top = plot_global_divergence(glob, top=3, path=tmp_path / "global.svg")
    labels = [t.get_text() for t in top.axes[0].get_yticklabels()]
    assert set(labels) == set(glob.abs().sort_values(ascending=False).index[:3])
    assert (tmp_path / "global.svg").stat().st_size > 0


def test_the_same_contributions_write_the_same_bytes(tmp_path: Path) -> None:
    """A re-analysis must not change a plot: no date and no random element ids in the SVG."""
    values = pd.Series({"accent=ng": 0.2, "gender=m": -0.1, "rate=fast": 0.05})
    plot_shapley(values, title="latency", path=tmp_path / "a.svg")
    plot_shapley(values, title="latency", path=tmp_path / "b.svg")
    a, b = (tmp_path / "a.svg").read_bytes(), (tmp_path / "b.svg").read_bytes()
    assert b"<dc:date>" not in a
    assert a == b
