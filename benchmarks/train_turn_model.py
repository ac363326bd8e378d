"""Train the turn model's heads on the development part of the observer corpus, and say how well
they generalise before they are written.

Run: ``.venv/bin/python benchmarks/train_turn_model.py [--out PATH] [--cache FILE]``
(needs ``pip install 'voice-audit[reader-model]'``).

Only files whose ``split:`` is ``dev`` are read; the held-out files' turns are never loaded. Per
safety act (`denial`, `repair_request`) a logistic regression over the encoder's features
(`voice_audit.analysis.metrics.turn_model`) is fitted on every development turn. Its generalisation
is estimated by grouped cross-validation (with a second head per act over the turn's word and
letter n-grams, `voice_audit.analysis.metrics.turn_ngrams`, its vocabulary built on the training
batches only, whose probability is mixed in with weight `MIX`): each development batch (a file, or one of the numbered
batches of ``dev.yaml``) is read by heads fitted on all the other batches, so every figure is of
phrasing by a batch the heads never saw, as a new agent's would be. Each way of joining the two
readings (`turn_model.JOINS`: an act either reader found, or the model's reading alone) gets the
lowest threshold at which its out-of-batch reading calls at most a target share of the other
development turns that act (`SETTINGS`: regularisation and target per act, chosen by this grouped
cross-validation); the join that then recalls more of the act is written with its threshold.
Before writing, it prints per batch and pooled the heads' recall and false-positive rate alone and
joined (the rule reader was tuned on ``dev.yaml`` and ``dev_safety.yaml``, so there a join with
the rules is an upper bound; the other batches were never used for the rules).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import pickle
import re
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from scipy.sparse import csr_matrix
from sklearn.linear_model import LogisticRegression

from voice_audit.analysis.metrics import turn_model, turn_ngrams
from voice_audit.harness.caller import RuleReader
from voice_audit.scenarios import ScenarioLibrary

_spec = importlib.util.spec_from_file_location("observer_bench", Path(__file__).with_name("observer.py"))
assert _spec is not None and _spec.loader is not None
bench = importlib.util.module_from_spec(_spec)
sys.modules["observer_bench"] = bench
_spec.loader.exec_module(bench)


SETTINGS: dict[str, tuple[float, float]] = {"denial": (16.0, 0.04), "repair_request": (16.0, 0.02)}
"""Per act: the heads' inverse regularisation C and the out-of-fold false-positive rate its
threshold is set to."""


NGRAM_C = 8.0
"""The n-gram head's inverse regularisation."""
NGRAM_MIN_DF = 2
"""A term is kept if at least this many training turns hold it."""
MIX = 0.5
"""The n-gram head's weight in each act's probability (the encoder head's is 1 - MIX)."""
MIN_THRESHOLD, MAX_THRESHOLD = 0.5, 0.99
"""The bounds of a head's threshold. The heads are fitted with balanced class weights, so below 0.5
a head would call an act it leans against: a repair-request threshold of 0.245 (the 2% target's,
with the floor at 0.05) read "What is your name?" as a repair request, on a turn unlike the
corpus's but common in calls."""


BATCH_MARK = re.compile(r"#\s*-+\s*\w+ development batch")


def fit(x: np.ndarray, y: np.ndarray, c: float) -> LogisticRegression:
    return LogisticRegression(C=c, max_iter=5000, class_weight="balanced").fit(x, y)


def threshold_for(p_neg: np.ndarray, fpr: float, budget: int | None = None) -> float:
    """The lowest threshold at which at most `fpr` of the negatives (or `budget` of them) score at
    or above it."""
    ranked = np.sort(p_neg)[::-1]
    k = int(np.floor(fpr * len(ranked))) if budget is None else budget
    if k < 0:
        return MAX_THRESHOLD
    return (
        float(min(MAX_THRESHOLD, max(MIN_THRESHOLD, ranked[k] + 1e-6))) if len(ranked) > k else MIN_THRESHOLD
    )


def joined_reading(join: str, p: np.ndarray, thr: float, rule: np.ndarray, done: np.ndarray) -> np.ndarray:
    """Per turn, whether the joined reading holds the act, as `turn_model.combine` joins them."""
    if join == "model":
        return p >= thr
    return (rule | (p >= thr)) & ~done


def join_threshold(
    join: str, p: np.ndarray, y: np.ndarray, fpr: float, rule: np.ndarray, done: np.ndarray
) -> float:
    """The lowest threshold at which the joined reading calls at most `fpr` of the other turns the
    act: for `either`, the rules' own false readings spend part of that budget first."""
    if join == "model":
        return threshold_for(p[~y], fpr)
    neg = ~y
    base = rule[neg] & ~done[neg]
    free = ~rule[neg] & ~done[neg]
    return threshold_for(p[neg][free], fpr, int(np.floor(fpr * neg.sum())) - int(base.sum()))


