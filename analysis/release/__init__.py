"""Release audits: a policy verdict on an analysed run (`voice-audit check`) and two versions side by
side (`voice-audit compare`).

- `load_policy(path)` -> `LoadedPolicy`: a validated, hashed `Policy` (rules on a - b deltas,
  changes on new - old comparisons).
- `check_run(run_dir, loaded, compare=None)` -> `CheckResult`: one `Verdict` per rule and cell
  (parity shown, exceeded, inconclusive or not evaluable), an exit code (0 parity, 1 exceeded,
  3 not evaluable, 4 inconclusive unless the policy warns; 2 is bad input).
- `compare_runs(old, new)` -> the comparison document; `write_comparison(doc, dir)`.
- `junit_xml(result)`, `markdown(result)`: the verdicts for CI and for a pull-request comment.
"""

from voice_audit.analysis.release.check import EXIT_CODES, CheckResult, Verdict, check_run
from voice_audit.analysis.release.compare import (
    compare_runs,
    largest_changes,
    write_comparison,
)
from voice_audit.analysis.release.documents import COMPARISON_JSON
from voice_audit.analysis.release.junit import junit_xml, markdown
from voice_audit.analysis.release.policy import ChangeRule, LoadedPolicy, Policy, Rule, load_policy

__all__ = [
    "COMPARISON_JSON",
    "EXIT_CODES",
    "ChangeRule",
    "CheckResult",
    "LoadedPolicy",
    "Policy",
    "Rule",
    "Verdict",
    "check_run",
    "compare_runs",
    "junit_xml",
    "largest_changes",
    "load_policy",
    "markdown",
    "write_comparison",
]
