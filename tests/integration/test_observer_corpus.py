"""The observer corpus and its benchmark: size, split, valid labels, and the rule reader on the dev part."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from voice_audit.harness.caller import ACTS
from voice_audit.scenarios import CALLER_FACTS

ROOT = Path(__file__).parents[2]
CORPUS = ROOT / "tests" / "fixtures" / "observer"
# libyaml's safe loader where PyYAML has it: the same objects for a sixth of the CPU
SAFE_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
SCENARIO_KEYS = ("refund", "outage", "plan", "unlock", "dispute", "cancel")


def _turns(split: str) -> list[dict[str, Any]]:
    """Every turn of every corpus file whose `split:` key names `split`."""
    turns: list[dict[str, Any]] = []
    for path in sorted(CORPUS.glob("*.yaml")):
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=SAFE_LOADER)
        if data["split"] == split:
            turns += list(data["turns"])
    return turns


def test_corpus_size_split_and_labels() -> None:
    dev, held = _turns("dev"), _turns("holdout")
    # counts taken apart: pytest prints the operands of a failed assertion, and the lists would
    # print every held-out turn's words
    n_dev, n_held = len(dev), len(held)
    assert n_dev + n_held >= 400
    # the development part grows with each development batch, the held-out part with files
    # written apart from the rules: it stays a fifth of the corpus or more
    assert n_held >= 250 and n_held / (n_dev + n_held) >= 0.2
    # failures name the split and position, never a held-out turn's words
    for name, split in (("dev", dev), ("holdout", held)):
        for i, turn in enumerate(split):
            where = f"{name} turn {i}"
            assert turn["s"] in SCENARIO_KEYS, where
            assert turn["a"] and set(turn["a"]) <= set(ACTS), where
            assert set(turn.get("f", ())) <= set(CALLER_FACTS), where
            assert "other" not in turn["a"] or turn["a"] == ["other"], where
        assert {"refund", "outage", "plan"} <= {t["s"] for t in split}, name
    shared = len({str(t["t"]) for t in dev} & {str(t["t"]) for t in held})
    assert shared == 0, f"{shared} turns are in both splits"


RULES_DEVELOPED_ON = ("dev.yaml", "dev_safety.yaml")
"""The development files the rule reader was tuned on; `dev_model.yaml` is the turn model's
training batch, which the rules were never tuned on (they read it as a new batch)."""


def test_rule_reader_meets_the_target_on_the_dev_part() -> None:
    files = [arg for name in RULES_DEVELOPED_ON for arg in ("--file", name)]
    out = subprocess.run(
        [sys.executable, "benchmarks/observer.py", "--split", "dev", *files],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    m = re.search(r"read exactly as labelled\s+([\d.]+)%", out)
    assert m is not None, out
    assert float(m.group(1)) >= 97.0, out
    assert "confusion of primary acts" in out and "repair_request" in out
    table = out[out.index("== safety figures") :]
    row = next(ln for ln in table.splitlines() if ln.startswith("rules") and " dev " in ln)
    recall = [float(v) for v in re.findall(r"([\d.]+)% \(\d+/\d+\)", row)]
    # accuracy, denial recall, denial FPR, repair recall, repair FPR on the development part
    assert recall[1] >= 95.0 and recall[2] <= 5.0 and recall[3] >= 95.0 and recall[4] <= 5.0, row


def test_every_corpus_file_of_a_split_is_read_and_named_in_the_table() -> None:
    out = subprocess.run(
        [sys.executable, "benchmarks/observer.py", "--split", "dev", "--brief"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    dev_files = [
        p.name
        for p in sorted(CORPUS.glob("*.yaml"))
        if yaml.load(p.read_text(encoding="utf-8"), Loader=SAFE_LOADER)["split"] == "dev"
    ]
    assert len(dev_files) >= 2
    for name in dev_files:
        assert f"  {name}" in out, out
    total = int(re.search(r"^rules\s+dev\s+(\d+)", out, re.M).group(1))  # type: ignore[union-attr]
    assert total == len(_turns("dev"))
