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


def _turns(split: str) -> list[dict[str, Any]]:
    data = yaml.safe_load((CORPUS / f"{split}.yaml").read_text(encoding="utf-8"))
    assert data["split"] == split
    return list(data["turns"])


def test_corpus_size_split_and_labels() -> None:
    dev, held = _turns("dev"), _turns("holdout")
    assert len(dev) + len(held) >= 400
    assert 0.25 <= len(held) / (len(dev) + len(held)) <= 0.35
    for turn in dev + held:
        assert turn["s"] in ("refund", "outage", "plan")
        assert turn["a"] and set(turn["a"]) <= set(ACTS), turn
        assert set(turn.get("f", ())) <= set(CALLER_FACTS), turn
        assert "other" not in turn["a"] or turn["a"] == ["other"], turn
    assert not {str(t["t"]) for t in dev} & {str(t["t"]) for t in held}
    for split in (dev, held):
        assert {t["s"] for t in split} == {"refund", "outage", "plan"}


def test_rule_reader_meets_the_target_on_the_dev_part() -> None:
    out = subprocess.run(
        [sys.executable, "benchmarks/observer.py", "--split", "dev"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    m = re.search(r"read exactly as labelled\s+([\d.]+)%", out)
    assert m is not None, out
    assert float(m.group(1)) >= 97.0, out
    assert "confusion of primary acts" in out and "repair_request" in out
