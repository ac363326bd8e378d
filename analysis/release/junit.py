"""A check's verdicts as JUnit XML (any CI shows them as tests) and as Markdown (a pull-request comment).

JUnit mapping: one testsuite per kind (deltas of the run, changes against the old version), one
testcase per rule and cell; `exceeded` is a <failure>, `inconclusive` a <failure> of its own type
(parity not shown; under the policy's `inconclusive: warn` a passing case whose output says so),
`not_evaluable` an <error> (the check could not decide: not a pass, not a regression). The policy's
hashes, and a run's incompleteness (budget stop, missing pairs), are testsuite properties; the
incompleteness is also in every testcase's text.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from voice_audit.analysis.release.check import CheckResult, Verdict
from voice_audit.analysis.stats import CONVENTION_SENTENCE

_ICON = {"parity": "✅", "exceeded": "❌", "inconclusive": "❔", "not_evaluable": "⚠️"}
_WORD = {
    "parity": "parity shown",
    "exceeded": "exceeded",
    "inconclusive": "inconclusive",
    "not_evaluable": "not evaluable",
}


def _case(parent: ET.Element, v: Verdict, classname: str, warn_inconclusive: bool) -> None:
    case = ET.SubElement(parent, "testcase", name=f"{v.name} | {v.label}", classname=classname, time="0")
    text = v.line()
    if v.status == "exceeded" or (v.status == "inconclusive" and not warn_inconclusive):
        ET.SubElement(
            case, "failure", message=f"{v.evidence_text()} vs {v.bound_text()}", type=v.status
        ).text = text
    elif v.status == "not_evaluable":
        ET.SubElement(
            case, "error", message="; ".join(v.reasons) or "not evaluable", type="not_evaluable"
        ).text = text
    else:
        ET.SubElement(case, "system-out").text = text


def junit_xml(result: CheckResult) -> bytes:
    """The verdicts as a <testsuites> document (the Jenkins/Ant JUnit schema)."""
    root = ET.Element("testsuites", name=f"voice-audit check {result.policy_name}")
    kinds = [("delta", "paired deltas (a - b)"), ("change", "changes against the old version (new - old)")]
    totals = {"tests": 0, "failures": 0, "errors": 0}
    warn = result.inconclusive_policy == "warn"
    for i, (kind, title) in enumerate(kinds):
        verdicts = [v for v in result.verdicts if v.kind == kind]
        if not verdicts:
            continue
        counts = {
            "tests": len(verdicts),
            "failures": sum(
                v.status == "exceeded" or (v.status == "inconclusive" and not warn) for v in verdicts
            ),
            "errors": sum(v.status == "not_evaluable" for v in verdicts),
        }
        for k in totals:
            totals[k] += counts[k]
        suite = ET.SubElement(
            root,
            "testsuite",
            name=f"{result.policy_name}: {title}",
            id=str(i),
            package="voice-audit.check",
            hostname="localhost",
            timestamp=_now(),
            tests=str(counts["tests"]),
            failures=str(counts["failures"]),
            errors=str(counts["errors"]),
            skipped="0",
            time="0",
        )
        props = ET.SubElement(suite, "properties")
        for name, value in (
            ("policy", result.policy_path),
            ("policy_sha256", result.policy_sha256),
            ("policy_file_sha256", result.policy_file_sha256),
            ("run_id", result.run_id),
            ("convention", result.convention),
            ("inconclusive", result.inconclusive_policy),
            ("run_incomplete", "; ".join(result.incomplete) or "no"),
        ):
            ET.SubElement(props, "property", name=name, value=value)
        for v in verdicts:
            _case(suite, v, f"voice_audit.check.{kind}.{v.family}", warn)
        ET.SubElement(suite, "system-out").text = result.summary_line()
        ET.SubElement(suite, "system-err").text = ""
    for k, n in totals.items():
        root.set(k, str(n))
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True)


def _now() -> str:
    from datetime import UTC, datetime

    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(result: CheckResult) -> str:
    """A summary fit for a pull-request comment or $GITHUB_STEP_SUMMARY."""
    c = result.counts()
    head = {
        "parity": "✅ parity shown",
        "exceeded": "❌ a tolerance is exceeded",
        "inconclusive": "❔ inconclusive: parity not shown"
        + (" (policy: warn)" if result.inconclusive_policy == "warn" else ""),
        "not_evaluable": "⚠️ not evaluable",
    }
    lines = [f"### voice-audit check: {head[result.status]}", ""]
    if result.incomplete:
        lines += [f"**Run incomplete:** {_cell('; '.join(result.incomplete))}.", ""]
    lines += [
        f"Policy **{result.policy_name}** (`{result.policy_path}`, sha256 `{result.policy_sha256[:16]}`) on run "
        f"`{result.run_id}`: {c['exceeded']} exceeded, {c['not_evaluable']} not evaluable, {c['inconclusive']} "
        f"inconclusive, {c['parity']} parity shown (exit {result.exit_code}).",
        "",
        f"_{CONVENTION_SENTENCE} Changes between versions are new - old. A rule shows parity only when its whole "
        "interval lies within the tolerance, is exceeded only when its whole interval lies beyond it, and is "
        "inconclusive otherwise._",
        "",
        "| | rule | cell | estimate [interval], pairs | tolerated | note |",
        "|---|---|---|---|---|---|",
    ]
    order = {"exceeded": 0, "inconclusive": 1, "not_evaluable": 2, "parity": 3}
    for v in sorted(result.verdicts, key=lambda v: order[v.status]):
        note = "; ".join(v.notes())
        if v.diagnostic:
            note = "diagnostic evidence (gates not passed; policy allows it)" + (f"; {note}" if note else "")
        lines.append(
            f"| {_ICON[v.status]} {_WORD[v.status]} | {_cell(v.name)} | {_cell(v.label)} | {_cell(v.evidence_text())} | "
            f"{_cell(v.bound_text())} | {_cell(note)} |"
        )
    return "\n".join(lines) + "\n"
