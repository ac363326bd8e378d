"""`voice-audit check` on golden-derived runs: a policy that holds, one that fails on an outcome gap,
one not evaluable for a failed gate; the exit codes, one line per verdict, JUnit XML valid against
the Jenkins JUnit schema, and the Markdown summary."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.helpers.collect_imports import LazyModule
from voice_audit.analysis.release import check_run, junit_xml, load_policy, markdown
from voice_audit.analysis.release.cli import check_cmd

xmlschema = LazyModule("xmlschema")  # imported by the first test that validates

XSD = Path(__file__).parents[2] / "fixtures" / "junit" / "junit-10.xsd"

HOLDS = """\
name: holds
diagnostic: allowed   # the golden calls carry no recordings and no ratings: no family is gated
rules:
  - family: terminal_outcome
    metric: outcome_acceptable
    tolerance: 0.05
    where: {agent: scripted}
  - family: path_burden
    metric: burden_repair
    tolerance: 0.5
    worse_for: b
    where: {agent: scripted}
"""

OUTCOME_GAP = """\
name: outcome-gap
diagnostic: allowed
rules:
  - family: terminal_outcome
    metric: outcome_acceptable
    tolerance: 0.05
    where: {agent: scripted}
"""

GATED_ONLY = """\
name: gated-only
rules:
  - family: terminal_outcome
    metric: outcome_acceptable
    tolerance: 0.05
    where: {agent: scripted}
