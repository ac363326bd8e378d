"""How well a reader of agent turns reads them as a person would: the observer corpus benchmark.

Run: ``.venv/bin/python benchmarks/observer.py [--reader rules] [--reader module:attr]
[--split dev|holdout|all] [--file NAME] [--errors] [--brief]``.
A reader is ``rules`` (the caller's rule reader), ``metrics`` (the reader the reading-based
safety metrics use with the ``reader-model`` extra: the rules joined with the turn model, encoding
each distinct turn once) or ``module:attribute`` naming any object with
``name`` and ``read(text, scenario) -> Reading`` (or a zero-argument factory returning one), so a
model reader plugs in unchanged. Every corpus file of the folder belongs to the split its
``split:`` key names, and a split is read from all its files. For each split it prints the share
of turns read exactly as labelled (same act set and same facts), the share with the labelled
primary act, per-act precision and recall over act sets, fact precision and recall, and the
confusion matrix of primary acts (rows: label, columns: reading). Then one table, per reader and
split (and per file of a split), of what the two reading-based safety events rest on: recall of
refusals (turns labelled ``denial`` read with a denial) and the false-positive rate (other turns
read with one), the same for repair requests, overall accuracy, and the reader's cost per turn.
With two or more readers it also prints how often each pair reads the same act set (a diagnostic
for a second reader). ``--errors`` lists misread turns of ``dev`` only, so the held-out part stays
out of the rules' development; ``--brief`` prints only the table.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from voice_audit.harness.caller import ACTS, PRECEDENCE, ActHit, Reader, Reading, RuleReader, make_reading
from voice_audit.scenarios import Scenario, ScenarioLibrary

CORPUS = Path(__file__).parents[1] / "tests" / "fixtures" / "observer"
SAFE_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's safe loader where PyYAML has it: the corpus parses to the same objects in a sixth of the
time (0.8 s against 5 s of CPU for every file), and every corpus test and training run parses it."""
SCENARIO_IDS = {
    "refund": "refund_duplicate_charge",
    "outage": "outage_support",
    "plan": "plan_correction",
    "unlock": "account_verification",
    "dispute": "billing_dispute_denied",
    "cancel": "retention_cancel",
}


@dataclass(frozen=True)
class Turn:
    split: str
    scenario: str
    text: str
    acts: frozenset[str]
    facts: frozenset[str]
    line: int
    file: str = ""

    @property
    def primary(self) -> str:
        return min(self.acts, key=PRECEDENCE.index)


def corpus_files(directory: Path = CORPUS) -> dict[str, list[Path]]:
    """The corpus files of each split, by their `split:` key (every ``*.yaml`` of the folder)."""
    out: dict[str, list[Path]] = {}
    for path in sorted(directory.glob("*.yaml")):
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=SAFE_LOADER)
        split = data.get("split") if isinstance(data, dict) else None
        if not isinstance(split, str) or not split:
            raise SystemExit(
                f"{path}:1: no `split:` key; start the file with `split: dev` or `split: holdout`"
            )
        out.setdefault(split, []).append(path)
    return out


def load_file(path: Path) -> list[Turn]:
    """The labelled turns of one corpus file; a bad entry names its file and line."""
    lines = path.read_text(encoding="utf-8").splitlines()
    data = yaml.load("\n".join(lines), Loader=SAFE_LOADER)
    entry_lines = [i + 1 for i, ln in enumerate(lines) if ln.lstrip().startswith("- {")]
    rows = data.get("turns") or []
    if len(rows) != len(entry_lines):
        raise SystemExit(f"{path}:1: write every turn on one line as `- {{s: ..., t: ..., a: [...]}}`")
    turns: list[Turn] = []
    for row, line in zip(rows, entry_lines, strict=True):
        acts = frozenset(row.get("a") or ())
        unknown = sorted(acts - set(ACTS)) + ([row.get("s")] if row.get("s") not in SCENARIO_IDS else [])
        if unknown or not acts:
            raise SystemExit(f"{path}:{line}: unknown act or scenario {unknown or 'none'}; fix the label")
        turns.append(
            Turn(data["split"], row["s"], row["t"], acts, frozenset(row.get("f", ())), line, path.name)
        )
    return turns


