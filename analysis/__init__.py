"""Analysis: turns run folders into metrics, gates, paired statistics, subgroups and reports.

It reads run folders and imports only the data model (`harness.model`, `harness.rundir`) and pure
signal code (`harness.audio.dsp`); it never imports the runtime. The names below load their
modules on first use, so `import analysis` stays cheap.

- `analyze(run_dir)` -> `AnalysisResult`: metrics, pairing and tool parity, the seven gates,
  paired deltas (condition a minus condition b) and the claim disposition, written into the run.
- `PairedMetricFrame`, `paired_risk_difference`, `paired_mean_delta`: the statistics.
- `run_subgroups(run_dir)`, `plan_followup(...)`: subgroup discovery and targeted follow-up.
- `build_report(...)`, `write_report(...)`: the matched-pair report.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "analyze": "analysis.pipeline",
    "AnalysisResult": "analysis.pipeline",
    "load_plan": "analysis.plan",
    "AnalysisPlan": "analysis.plan",
    "PairedMetricFrame": "analysis.stats",
    "Estimate": "analysis.stats",
    "paired_risk_difference": "analysis.stats",
    "paired_mean_delta": "analysis.stats",
    "path_burden_delta": "analysis.stats",
    "run_subgroups": "analysis.subgroups_run",
    "plan_followup": "analysis.subgroups_run",
    "mine": "analysis.subgroups",
    "build_report": "analysis.report",
    "write_report": "analysis.report",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'analysis' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
