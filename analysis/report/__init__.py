"""Matched-pair reports of an analysed run: one model (`build_report`) rendered as HTML, Markdown and JSON.

`voice-audit report RUN -o DIR` is `voice_audit.analysis.report.cli:report_cmd`.
"""

from voice_audit.analysis.report.build import Built, build_report
from voice_audit.analysis.report.model import REPORT_SCHEMA, Report
from voice_audit.analysis.report.render import render_html, render_json, render_markdown, write_report

__all__ = [
    "REPORT_SCHEMA",
    "Built",
    "Report",
    "build_report",
    "render_html",
    "render_json",
    "render_markdown",
    "write_report",
]