def load_corpus(split: str = "all", directory: Path = CORPUS) -> list[Turn]:
    """The labelled turns of one split (every file whose `split:` key names it), or of all splits."""
    files = corpus_files(directory)
    if split != "all" and split not in files:
        raise SystemExit(
            f"{directory}: no corpus file has `split: {split}` (found: {', '.join(sorted(files))})"
        )
    return [t for name, paths in files.items() if split in ("all", name) for p in paths for t in load_file(p)]


class MetricsReader:
    """The reader the reading-based safety metrics use with the `reader-model` extra: the rule
    reader's acts joined with the turn model's (`voice_audit.analysis.metrics.turn_model.combine`,
    as `safety.reread` joins them on a run's logged readings)."""

    def __init__(self) -> None:
        from voice_audit.analysis.metrics import turn_model

        t0 = time.perf_counter()
        self._tm = turn_model
        self.model = turn_model.load()
        self.load_s = time.perf_counter() - t0
        self.name = self.model.name
        self.rules = RuleReader()

    def prepare(self, texts: list[str]) -> None:
        """Encode every distinct turn once, in batches (as the analysis does after the calls)."""
        self.model.probabilities(dict.fromkeys(texts))

    def read(self, text: str, scenario: Scenario) -> Reading:
        r = self.rules.read(text, scenario)
        c = self._tm.combine(r.act_names, self.model.acts(text), self.model.heads.decides)
        hits = [h for h in r.acts if h.act in c.acts] + [ActHit(act=a, rule="turn_model") for a in c.added]
        return make_reading(r.text or text, hits, reader=self.name)


def run_cost(run_dir: Path, reader: MetricsReader | None) -> str:
    """What the metrics reader costs on one run: its distinct agent turns (the turn model reads each
    once), the wall and CPU seconds to encode them, beside the model's load."""
    from voice_audit.analysis.metrics.ingest import ingest

    table = ingest(run_dir).table
    heard = table.of_type("caller_decision", columns=["heard"])["heard"].fillna("").astype(str)
    texts = list(dict.fromkeys(t for t in heard if t.strip()))
    reader = reader or MetricsReader()
    model = reader.model
    before = (model.turns_encoded, model.encode_s, model.encode_cpu_s)
    model.probabilities(texts)
    n = model.turns_encoded - before[0]
    wall, cpu = model.encode_s - before[1], model.encode_cpu_s - before[2]
    return (
        f"== {reader.name} on run {run_dir.name}: {len(heard)} agent turns read by the caller, "
        f"{len(texts)} distinct ({n} new to this process): encoding {wall:.1f} s wall, {cpu:.1f} s CPU"
        f" ({1000 * wall / max(n, 1):.1f} ms wall a turn), plus {reader.load_s:.1f} s model load =="
    )


def resolve_reader(spec: str) -> Reader:
    if spec == "rules":
        return RuleReader()
    if spec in ("metrics", "rules+model"):
        return MetricsReader()
    module, _, attr = spec.partition(":")
    obj: Any = getattr(importlib.import_module(module), attr)
    if isinstance(obj, type) or (callable(obj) and not hasattr(obj, "read")):
        obj = obj()  # a reader class or a factory
    if not hasattr(obj, "read") or not hasattr(obj, "name"):
        raise SystemExit(f"--reader {spec}: not a reader (needs `name` and `read(text, scenario)`)")
    return obj


def _facts_of(r: Reading) -> frozenset[str]:
    return frozenset(f for h in r.acts for f in h.facts)


@dataclass
class Score:
    n: int = 0
    exact: int = 0
    primary: int = 0

    def pct(self, k: int) -> str:
        return f"{100.0 * k / self.n:5.1f}%" if self.n else "  n/a"


def read_all(
    reader: Reader, turns: list[Turn], scenarios: dict[str, Scenario]
) -> tuple[list[Reading], float]:
    """Every turn's reading and the wall seconds the reader took for all of them."""
    t0 = time.perf_counter()
    prepare = getattr(reader, "prepare", None)
    if prepare is not None:
        prepare([t.text for t in turns])
    readings = [reader.read(t.text, scenarios[t.scenario]) for t in turns]
    return readings, time.perf_counter() - t0


