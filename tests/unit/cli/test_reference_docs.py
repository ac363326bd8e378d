"""The docs site's command-line and file-format references are generated from the product: a
command, option or model field added without regenerating them fails here."""

from __future__ import annotations

from pathlib import Path

from voice_audit.harness.reference_docs import CLI_PAGE, SCHEMA_PAGE, cli_markdown, schema_markdown

REFERENCE = Path(__file__).resolve().parents[3] / "docs" / "reference"
FIX = "regenerate with: .venv/bin/python -m voice_audit.harness.reference_docs docs/reference"


def test_cli_reference_matches_the_command_line() -> None:
    text = cli_markdown()
    for command in ("run", "stimuli", "analyze", "report", "agents serve", "rate", "check", "compare"):
        assert f"`voice-audit {command}`" in text, command
    assert "--no-stimulus-check" in text and "--scenario-dir" in text
    assert (REFERENCE / CLI_PAGE).read_text(encoding="utf-8") == text, FIX


def test_schema_reference_matches_the_schemas() -> None:
    text = schema_markdown()
    for name in ("campaign", "episode", "event", "run", "scenario", "audit_instance"):
        assert f"## {name}" in text, name
    assert "`stimulus`" in text
    assert (REFERENCE / SCHEMA_PAGE).read_text(encoding="utf-8") == text, FIX
