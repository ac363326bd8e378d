"""How well a reader of agent turns reads them as a person would: the observer corpus benchmark.

Run: ``.venv/bin/python benchmarks/observer.py [--reader rules] [--reader module:attr]
[--split dev|holdout|all] [--errors]``.
A reader is ``rules`` (the caller's rule reader) or ``module:attribute`` naming any object with
``name`` and ``read(text, scenario) -> Reading`` (or a zero-argument factory returning one), so a
model reader plugs in unchanged. For each split it prints the share of turns read exactly as
labelled (same act set and same facts), the share with the labelled primary act, per-act
precision and recall over act sets, fact precision and recall, and the confusion matrix of primary
acts (rows: label, columns: reading). With two or more readers it also prints how often each
pair reads the same act set (a diagnostic for a second reader). ``--errors`` lists misread turns
of ``dev`` only, so the held-out part stays out of the rules' development.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from voice_audit.harness.caller import ACTS, PRECEDENCE, Reader, Reading, RuleReader
from voice_audit.scenarios import Scenario, ScenarioLibrary

CORPUS = Path(__file__).parents[1] / "tests" / "fixtures" / "observer"
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

    @property
    def primary(self) -> str:
        return min(self.acts, key=PRECEDENCE.index)


def load_corpus(split: str = "all", directory: Path = CORPUS) -> list[Turn]:
    """The labelled turns of one split (`dev`, `holdout`) or both; a bad entry names its file and line."""
    turns: list[Turn] = []
    for name in ("dev", "holdout"):
        if split not in ("all", name):
            continue
        path = directory / f"{name}.yaml"
        lines = path.read_text(encoding="utf-8").splitlines()
        data = yaml.safe_load("\n".join(lines))
        entry_lines = [i + 1 for i, ln in enumerate(lines) if ln.lstrip().startswith("- {")]
        for row, line in zip(data["turns"], entry_lines, strict=True):
            acts = frozenset(row["a"])
            unknown = sorted(acts - set(ACTS)) + ([row["s"]] if row["s"] not in SCENARIO_IDS else [])
            if unknown or not acts:
                raise SystemExit(f"{path}:{line}: unknown act or scenario {unknown or 'none'}; fix the label")
            turns.append(Turn(data["split"], row["s"], row["t"], acts, frozenset(row.get("f", ())), line))
    return turns


def resolve_reader(spec: str) -> Reader:
    if spec == "rules":
        return RuleReader()
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


def evaluate(reader: Reader, turns: list[Turn], scenarios: dict[str, Scenario], show_errors: bool) -> str:
    score = Score()
    tp: Counter[str] = Counter()
    fp: Counter[str] = Counter()
    fn: Counter[str] = Counter()
    ftp = ffp = ffn = 0
    confusion: Counter[tuple[str, str]] = Counter()
    errors: list[str] = []
    for t in turns:
        r = reader.read(t.text, scenarios[t.scenario])
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
                f"  line {t.line}: {t.text!r}\n    label {sorted(t.acts)} {sorted(t.facts)}  read {rules}"
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


def _ratio(k: int, n: int) -> str:
    return f"{k / n:.3f}" if n else "n/a"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reader", action="append", help="rules, or module:attribute (repeatable)")
    ap.add_argument("--split", choices=("dev", "holdout", "all"), default="all")
    ap.add_argument("--errors", action="store_true", help="list misread turns")
    args = ap.parse_args(argv)
    library = ScenarioLibrary()
    scenarios = {k: library.get_locked(v) for k, v in SCENARIO_IDS.items()}
    readers = [resolve_reader(spec) for spec in args.reader or ["rules"]]
    splits = ("dev", "holdout") if args.split == "all" else (args.split,)
    for reader in readers:
        for split in splits:
            print(f"== reader {reader.name} on {split} ==")
            print(evaluate(reader, load_corpus(split), scenarios, args.errors and split == "dev"))
    for i, first in enumerate(readers):
        for second in readers[i + 1 :]:
            for split in splits:
                turns = load_corpus(split)
                same = sum(
                    first.read(t.text, scenarios[t.scenario]).act_names_set
                    == second.read(t.text, scenarios[t.scenario]).act_names_set
                    for t in turns
                )
                print(
                    f"== agreement {first.name} / {second.name} on {split}: same act set on "
                    f"{100.0 * same / len(turns):.1f}% of {len(turns)} turns =="
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
