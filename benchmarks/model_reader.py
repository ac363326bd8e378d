"""The model reader on a seeded sample of the observer corpus: speed and quality beside the rules.

Run: ``.venv/bin/python benchmarks/model_reader.py [--model smollm2-135m] [--n 40] [--split holdout]
[--threads 1]``. Prints, per reader, the share of turns whose primary act and whose act set match
the label, fact precision/recall, and for the model wall and CPU seconds per turn (CPU time is
what an idle machine would take with one thread); then the agreement of the two readers.

``--model turn`` times the turn model the safety metrics re-read turns with
(`voice_audit.analysis.metrics.turn_model`, the `reader-model` extra) instead: its load, its
milliseconds per distinct turn (each encoded alone, as a run's first sighting is, and in batches,
as the analysis encodes a run's distinct turns), and what that adds to a demo run's analysis
(``--demo-turns``: the distinct agent turns of a demo run, as ``benchmarks/observer.py --run``
counts them), beside its reading of the two safety acts on the sample.
"""

from __future__ import annotations

import argparse
import importlib.util
import random
import sys
import time
from pathlib import Path
from typing import Any

from voice_audit.analysis.agreement import cohen_kappa
from voice_audit.harness.caller import RuleReader
from voice_audit.harness.caller.model_reader import ModelReader, ReaderError
from voice_audit.harness.llm import LocalChatClient, packaged_model
from voice_audit.scenarios import ScenarioLibrary

_spec = importlib.util.spec_from_file_location("observer_bench", Path(__file__).with_name("observer.py"))
assert _spec is not None and _spec.loader is not None
bench = importlib.util.module_from_spec(_spec)
sys.modules["observer_bench"] = bench
_spec.loader.exec_module(bench)


def turn_model_cost(sample: list[Any], args: argparse.Namespace) -> int:
    """The turn model's cost table (and its reading of the two safety acts on the sample)."""
    from voice_audit.analysis.metrics import turn_model

    t0 = time.perf_counter()
    model = turn_model.TurnModel(threads=args.threads)
    load_s = time.perf_counter() - t0
    texts = [t.text for t in sample]
    model.features(texts[:2])  # warm-up: the first call pays one-off allocations
    rows = []
    for mode, chunks in (("alone", [[t] for t in texts]), ("batched", [texts])):
        w, c = time.perf_counter(), time.process_time()
        for chunk in chunks:
            model.features(chunk)
        rows.append((mode, (time.perf_counter() - w) / len(texts), (time.process_time() - c) / len(texts)))
    print(f"turn model {model.name}: {len(texts)} turns of {args.split} (seed {args.seed}), "
          f"{args.threads} thread; load {load_s:.1f} s once per analysis")  # fmt: skip
    print(f"  {'encoding':10s} {'ms wall/turn':>13s} {'ms CPU/turn':>12s} {'demo run (s)':>13s}")
    for mode, wall, cpu in rows:
        print(f"  {mode:10s} {1000 * wall:13.1f} {1000 * cpu:12.1f} {load_s + args.demo_turns * wall:13.1f}")
    print(f"  (demo run: load plus {args.demo_turns} distinct agent turns, wall)")
    for act in turn_model.ACTS:
        y = [act in t.acts for t in sample]
        got = [act in model.acts(t) for t in texts]
        pos, neg = sum(y), len(y) - sum(y)
        tp = sum(g and w for g, w in zip(got, y, strict=True))
        fp = sum(g and not w for g, w in zip(got, y, strict=True))
        print(f"  model alone, {act}: recall {tp}/{pos}, false positives {fp}/{neg}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--n", type=int, default=40)
    ap.add_argument("--split", choices=("dev", "holdout", "all"), default="holdout")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--demo-turns", type=int, default=12, help="distinct agent turns of a demo run")
    args = ap.parse_args(argv)
    turns = bench.load_corpus(args.split)
    sample = random.Random(args.seed).sample(turns, min(args.n, len(turns)))
    if args.model == "turn":
        return turn_model_cost(sample, args)
    scenarios = {k: sc for k, (_, sc) in ScenarioLibrary().load_all().items()}
    t0 = time.perf_counter()
    client = LocalChatClient(packaged_model(args.model), n_threads=args.threads)
    model = ModelReader(client)
    load_s = time.perf_counter() - t0
    rules = RuleReader()
    rows = []
    wall = cpu = 0.0
    failed = 0
    for t in sample:
        sc = scenarios[bench.SCENARIO_IDS[t.scenario]]
        r = rules.read(t.text, sc)
        w, c = time.perf_counter(), time.process_time()
        try:
            m = model.read(t.text, sc)
        except ReaderError:
            m = None
            failed += 1
        wall += time.perf_counter() - w
        cpu += time.process_time() - c
        rows.append((t, r, m))
    n = len(rows)
    print(f"{args.model}: {n} turns of {args.split} (seed {args.seed}); resolve+verify {load_s:.2f} s, "
          f"{wall / n:.2f} s wall and {cpu / n:.2f} s CPU per turn ({args.threads} thread), {failed} unusable answers")  # fmt: skip
    for name, idx in (("rules", 1), ("model", 2)):
        got = [row[idx] for row in rows]
        primary = sum(
            1 for (t, *_), g in zip(rows, got, strict=True) if g is not None and g.primary == t.primary
        )
        exact = sum(
            1
            for (t, *_), g in zip(rows, got, strict=True)
            if g is not None and set(g.act_names) == set(t.acts)
        )
        tp = fp = fn = 0
        for (t, *_), g in zip(rows, got, strict=True):
            f = set(g.challenge_facts) if g is not None else set()
            tp, fp, fn = tp + len(f & t.facts), fp + len(f - t.facts), fn + len(t.facts - f)
        prec = tp / (tp + fp) if tp + fp else float("nan")
        rec = tp / (tp + fn) if tp + fn else float("nan")
        print(f"  {name:5s} primary act {primary}/{n} = {primary / n:.0%}; act set {exact}/{n} = {exact / n:.0%}; "
              f"facts P {prec:.2f} R {rec:.2f}")  # fmt: skip
    both = [(r.primary, m.primary) for _, r, m in rows if m is not None]
    k = cohen_kappa([a for a, _ in both], [b for _, b in both])
    agree = sum(a == b for a, b in both)
    print(f"  rules vs model: primary act agreement {agree}/{len(both)}, Cohen's kappa {k.value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
