"""Are the outputs of `analyze` with audio the same before and after a change to the audio pass?

    .venv/bin/python benchmarks/audio_equivalence.py dump RUN OUT    # analyze a copy of RUN, keep its outputs in OUT
    .venv/bin/python benchmarks/audio_equivalence.py compare OLD NEW # compare two dumps; exit 1 on a difference

`dump` copies the run folder (recordings and all) without its outputs and audio cache, runs
`analyze(audio=True)` cold, and keeps metrics.parquet, pairs.parquet, gates.json, deltas.json and
disposition.json. Run it once with the old code on PYTHONPATH and once with the new.

`compare` holds them to these tolerances (anything else must be equal):
* every gate verdict, per-pair gate column, claim and disposition: identical;
* numeric metric and pair columns: |a - b| <= ABS_TOL + REL_TOL * |a| (NaN equal to NaN);
* gate evidence numbers (e.g. a cell's minimum Praat-vs-PYIN r): the same tolerance, after the
  text is split into numbers and words (the words must match);
* delta estimates and intervals: the same tolerance.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ABS_TOL = 1e-9
REL_TOL = 1e-9
OUTPUTS = ("metrics.parquet", "pairs.parquet", "gates.json", "deltas.json", "disposition.json")
_IGNORE_KEYS = {"timings_s", "audio_pass"}  # wall times and cache statistics differ by design
_NUM = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:e-?\d+)?(?![\w.])")


def dump(run: Path, out: Path) -> None:
    from voice_audit.analysis.pipeline import analyze

    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="va-eq-") as tmp:
        copy = Path(tmp) / "run"
        shutil.copytree(run, copy, ignore=shutil.ignore_patterns("report", "plots"))
        for name in (*OUTPUTS, "audio_measures.json", "analysis.json"):
            (copy / name).unlink(missing_ok=True)
        analyze(copy, audio=True)
        for name in OUTPUTS:
            shutil.copy(copy / name, out / name)


def _close(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return abs(a - b) <= ABS_TOL + REL_TOL * abs(a)


def _json_diff(a: Any, b: Any, where: str, out: list[str]) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k in _IGNORE_KEYS:
                continue
            if k not in a or k not in b:
                out.append(f"{where}.{k}: only in {'new' if k not in a else 'old'}")
            else:
                _json_diff(a[k], b[k], f"{where}.{k}", out)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append(f"{where}: {len(a)} vs {len(b)} items")
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            _json_diff(x, y, f"{where}[{i}]", out)
    elif isinstance(a, bool) or isinstance(b, bool) or a is None or b is None:
        if a != b:
            out.append(f"{where}: {a!r} vs {b!r}")
    elif isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if not _close(float(a), float(b)):
            out.append(f"{where}: {a!r} vs {b!r}")
    elif isinstance(a, str) and isinstance(b, str):
        if a == b:
            return
        if _NUM.sub("#", a) != _NUM.sub("#", b):
            out.append(f"{where}: text differs: {a[:120]!r} vs {b[:120]!r}")
        else:
            for x, y in zip(_NUM.findall(a), _NUM.findall(b), strict=True):
                if not _close(float(x), float(y)):
                    out.append(f"{where}: number {x} vs {y}")
    elif a != b:
        out.append(f"{where}: {a!r} vs {b!r}")


def _text(v: Any) -> str:
    """A cell as text, every kind of missing value as one token."""
    if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA:
        return "<missing>"
    return repr(v.tolist()) if isinstance(v, np.ndarray) else repr(v)


def _frame_diff(a: pd.DataFrame, b: pd.DataFrame, name: str, key: str, out: list[str]) -> None:
    for c in sorted(set(a.columns) ^ set(b.columns)):
        out.append(f"{name}: column {c} only in {'old' if c in a.columns else 'new'}")
    a, b = a.set_index(key).sort_index(), b.set_index(key).sort_index()
    if not a.index.equals(b.index):
        out.append(f"{name}: rows differ")
        return
    for c in sorted(set(a.columns) & set(b.columns)):
        x, y = a[c], b[c]
        if pd.api.types.is_numeric_dtype(x) and pd.api.types.is_numeric_dtype(y) and x.dtype != bool:
            xv, yv = x.to_numpy(dtype=float), y.to_numpy(dtype=float)
            both_nan = np.isnan(xv) & np.isnan(yv)
            ok = both_nan | (np.abs(xv - yv) <= ABS_TOL + REL_TOL * np.abs(xv))
            if not ok.all():
                i = int(np.flatnonzero(~ok)[0])
                out.append(
                    f"{name}.{c}: {int((~ok).sum())} rows differ, e.g. {a.index[i]}: {xv[i]!r} vs {yv[i]!r}"
                )
        else:
            xs, ys = (
                np.array([_text(v) for v in x], dtype=object),
                np.array([_text(v) for v in y], dtype=object),
            )
            if not (xs == ys).all():
                i = int(np.flatnonzero(xs != ys)[0])
                out.append(
                    f"{name}.{c}: {int((xs != ys).sum())} rows differ, e.g. {a.index[i]}: {xs[i]!r} vs {ys[i]!r}"
                )


def compare(old: Path, new: Path) -> list[str]:
    out: list[str] = []
    _frame_diff(
        pd.read_parquet(old / "metrics.parquet"),
        pd.read_parquet(new / "metrics.parquet"),
        "metrics",
        "episode_id",
        out,
    )
    _frame_diff(
        pd.read_parquet(old / "pairs.parquet"),
        pd.read_parquet(new / "pairs.parquet"),
        "pairs",
        "pair_id",
        out,
    )
    for name in ("gates.json", "deltas.json", "disposition.json"):
        _json_diff(json.loads((old / name).read_text()), json.loads((new / name).read_text()), name, out)
    return out


def main() -> None:
    if len(sys.argv) != 4 or sys.argv[1] not in ("dump", "compare"):
        raise SystemExit(__doc__)
    if sys.argv[1] == "dump":
        dump(Path(sys.argv[2]), Path(sys.argv[3]))
        return
    diffs = compare(Path(sys.argv[2]), Path(sys.argv[3]))
    print(
        f"tolerance: |a - b| <= {ABS_TOL} + {REL_TOL} * |a| on numbers; verdicts, claims and text identical"
    )
    for d in diffs[:60]:
        print("DIFF", d)
    print(f"{len(diffs)} difference(s)")
    raise SystemExit(1 if diffs else 0)


if __name__ == "__main__":
    main()
