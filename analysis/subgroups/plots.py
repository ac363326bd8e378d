"""Bar charts of item contributions; matplotlib's object API with the Agg canvas (no pyplot state)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pandas as pd
from matplotlib import rc_context
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

__all__ = ["plot_global_divergence", "plot_shapley"]


def _bars(values: pd.Series, title: str, xlabel: str, path: str | Path | None) -> Figure:
    values = values.sort_values()
    fig = Figure(figsize=(5.0, 0.45 * len(values) + 1.2))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    colours = ["#b2182b" if v < 0 else "#2166ac" for v in values.to_numpy()]
    ax.barh(range(len(values)), values.to_numpy(), color=colours, height=0.6)
    ax.set_yticks(range(len(values)), [str(i) for i in values.index])
    ax.axvline(0.0, color="black", linewidth=0.8)
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    fig.tight_layout()
    if path is not None:
        # A fixed id salt and no date: the same mining writes the same file, so a re-analysis of a
        # run changes no byte of it.
        with rc_context({"svg.hashsalt": "voice-audit-subgroups"}):
            fig.savefig(path, format="svg", metadata={"Date": None, "Creator": None})
    return fig


def plot_shapley(
    contributions: pd.Series | Mapping[str, float],
    *,
    title: str = "",
    xlabel: str = "contribution to divergence",
    path: str | Path | None = None,
) -> Figure:
    """Horizontal bars of each item's Shapley contribution; writes SVG when `path` is given."""
    return _bars(pd.Series(contributions, dtype=float), title, xlabel, path)


def plot_global_divergence(
    values: pd.Series,
    *,
    top: int | None = None,
    title: str = "",
    xlabel: str = "global item divergence",
    path: str | Path | None = None,
) -> Figure:
    """Horizontal bars of global item divergence, optionally the `top` items by magnitude only."""
    series = pd.Series(values, dtype=float)
    if top is not None:
        series = series.loc[series.abs().sort_values(ascending=False).index[:top]]
    return _bars(series, title, xlabel, path)
