"""The differential-failure gate: harness-side missing data unbalanced between a cell's conditions."""

from __future__ import annotations

import pandas as pd

from voice_audit.analysis.gates.missingness import differential_failure, harness_failed


def _pairs(rows: list[tuple[str, str | None, str, str | None]], agent: str = "ag") -> pd.DataFrame:
    """rows: (status_a, kind_a, status_b, kind_b) per pair of one cell."""
    return pd.DataFrame(
        [
            {
                "pair_id": f"{agent}{i}",
                "agent": agent,
                "scenario_id": "sc",
                "contrast": "accent",
                "condition_key_a": "accent=us",
                "condition_key_b": "accent=es",
                "status_a": sa,
                "failure_kind_a": ka,
                "status_b": sb,
                "failure_kind_b": kb,
            }
            for i, (sa, ka, sb, kb) in enumerate(rows)
        ]
    )


OK = ("completed", None)
TTS_DOWN = ("failed", "audio_error")


def test_failures_of_one_condition_only_fail_the_cell_with_counts() -> None:
    rows = [(*OK, *TTS_DOWN)] * 9 + [(*OK, *OK)] * 3
    cells, by_pair = differential_failure(_pairs(rows), alpha=0.05, max_rate_difference=0.10)
    (c,) = cells
    assert c.verdict == "fail"
    assert (c.failed_a, c.failed_b, c.only_a, c.only_b, c.pairs) == (0, 9, 0, 9, 12)
    assert c.kinds_b == {"audio_error": 9} and c.kinds_a == {}
    assert c.p_value is not None and c.p_value < 0.01
    assert set(by_pair) == {"fail"} and len(by_pair) == 12


def test_balanced_failures_pass() -> None:
    rows = [(*TTS_DOWN, *OK), (*OK, *TTS_DOWN)] * 3 + [(*OK, *OK)] * 30
    cells, by_pair = differential_failure(_pairs(rows), alpha=0.05, max_rate_difference=0.10)
    assert [c.verdict for c in cells] == ["pass"]
    assert cells[0].p_value == 1.0
    assert set(by_pair) == {"pass"}


def test_rate_tolerance_catches_what_a_small_cell_cannot_test() -> None:
    rows = [(*OK, *TTS_DOWN)] + [(*OK, *OK)] * 2
    (c,), _ = differential_failure(_pairs(rows), alpha=0.05, max_rate_difference=0.10)
    assert c.p_value == 1.0 and abs(c.rate_difference + 1 / 3) < 1e-6
    assert c.verdict == "fail"
    (c,), _ = differential_failure(_pairs(rows), alpha=0.05, max_rate_difference=0.5)
    assert c.verdict == "pass"


def test_agent_side_kinds_are_outcomes_not_missing_data() -> None:
    status = pd.Series(["completed", "failed", "failed", "cancelled", "missing"])
    kind = pd.Series(["", "connect_failed", "audio_error", "", ""])
    assert harness_failed(status, kind).tolist() == [False, False, True, True, True]
    rows = [(*OK, "failed", "agent_error")] * 6
    (c,), _ = differential_failure(_pairs(rows), alpha=0.05, max_rate_difference=0.10)
    assert c.verdict == "pass" and c.failed_b == 0


def test_a_missing_partner_counts_in_its_own_cell() -> None:
    p = _pairs([(*OK, *OK)] * 4 + [(*OK, *OK)])
    p.loc[4, ["condition_key_b", "status_b", "failure_kind_b"]] = [None, None, None]
    other = _pairs([(*OK, *OK)] * 5, agent="other")
    cells, by_pair = differential_failure(
        pd.concat([p, other], ignore_index=True), alpha=0.05, max_rate_difference=0.10
    )
    assert len(cells) == 2
    ag = next(c for c in cells if c.cell["agent"] == "ag")
    assert ag.pairs == 5 and ag.failed_b == 1 and ag.kinds_b == {"missing": 1} and ag.verdict == "fail"
    assert by_pair["other0"] == "pass" and by_pair["ag4"] == "fail"
