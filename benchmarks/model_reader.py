"""The model reader on a seeded sample of the observer corpus: speed and quality beside the rules.

Run: ``.venv/bin/python benchmarks/model_reader.py [--model smollm2-135m] [--n 40] [--split holdout]
[--threads 1]``. Prints, per reader, the share of turns whose primary act and whose act set match
the label, fact precision/recall, and for the model wall and CPU seconds per turn (CPU time is
what an idle machine would take with one thread); then the agreement of the two readers.
"""

from __future__ import annotations

import argparse
import importlib.util
import random
import sys
import time
from pathlib import Path

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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--n", type=int, default=40)
    ap.add_argument("--split", choices=("dev", "holdout", "all"), default="holdout")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    turns = bench.load_corpus(args.split)
    sample = random.Random(args.seed).sample(turns, min(args.n, len(turns)))
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