def evaluate(turns: list[Turn], readings: list[Reading], show_errors: bool) -> str:
    score = Score()
    tp: Counter[str] = Counter()
    fp: Counter[str] = Counter()
    fn: Counter[str] = Counter()
    ftp = ffp = ffn = 0
    confusion: Counter[tuple[str, str]] = Counter()
    errors: list[str] = []
    for t, r in zip(turns, readings, strict=True):
        got = frozenset(r.act_names)
        facts = _facts_of(r)
        score.n += 1
        ok = got == t.acts and facts == t.facts
        score.exact += ok
        score.primary += r.primary == t.primary
        confusion[(t.primary, r.primary)] += 1
        for a in ACTS:
            tp[a] += a in got and a in t.acts
            fp[a] += a in got and a not in t.acts
            fn[a] += a not in got and a in t.acts
        ftp += len(facts & t.facts)
        ffp += len(facts - t.facts)
        ffn += len(t.facts - facts)
        if not ok and show_errors:
            rules = ", ".join(f"{h.act}<{h.rule}>{list(h.facts) if h.facts else ''}" for h in r.acts)
            errors.append(
                f"  {t.file}:{t.line}: {t.text!r}\n    label {sorted(t.acts)} {sorted(t.facts)}  read {rules}"
            )
    out = [
        f"turns {score.n}: read exactly as labelled {score.pct(score.exact)} ({score.exact}), "
        f"primary act {score.pct(score.primary)} ({score.primary})",
        f"facts: precision {_ratio(ftp, ftp + ffp)}  recall {_ratio(ftp, ftp + ffn)}",
        f"{'act':22s} {'n':>4s} {'precision':>9s} {'recall':>7s}",
    ]
    for a in ACTS:
        n = tp[a] + fn[a]
        if n or fp[a]:
            out.append(f"{a:22s} {n:4d} {_ratio(tp[a], tp[a] + fp[a]):>9s} {_ratio(tp[a], n):>7s}")
    present = [a for a in PRECEDENCE if any(a in k for k in confusion)]
    short = {a: a[:6] for a in present}
    out.append("confusion of primary acts (rows label, columns reading):")
    out.append(" " * 22 + " ".join(f"{short[a]:>6s}" for a in present))
    for a in present:
        out.append(f"{a:22s}" + " ".join(f"{confusion[(a, b)] or '.':>6}" for b in present))
    return "\n".join(out + errors)


SAFETY_ACTS = ("denial", "repair_request")
"""The acts the two reading-based safety events rest on: a refusal of the remedy
(`safety_refused_service`) and a repair request (`safety_repair_loop`, Repair)."""


@dataclass(frozen=True)
class SafetyFigures:
    """Recall and false-positive rate of one act over act sets: `hit` of `pos` labelled turns read
    with the act, `false` of `neg` other turns read with it."""

    act: str
    pos: int
    hit: int
    neg: int
    false: int

    @property
    def recall(self) -> float | None:
        return self.hit / self.pos if self.pos else None

    @property
    def fpr(self) -> float | None:
        return self.false / self.neg if self.neg else None


def safety_figures(turns: list[Turn], readings: list[Reading], act: str) -> SafetyFigures:
    pos = hit = neg = false = 0
    for t, r in zip(turns, readings, strict=True):
        read = r.has(act)
        if act in t.acts:
            pos, hit = pos + 1, hit + read
        else:
            neg, false = neg + 1, false + read
    return SafetyFigures(act, pos, hit, neg, false)


def _rate(k: int, n: int) -> str:
    return f"{100.0 * k / n:5.1f}% ({k}/{n})" if n else "n/a"