"""


def _policy(tmp_path: Path, text: str, name: str = "policy.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _cli(run: Path, policy: Path, tmp_path: Path, env: dict[str, str] | None = None) -> tuple[int, str]:
    import typer

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
        env=env,
    )
    return res.exit_code, res.output


def test_a_fair_agent_shows_parity_only_when_its_interval_lies_inside(
    runs: Callable[[str], Path], tmp_path: Path
) -> None:
    # 8 pairs with equal outcomes: a - b = 0 with the interval [-0.32, 0.32]; a tolerance of 0.35 holds it
    code, out = _cli(runs("even"), _policy(tmp_path, HOLDS.replace("0.05", "0.35")), tmp_path)
    lines = out.strip().splitlines()
    assert code == 0, out
    assert len(lines) == 3  # one line per verdict, then the summary
    assert all(line.startswith("PARITY SHOWN ") for line in lines[:2])
    assert "-0.35 <= a - b <= 0.35" in lines[0]
    assert "a - b >= -0.5" in lines[1]  # more repair turns for b is the harm (higher is worse)
    assert "diagnostic evidence" in lines[0]
    record = json.loads((tmp_path / "check.json").read_text())
    assert record["exit_code"] == 0 and record["status"] == "parity" and record["run_complete"] is True
    assert record["policy_sha256"] == load_policy(tmp_path / "policy.yaml").sha256
    # the same estimate, a tolerance narrower than its interval: not a pass, its own verdict and exit code
    code, out = _cli(runs("even"), _policy(tmp_path, HOLDS), tmp_path)
    assert code == 4, out
    first = out.splitlines()[0]
    assert first.startswith("INCONCLUSIVE delta[0] terminal_outcome/outcome_acceptable")
    assert "parity would need about" in first and "pairs from about" in first
    result = check_run(runs("even"), load_policy(tmp_path / "policy.yaml"))
    v = result.verdicts[0]
    assert v.ci_low is not None and v.ci_low < -0.05 and v.ci_high is not None and v.ci_high > 0.05
    # the interval's half-width shrinks as 1 / sqrt(n): (0.32 / 0.05)^2 x 8 speakers, one pair each
    assert v.needed_pairs is not None and v.needed_speakers == v.needed_pairs
    assert v.needed_pairs == math.ceil(8 * (v.ci_high / 0.05) ** 2)


def test_policy_that_fails_on_an_outcome_gap(runs: Callable[[str], Path], tmp_path: Path) -> None:
    summary = tmp_path / "step_summary.md"
    summary.write_text("earlier step\n")
    code, out = _cli(
        runs("gap"), _policy(tmp_path, OUTCOME_GAP), tmp_path, env={"GITHUB_STEP_SUMMARY": str(summary)}
    )
    assert code == 1, out
    first = out.splitlines()[0]
    assert first.startswith("EXCEEDED delta[0] terminal_outcome/outcome_acceptable")
    result = check_run(runs("gap"), load_policy(tmp_path / "policy.yaml"))
    (v,) = result.verdicts
    assert v.estimate == 1.0 and v.ci_low is not None and v.ci_low > 0.05 and v.n_pairs == 8
    md = (tmp_path / "summary.md").read_text()
    assert md.startswith("### voice-audit check: ❌ a tolerance is exceeded")
    assert "| ❌ exceeded | delta[0] terminal_outcome/outcome_acceptable (a - b) |" in md
    assert "condition a minus condition b" in md
    assert summary.read_text() == "earlier step\n" + md  # appended, not overwritten


def test_only_gated_evidence_fails_unless_the_policy_allows_diagnostics(
    runs: Callable[[str], Path], tmp_path: Path
) -> None:
    code, out = _cli(runs("gap"), _policy(tmp_path, GATED_ONLY), tmp_path)
    assert code == 3, out
    assert out.startswith("NOT EVALUABLE") and "only gated evidence can decide a release" in out


def test_not_evaluable_for_a_failed_gate(runs: Callable[[str], Path], tmp_path: Path) -> None:
    code, out = _cli(runs("facts"), _policy(tmp_path, GATED_ONLY), tmp_path)
    assert code == 3, out
    assert "fact_invariance: {'pass': 6, 'fail': 2}" in out.splitlines()[0]
    root = xmlschema.XMLSchema(XSD)
    root.validate(str(tmp_path / "junit.xml"))
    xml = (tmp_path / "junit.xml").read_text()
    assert 'errors="1"' in xml and 'failures="0"' in xml and "<error " in xml


def test_too_few_pairs_is_not_evaluable(runs: Callable[[str], Path], tmp_path: Path) -> None:
    text = OUTCOME_GAP.replace("{agent: scripted}", "{agent: edge}")  # the edge agent's cell: one pair
    result = check_run(runs("gap"), load_policy(_policy(tmp_path, text)))
    (v,) = result.verdicts
    assert v.status == "not_evaluable" and "1 distinct pairs < min_pairs 6" in v.reasons
    assert result.exit_code == 3


def test_exceeded_outranks_not_evaluable_and_junit_validates(
    runs: Callable[[str], Path], tmp_path: Path
) -> None:
    text = OUTCOME_GAP.replace(
        "    where: {agent: scripted}\n", ""
    )  # both cells: scripted exceeds, edge too few
    result = check_run(runs("gap"), load_policy(_policy(tmp_path, text)))
    assert sorted(v.status for v in result.verdicts) == ["exceeded", "not_evaluable"]
    assert result.exit_code == 1
    xml = junit_xml(result)
    xmlschema.XMLSchema(XSD).validate(xml.decode())
    assert b'failures="1"' in xml and b'errors="1"' in xml and result.policy_sha256.encode() in xml
    assert markdown(result).count("\n| ") == 3  # header row plus one row per verdict


def test_an_unanalysed_run_is_bad_input(tmp_path: Path) -> None:
    from tests.helpers.runfolder import copy_golden

    run = copy_golden(tmp_path)
    code, out = _cli(run, _policy(tmp_path, HOLDS), tmp_path)
    assert code == 2
    assert "deltas.json" in out and "voice-audit analyze" in out


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        (
            "name: p\nrules:\n  - family: terminal_outcome\n    metric: outcome_acceptible\n    tolerance: 0.1\n",
            ":4:5:",
            "not a numeric metric",
        ),
        (
            "name: p\nrules:\n  - family: path_burden\n    metric: outcome_acceptable\n    tolerance: 0.1\n",
            ":4:5:",
            "belongs to family 'terminal_outcome'",
        ),
        (
            "name: p\nrules:\n  - family: path_burden\n    metric: burden_repair\n    tolerence: 0.1\n",
            ":5:5:",
            "unknown field",
        ),
        (
            "name: p\nrules:\n  - family: path_burden\n    metric: burden_repair\n    min_ratio: 0.8\n",
            ":5:5:",
            "not a rate",
        ),
        (
            "name: p\nrules:\n  - family: tool_behaviour\n    metric: tool_n_calls\n    tolerance: 1\n    worse_for: b\n",
            ":6:5:",
            "no harm direction",
        ),
        ("name: p\n", ":1:1:", "at least one entry"),
        ("name: p\nrules: [\n", ":3:1:", "invalid YAML"),
    ],
)
def test_policy_errors_are_positioned(tmp_path: Path, text: str, where: str, message: str) -> None:
    from voice_audit.scenarios import ConfigError

    path = _policy(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        load_policy(path)
    line = str(err.value)
    assert line.startswith(f"{path}{where}") and message in line and "\n" not in line
    assert "(fix: " in line


def test_a_policy_with_two_errors_gets_two_lines_each_at_its_field_with_its_fix(tmp_path: Path) -> None:
    from voice_audit.scenarios import ConfigError

    path = _policy(
        tmp_path,
        "name: p\nrules:\n  - family: terminal_outcome\n    metric: outcome_acceptible\n"
        "  - family: path_burden\n    metric: burden_repair\n    tolerence: 0.5\n",
    )
    with pytest.raises(ConfigError) as err:
        load_policy(path)
    lines = str(err.value).splitlines()
    assert len(lines) == 2, lines
    assert lines[0].startswith(f"{path}:4:5:") and "not a numeric metric" in lines[0]
    assert "(fix: use one of " in lines[0] and "outcome_acceptable" in lines[0]
    assert lines[1].startswith(f"{path}:7:5:") and "unknown field 'rules.1.tolerence'" in lines[1]
    assert "(fix: remove it or check its spelling)" in lines[1]
    code, out = _cli_err(path, tmp_path)
    assert code == 2 and out.count("voice-audit: error: ") == 2


def _cli_err(policy: Path, tmp_path: Path) -> tuple[int, str]:
    import typer

    app = typer.Typer()
    app.command()(check_cmd)
    res = CliRunner().invoke(app, [str(tmp_path), "--policy", str(policy)])
    return res.exit_code, res.output


def test_a_rule_without_tolerance_takes_the_plans_smallest_effect(
    runs: Callable[[str], Path], tmp_path: Path
) -> None:
    text = "name: p\ndiagnostic: allowed\nrules:\n  - family: terminal_outcome\n    metric: outcome_acceptable\n    where: {agent: scripted}\n"
    result = check_run(runs("even40"), load_policy(_policy(tmp_path, text)))
    (v,) = result.verdicts
    deltas = json.loads((runs("even40") / "deltas.json").read_text())
    margin = next(
        e["smallest_effect"]
        for c in deltas["cells"]
        if c["cell"]["agent"] == "scripted"
        for e in c["estimates"]
        if e["metric"] == "outcome_acceptable"
    )
    assert margin == 0.10 and (v.lowest, v.highest) == (-margin, margin) and v.tolerance_from == "plan"
    assert "the plan's smallest effect" in v.bound_text()
