"""Train the turn model's heads on the development part of the observer corpus, and say how well
they generalise before they are written.

Run: ``.venv/bin/python benchmarks/train_turn_model.py [--out PATH] [--fpr 0.025] [--c 4]``
(needs ``pip install 'voice-audit[reader-model]'``).

Only files whose ``split:`` is ``dev`` are read; the held-out files are never opened. Per safety act
(`denial`, `repair_request`) a logistic regression over the encoder's features
(`voice_audit.analysis.metrics.turn_model`) is fitted on every development turn; its threshold is
the lowest probability at which the out-of-fold readings (5 folds) call at most ``--fpr`` of the
other development turns that act. Before writing, it prints two estimates of what the heads do on
phrasing they were not fitted on: the out-of-fold figures, and per development batch file the
figures of heads fitted on the other files (the rules beside them, read by the rule reader, which
was tuned on some of those files: an upper bound for the rules there).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold

from voice_audit.analysis.metrics import turn_model
from voice_audit.harness.caller import RuleReader
from voice_audit.scenarios import ScenarioLibrary

_spec = importlib.util.spec_from_file_location("observer_bench", Path(__file__).with_name("observer.py"))
assert _spec is not None and _spec.loader is not None
bench = importlib.util.module_from_spec(_spec)
sys.modules["observer_bench"] = bench
_spec.loader.exec_module(bench)


def fit(x: np.ndarray, y: np.ndarray, c: float) -> LogisticRegression:
    return LogisticRegression(C=c, max_iter=5000, class_weight="balanced").fit(x, y)


def threshold_for(p_neg: np.ndarray, fpr: float) -> float:
    """The lowest threshold at which at most `fpr` of the negatives score at or above it."""
    ranked = np.sort(p_neg)[::-1]
    k = int(np.floor(fpr * len(ranked)))
    return float(min(0.99, max(0.5, ranked[k] + 1e-6))) if len(ranked) > k else 0.5


def _fig(hit: np.ndarray, y: np.ndarray) -> str:
    pos, neg = int(y.sum()), int((~y).sum())
    return (
        f"recall {100 * hit[y].mean():5.1f}% ({int(hit[y].sum())}/{pos})  "
        f"FPR {100 * hit[~y].mean():4.1f}% ({int(hit[~y].sum())}/{neg})"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=turn_model.HEADS)
    ap.add_argument("--fpr", type=float, default=0.025, help="out-of-fold false-positive rate per act")
    ap.add_argument("--c", type=float, default=4.0, help="inverse regularisation of the heads")
    args = ap.parse_args(argv)
    files = bench.corpus_files()["dev"]
    turns = [t for p in files for t in bench.load_file(p)]
    assert all(t.split == "dev" for t in turns)
    t0 = time.perf_counter()
    model = turn_model.TurnModel(trained=False)
    x = model.features([t.text for t in turns])
    print(f"{len(turns)} development turns from {', '.join(p.name for p in files)}; "
          f"encoded in {time.perf_counter() - t0:.1f} s")  # fmt: skip
    library = ScenarioLibrary()
    scenarios = {k: library.get_locked(v) for k, v in bench.SCENARIO_IDS.items()}
    rules = RuleReader()
    rule_read = [rules.read(t.text, scenarios[t.scenario]) for t in turns]
    names = np.array([t.file for t in turns])
    heads: dict[str, dict[str, object]] = {}
    for act in turn_model.ACTS:
        y = np.array([act in t.acts for t in turns])
        oof = np.zeros(len(y))
        for tr, te in StratifiedKFold(5, shuffle=True, random_state=0).split(x, y):
            oof[te] = fit(x[tr], y[tr], args.c).predict_proba(x[te])[:, 1]
        thr = threshold_for(oof[~y], args.fpr)
        clf = fit(x, y, args.c)
        rule = np.array([r.has(act) for r in rule_read])
        print(f"== {act}: threshold {thr:.3f} (out-of-fold FPR <= {args.fpr:.1%})")
        print(f"  out of fold, model alone     {_fig(oof >= thr, y)}")
        for name in sorted(set(names)):
            held = names == name
            p = fit(x[~held], y[~held], args.c).predict_proba(x[held])[:, 1] >= thr
            print(f"  {name:18s} model alone {_fig(p, y[held])}")
            print(f"  {'':18s} rules+model {_fig(p | rule[held], y[held])}")
        heads[act] = {
            "b": round(float(clf.intercept_[0]), 6),
            "threshold": round(thr, 6),
            "w": [round(float(v), 6) for v in clf.coef_[0]],
        }
    corpus = hashlib.sha256(b"".join(p.read_bytes() for p in files)).hexdigest()
    data = {
        "encoder": f"{turn_model.PACKAGE}=={turn_model.PACKAGE_VERSION}",
        "encoder_files": turn_model.MODEL_FILES,
        "features": "mean-pooled hidden states of every layer, last layer max and first token, each unit length",
        "trained_on": [p.name for p in files],
        "corpus_sha256": corpus,
        "c": args.c,
        "target_fpr": args.fpr,
        "heads": heads,
    }
    tmp = args.out.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, separators=(",", ":")) + "\n", encoding="utf-8")
    tmp.replace(args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