def table_row(reader: str, split: str, turns: list[Turn], readings: list[Reading], seconds: float) -> str:
    exact = sum(
        frozenset(r.act_names) == t.acts and _facts_of(r) == t.facts
        for t, r in zip(turns, readings, strict=True)
    )
    cells = [f"{reader:24s}", f"{split:28s}", f"{len(turns):5d}", f"{_rate(exact, len(turns)):>18s}"]
    for act in SAFETY_ACTS:
        f = safety_figures(turns, readings, act)
        cells += [f"{_rate(f.hit, f.pos):>16s}", f"{_rate(f.false, f.neg):>16s}"]
    ms = 1000.0 * seconds / len(turns) if turns else 0.0
    cells.append(f"{ms:9.2f}")
    return " ".join(cells)


TABLE_HEADER = " ".join(
    [
        f"{'reader':24s}",
        f"{'split (file)':28s}",
        f"{'turns':>5s}",
        f"{'accuracy':>18s}",
        f"{'denial recall':>16s}",
        f"{'denial FPR':>16s}",
        f"{'repair recall':>16s}",
        f"{'repair FPR':>16s}",
        f"{'ms/turn':>9s}",
    ]
)


def _ratio(k: int, n: int) -> str:
    return f"{k / n:.3f}" if n else "n/a"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reader", action="append", help="rules, or module:attribute (repeatable)")
    ap.add_argument("--split", default="all", help="a split named by the corpus files (dev, holdout), or all")
    ap.add_argument("--errors", action="store_true", help="list misread turns (dev only)")
    ap.add_argument("--brief", action="store_true", help="print only the table of safety figures")
    ap.add_argument("--file", action="append", help="read only this corpus file of the split (repeatable)")
    ap.add_argument(
        "--run", type=Path, help="also time the metrics reader on a run folder's distinct agent turns"
    )
    args = ap.parse_args(argv)
    library = ScenarioLibrary()
    scenarios = {k: library.get_locked(v) for k, v in SCENARIO_IDS.items()}
    readers = [resolve_reader(spec) for spec in args.reader or ["rules"]]
    files = corpus_files()
    splits = sorted(files) if args.split == "all" else [args.split]
    corpus = {
        split: [t for t in load_corpus(split) if not args.file or t.file in args.file] for split in splits
    }
    splits = [split for split in splits if corpus[split]]
    rows: list[str] = []
    read: dict[tuple[str, str], list[Reading]] = {}
    for reader in readers:
        for split in splits:
            turns = corpus[split]
            readings, seconds = read_all(reader, turns, scenarios)
            read[(reader.name, split)] = readings
            if not args.brief:
                print(f"== reader {reader.name} on {split} ({', '.join(p.name for p in files[split])}) ==")
                print(evaluate(turns, readings, args.errors and split == "dev"))
            rows.append(table_row(reader.name, split, turns, readings, seconds))
            by_file = sorted({t.file for t in turns})
            if len(by_file) > 1:
                for name in by_file:
                    idx = [i for i, t in enumerate(turns) if t.file == name]
                    share = seconds * len(idx) / len(turns)
                    rows.append(
                        table_row("", f"  {name}", [turns[i] for i in idx], [readings[i] for i in idx], share)
                    )
    print("== safety figures: recall of refusals (denial) and repair requests, false-positive rates ==")
    print(TABLE_HEADER)
    print("\n".join(rows))
    for reader in readers:
        if isinstance(reader, MetricsReader):
            print(
                f"== {reader.name}: model load {reader.load_s:.1f} s once per analysis; "
                f"{reader.model.turns_encoded} distinct turns encoded, "
                f"{1000 * reader.model.encode_s / max(reader.model.turns_encoded, 1):.1f} ms wall and "
                f"{1000 * reader.model.encode_cpu_s / max(reader.model.turns_encoded, 1):.1f} ms CPU a turn =="
            )
    if args.run is not None:
        print(run_cost(args.run, next((r for r in readers if isinstance(r, MetricsReader)), None)))
    for i, first in enumerate(readers):
        for second in readers[i + 1 :]:
            for split in splits:
                a, b = read[(first.name, split)], read[(second.name, split)]
                same = sum(x.act_names_set == y.act_names_set for x, y in zip(a, b, strict=True))
                print(
                    f"== agreement {first.name} / {second.name} on {split}: same act set on "
                    f"{100.0 * same / len(a):.1f}% of {len(a)} turns =="
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
