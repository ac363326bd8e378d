"""The report tests share one analysed run per process and the full and redacted reports written once."""

from tests.helpers.report_run import full, fx, redacted, run_dir

__all__ = ["full", "fx", "redacted", "run_dir"]
