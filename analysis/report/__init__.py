"""Matched-pair reports of an analysed run: one model (`build_report`) rendered as HTML, Markdown and JSON.

`voice-audit report RUN -o DIR` is `analysis.report.cli:report_cmd`.
"""

from analysis.report.build import Built, build_report
from analysis.report.model import REPORT_SCHEMA, Report
from analysis.report.render import render_html, render_json, render_markdown, write_report

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
