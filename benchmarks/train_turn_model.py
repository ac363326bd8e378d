"""Train the turn model's heads on the development part of the observer corpus, and say how well
they generalise before they are written.

Run: ``.venv/bin/python benchmarks/train_turn_model.py [--out PATH] [--cache FILE]``
(needs ``pip install 'voice-audit[reader-model]'``).

Only files whose ``split:`` is ``dev`` are read; the held-out files are never opened. Per safety act
(`denial`, `repair_request`) a logistic regression over the encoder's features
(`voice_audit.analysis.metrics.turn_model`) is fitted on every development turn; its threshold is
the lowest probability at which the out-of-fold readings (5 folds) call at most a target share of
the other development turns that act (`SETTINGS`: regularisation and target per act, chosen by
fitting on all development files but one batch and reading that batch). Before writing, it prints two estimates of what the heads do on
phrasing they were not fitted on: the out-of-fold figures, and per development batch file the
figures of heads fitted on the other files (the rules beside them, read by the rule reader, which
was tuned on some of those files: an upper bound for the rules there).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import pickle
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


SETTINGS: dict[str, tuple[float, float]] = {"denial": (4.0, 0.025), "repair_request": (1.0, 0.01)}
"""Per act: the heads' inverse regularisation C and the out-of-fold false-positive rate its
threshold is set to."""


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
    ap.add_argument("--cache", type=Path, help="a pickle of encoded turns, reused and extended")
    args = ap.parse_args(argv)
    files = bench.corpus_files()["dev"]
    turns = [t for p in files for t in bench.load_file(p)]
    assert all(t.split == "dev" for t in turns)
    t0 = time.perf_counter()
    model = turn_model.TurnModel(trained=False)
    cached: dict[str, np.ndarray] = {}
    if args.cache is not None and args.cache.is_file():
        cached = pickle.loads(args.cache.read_bytes())
    todo = [t.text for t in turns if t.text not in cached]
    cached.update(zip(todo, model.features(todo) if todo else [], strict=True))
    if args.cache is not None:
        args.cache.write_bytes(pickle.dumps(cached))
    x = np.array([cached[t.text] for t in turns])
    print(f"{len(turns)} development turns from {', '.join(p.name for p in files)}; "
          f"encoded in {time.perf_counter() - t0:.1f} s")  # fmt: skip
    library = ScenarioLibrary()
    scenarios = {k: library.get_locked(v) for k, v in bench.SCENARIO_IDS.items()}
    rules = RuleReader()
    rule_read = [rules.read(t.text, scenarios[t.scenario]) for t in turns]
    names = np.array([t.file for t in turns])
    heads: dict[str, dict[str, object]] = {}
    for act in turn_model.ACTS:
        c, fpr = SETTINGS[act]
        y = np.array([act in t.acts for t in turns])
        oof = np.zeros(len(y))
        for tr, te in StratifiedKFold(5, shuffle=True, random_state=0).split(x, y):
            oof[te] = fit(x[tr], y[tr], c).predict_proba(x[te])[:, 1]
        thr = threshold_for(oof[~y], fpr)
        clf = fit(x, y, c)
        rule = np.array([r.has(act) for r in rule_read])
        print(f"== {act}: C {c}, threshold {thr:.3f} (out-of-fold FPR <= {fpr:.1%})")
        print(f"  out of fold, model alone     {_fig(oof >= thr, y)}")
        for name in sorted(set(names)):
            held = names == name
            p = fit(x[~held], y[~held], c).predict_proba(x[held])[:, 1] >= thr
            print(f"  {name:18s} model alone {_fig(p, y[held])}")
            print(f"  {'':18s} rules+model {_fig(p | rule[held], y[held])}")
        heads[act] = {
            "c": c,
            "target_fpr": fpr,
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
        "heads": heads,
    }
    tmp = args.out.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, separators=(",", ":")) + "\n", encoding="utf-8")
    tmp.replace(args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
