"""Analysis: turns run folders into metrics, gates, paired statistics, subgroups and reports.

It reads run folders and imports only the data model (`voice_audit.harness.model`, `voice_audit.harness.runlog`) and pure
signal code (`voice_audit.harness.audio.dsp`); it never imports the runtime. The names below load their
modules on first use, so `import voice_audit.analysis` stays cheap.

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
    "analyze": "voice_audit.analysis.pipeline",
    "AnalysisResult": "voice_audit.analysis.pipeline",
    "load_plan": "voice_audit.analysis.plan",
    "AnalysisPlan": "voice_audit.analysis.plan",
    "PairedMetricFrame": "voice_audit.analysis.stats",
    "Estimate": "voice_audit.analysis.stats",
    "paired_risk_difference": "voice_audit.analysis.stats",
    "paired_mean_delta": "voice_audit.analysis.stats",
    "path_burden_delta": "voice_audit.analysis.stats",
    "run_subgroups": "voice_audit.analysis.subgroups_run",
    "plan_followup": "voice_audit.analysis.subgroups_run",
    "mine": "voice_audit.analysis.subgroups",
    "build_report": "voice_audit.analysis.report",
    "write_report": "voice_audit.analysis.report",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
