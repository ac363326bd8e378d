"""Release verdicts that mean parity, on golden-derived runs: a planted 4-of-8 disparity is no pass, a
straddling interval is inconclusive (its own exit code, or a warning), the four-fifths rule fails the
disparity and shows parity for the fair agent only with enough pairs, a deterministic agent's identical
replicates count once per speaker, and a budget stop or missing pairs are named in every output."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import typer
from typer.testing import CliRunner

from tests.helpers.collect_imports import LazyModule
from voice_audit.analysis.release import check_run, junit_xml, load_policy, markdown
from voice_audit.analysis.release.check import EXIT_CODES
from voice_audit.analysis.release.cli import check_cmd

xmlschema = LazyModule("xmlschema")  # imported by the first test that validates

XSD = Path(__file__).parents[2] / "fixtures" / "junit" / "junit-10.xsd"
RULE = """\
name: {name}
diagnostic: allowed   # the golden calls carry no recordings and no ratings: no family is gated
min_pairs: 4
{extra}rules:
  - family: terminal_outcome
    metric: outcome_acceptable
    {bound}
    where: {{agent: scripted}}
"""


def _policy(tmp_path: Path, bound: str, name: str = "p", extra: str = "") -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(RULE.format(name=name, bound=bound, extra=extra))
    return path


def _cli(run: Path, policy: Path, tmp_path: Path) -> tuple[int, str]:
    app = typer.Typer()
    app.command()(check_cmd)
    res = CliRunner().invoke(
        app,
        [
            str(run),
            "--policy",
            str(policy),
            "--markdown",
            str(tmp_path / "summary.md"),
            "--junit",
            str(tmp_path / "junit.xml"),
            "--json",
            str(tmp_path / "check.json"),
        ],
    )
    return res.exit_code, res.output


def test_a_planted_four_of_eight_disparity_is_not_a_pass(runs: Callable[[str], Path], tmp_path: Path) -> None:
    result = check_run(runs("half"), load_policy(_policy(tmp_path, "tolerance: 0.2")))
    (v,) = result.verdicts
    assert v.estimate == 0.5 and v.ci_low is not None and v.ci_high is not None
    assert v.ci_low < 0.2 < v.ci_high  # the interval reaches across the tolerance
    assert v.status == "inconclusive" and result.exit_code == EXIT_CODES["inconclusive"] != 0
    assert v.needed_pairs is None  # the estimate itself lies beyond: no sample size shows parity
    assert "no sample size shows parity" in v.line()


def test_straddling_is_inconclusive_and_the_policy_may_make_it_a_warning(
    runs: Callable[[str], Path], tmp_path: Path
) -> None:
    code, out = _cli(runs("even"), _policy(tmp_path, "tolerance: 0.2"), tmp_path)
    assert code == 4, out
    assert out.startswith("INCONCLUSIVE ") and "check INCONCLUSIVE" in out
    assert "❔ inconclusive" in (tmp_path / "summary.md").read_text()
    xml = (tmp_path / "junit.xml").read_text()
    assert 'type="inconclusive"' in xml and 'failures="1"' in xml
    xmlschema.XMLSchema(XSD).validate(str(tmp_path / "junit.xml"))
    code, out = _cli(
        runs("even"), _policy(tmp_path, "tolerance: 0.2", extra="inconclusive: warn\n"), tmp_path
    )
    assert code == 0, out
    assert out.startswith("INCONCLUSIVE ") and "(policy: inconclusive warns)" in out
    assert json.loads((tmp_path / "check.json").read_text())["status"] == "inconclusive"
    assert 'failures="0"' in (tmp_path / "junit.xml").read_text()


def test_the_four_fifths_rule(runs: Callable[[str], Path], tmp_path: Path) -> None:
    policy = load_policy(_policy(tmp_path, "min_ratio: 0.8"))
    # every b caller unserved: the lower rate over the higher is 0, its interval wholly below 0.8
    (gap,) = check_run(runs("gap"), policy).verdicts
    assert gap.status == "exceeded" and gap.estimate == 0.0 and gap.ci_high is not None and gap.ci_high < 0.8
    assert gap.quantity == "lower rate / higher rate" and gap.bound_text().startswith(
        "lower rate / higher rate >= 0.8"
    )
    # 4 of 8 b callers unserved: b's rate is half of a's; not a pass
    half = check_run(runs("half"), policy)
    (v,) = half.verdicts
    assert v.estimate == 0.5 and v.status != "parity" and half.exit_code != 0
    assert v.method is not None and "rate b / rate a" in v.method
    # the fair agent: 8 pairs cannot show it, 40 pairs show parity (the whole interval above 0.8)
    (fair8,) = check_run(runs("even"), policy).verdicts
    assert fair8.estimate == 1.0 and fair8.status == "inconclusive"
    assert fair8.needed_pairs is not None and fair8.needed_pairs > 8
    fair40 = check_run(runs("even40"), policy)
    (v40,) = fair40.verdicts
    assert v40.status == "parity" and v40.ci_low is not None and v40.ci_low >= 0.8 and fair40.exit_code == 0


def test_identical_replicates_count_once_per_speaker(runs: Callable[[str], Path], tmp_path: Path) -> None:
    def cell(kind: str) -> dict:
        deltas = json.loads((runs(kind) / "deltas.json").read_text())
        (c,) = [c for c in deltas["cells"] if c["cell"]["agent"] == "scripted"]
        return c

    # one voice per condition, 8 identical replicates: the estimate, no interval, said why
    one = cell("one_voice")
    assert one["n_voices"] == 1 and one["n_pairs"] == 8
    for e in one["estimates"]:
        if e["estimate"] is not None:
            assert (
                e["ci_low"] is None and e["ci_high"] is None and e["no_interval"] == "no interval: 1 speaker"
            )
    result = check_run(runs("one_voice"), load_policy(_policy(tmp_path, "tolerance: 0.5")))
    (v,) = result.verdicts
    assert v.status == "not_evaluable" and "no interval: 1 speaker" in v.line()
    # 4 voices x 2 identical replicates: intervals over the 4 speakers, never of zero width
    four = cell("four_voices")
    assert four["n_voices"] == 4
    widths = [
        (e["metric"], e["ci_high"] - e["ci_low"])
        for e in four["estimates"]
        if e["ci_low"] is not None and e["ci_high"] is not None
    ]
    assert widths and all(w > 0 for _, w in widths), widths
    acceptable = next(e for e in four["estimates"] if e["metric"] == "outcome_acceptable")
    assert acceptable["n_clusters"] == 4 and acceptable["no_interval"] is None
    # a verdict on the 4 speakers: parity against a tolerance the interval fits in, a verdict either way
    (v4,) = check_run(runs("four_voices"), load_policy(_policy(tmp_path, "tolerance: 0.6"))).verdicts
    assert v4.status == "parity" and v4.n_speakers == 4


def test_a_budget_stop_and_missing_pairs_are_named_in_every_output(
    runs: Callable[[str], Path], tmp_path: Path
) -> None:
    for kind, words in (
        ("budget", "stopped by its budget (max_calls) after 4 of 8"),
        ("missing", "missing pairs"),
    ):
        code, out = _cli(runs(kind), _policy(tmp_path, "tolerance: 0.5"), tmp_path)
        assert code in (0, 4), out
        lines = out.strip().splitlines()
        assert lines[0].startswith("RUN INCOMPLETE: ") and words in lines[0]
        assert all(words in line for line in lines), out  # every verdict line and the summary
        md = (tmp_path / "summary.md").read_text()
        assert "**Run incomplete:**" in md and words in md
        record = json.loads((tmp_path / "check.json").read_text())
        assert record["run_complete"] is False and any(words in n for n in record["incomplete"])
        assert all(any(words in r for r in v["reasons"]) for v in record["verdicts"])
        xml = (tmp_path / "junit.xml").read_text()
        assert 'name="run_incomplete"' in xml and words in xml
    result = check_run(runs("missing"), load_policy(_policy(tmp_path, "tolerance: 0.5")))
    assert result.incomplete == ("missing pairs: 4 of 9 planned pairs have no calls",)
    assert "RUN INCOMPLETE" in result.summary_line() and "RUN INCOMPLETE" in junit_xml(result).decode()
    assert "Run incomplete" in markdown(result)