def batches(turns: list[Any]) -> np.ndarray:
    """Each turn's development batch: its file, and in ``dev.yaml`` the numbered batch (a
    ``# --- <n>th development batch`` comment starts one) it was written in."""
    starts: dict[str, list[int]] = {}
    for name in {t.file for t in turns}:
        lines = (bench.CORPUS / name).read_text(encoding="utf-8").splitlines()
        starts[name] = [i + 1 for i, ln in enumerate(lines) if BATCH_MARK.search(ln)]
    return np.array(
        [
            f"{t.file}#{1 + sum(s < t.line for s in starts[t.file])}" if starts[t.file] else t.file
            for t in turns
        ]
    )


def out_of_batch(x: np.ndarray, y: np.ndarray, groups: np.ndarray, c: float) -> np.ndarray:
    """Each turn's probability from heads fitted on every other batch."""
    p = np.zeros(len(y))
    for g in sorted(set(groups)):
        held = groups == g
        p[held] = fit(x[~held], y[~held], c).predict_proba(x[held])[:, 1]
    return p


def ngram_matrix(texts: list[str], index: dict[str, int], idf: np.ndarray) -> csr_matrix:
    data, cols, ptr = [], [], [0]
    for c, v in turn_ngrams.rows(texts, index, idf):
        cols.extend(c.tolist())
        data.extend(v.tolist())
        ptr.append(len(cols))
    return csr_matrix((data, cols, ptr), shape=(len(texts), len(index)))


def ngram_fit(texts: list[str], y: np.ndarray) -> tuple[list[str], np.ndarray, LogisticRegression]:
    kept, idf = turn_ngrams.vocabulary(texts, NGRAM_MIN_DF)
    index = {t: i for i, t in enumerate(kept)}
    return kept, idf, fit(ngram_matrix(texts, index, idf), y, NGRAM_C)


def out_of_batch_ngrams(texts: list[str], y: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Each turn's n-gram head probability, vocabulary and head fitted on every other batch."""
    p = np.zeros(len(y))
    for g in sorted(set(groups)):
        held = groups == g
        train = [t for t, h in zip(texts, held, strict=True) if not h]
        kept, idf, clf = ngram_fit(train, y[~held])
        index = {t: i for i, t in enumerate(kept)}
        test = [t for t, h in zip(texts, held, strict=True) if h]
        p[held] = clf.predict_proba(ngram_matrix(test, index, idf))[:, 1]
    return p


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
    groups = batches(turns)
    print(f"{len(set(groups))} development batches: {', '.join(sorted(set(groups)))}")
    heads: dict[str, dict[str, object]] = {}
    texts = [t.text for t in turns]
    gram_heads: dict[str, dict[str, object]] = {}
    kept: list[str] = []
    idf = np.zeros(0)
    for act in turn_model.ACTS:
        c, fpr = SETTINGS[act]
        y = np.array([act in t.acts for t in turns])
        encoder_oob = out_of_batch(x, y, groups, c)
        oob = (1.0 - MIX) * encoder_oob + MIX * out_of_batch_ngrams(texts, y, groups)
        clf = fit(x, y, c)
        kept, idf, gram = ngram_fit(texts, y)
        gram_heads[act] = {
            "b": round(float(gram.intercept_[0]), 6),
            "w": [round(float(v), 6) for v in gram.coef_[0]],
        }
        print(f"== {act}: encoder head alone {_fig(encoder_oob >= threshold_for(encoder_oob[~y], fpr), y)}")
        rule = np.array([r.has(act) for r in rule_read])
        done = np.array([r.has("confirmation") for r in rule_read]) & (act == "denial")
        # each join at its own threshold for the same out-of-batch false-positive rate; the one that
        # recalls more is written
        options = {j: join_threshold(j, oob, y, fpr, rule, done) for j in turn_model.JOINS}
        readings = {j: joined_reading(j, oob, t, rule, done) for j, t in options.items()}
        for j, t in options.items():
            print(f"== {act}: join {j:6s} threshold {t:.3f}  {_fig(readings[j], y)}")
        join = max(turn_model.JOINS, key=lambda j: (readings[j][y].mean(), j == "either"))
        thr, joined = options[join], readings[join]
        alone = oob >= thr
        print(
            f"== {act}: C {c}, n-gram mix {MIX}, join {join}, threshold {thr:.3f} (out-of-batch FPR <= {fpr:.1%})"
        )
        print(f"  {'all batches':18s} model alone {_fig(alone, y)}")
        print(f"  {'':18s} joined      {_fig(joined, y)}")
        for name in sorted(set(groups)):
            held = groups == name
            print(f"  {name:18s} model alone {_fig(alone[held], y[held])}")
            print(f"  {'':18s} joined      {_fig(joined[held], y[held])}")
        heads[act] = {
            "c": c,
            "target_fpr": fpr,
            "b": round(float(clf.intercept_[0]), 6),
            "threshold": round(thr, 6),
            "join": join,
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
        "ngrams": {
            "mix": MIX,
            "c": NGRAM_C,
            "min_df": NGRAM_MIN_DF,
            "terms": kept,
            "idf": [round(float(v), 6) for v in idf],
            "heads": gram_heads,
        },
    }
    tmp = args.out.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, separators=(",", ":")) + "\n", encoding="utf-8")
    tmp.replace(args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
