"""Every property of every JSON Schema `voice-audit schema` writes says what it is, and every id,
hash and date shows its format by example."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from typer.testing import CliRunner

from voice_audit.harness.cli import app
from voice_audit.harness.schemas import schema_documents

_NEEDS_EXAMPLE = re.compile(r"(^|_)(id|sha256)$")


def _properties(doc: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    nodes = [(str(doc.get("title", "root")), doc), *doc.get("$defs", {}).items()]
    return [
        (name, prop, spec) for name, node in nodes for prop, spec in (node.get("properties") or {}).items()
    ]


def _formats(spec: dict[str, Any]) -> set[str]:
    return {str(s["format"]) for s in (spec, *spec.get("anyOf", ())) if "format" in s}


def undocumented(doc: dict[str, Any]) -> list[str]:
    """Every property, at the top level and in every definition, that has no description."""
    return [
        f"{name}.{prop}"
        for name, prop, spec in _properties(doc)
        if not str(spec.get("description", "")).strip()
    ]


def without_examples(doc: dict[str, Any]) -> list[str]:
    """Every id, hash, date or timestamp property whose format no example shows."""
    return [
        f"{name}.{prop}"
        for name, prop, spec in _properties(doc)
        if (_NEEDS_EXAMPLE.search(prop) or _formats(spec) & {"date", "date-time"})
        and not spec.get("examples")
    ]


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """The schemas exactly as `voice-audit schema -o DIR` writes them."""
    out = tmp_path_factory.mktemp("schemas")
    res = CliRunner().invoke(app, ["schema", "-o", str(out)])
    assert res.exit_code == 0, res.output
    return {
        p.name.removesuffix(".schema.json"): json.loads(p.read_text()) for p in sorted(out.glob("*.json"))
    }


def test_the_command_writes_every_schema(written: dict[str, dict[str, Any]]) -> None:
    assert set(written) == set(schema_documents())
    assert {"scenario", "campaign", "episode", "run", "event", "audit_instance"} <= set(written)
    for name, doc in written.items():
        assert len(_properties(doc)) >= 5, f"{name}: the walk found almost no properties"


def test_every_field_of_every_written_schema_has_a_description(written: dict[str, dict[str, Any]]) -> None:
    assert {name: undocumented(doc) for name, doc in written.items() if undocumented(doc)} == {}


def test_every_id_hash_and_date_has_an_example(written: dict[str, dict[str, Any]]) -> None:
    assert {name: without_examples(doc) for name, doc in written.items() if without_examples(doc)} == {}


def test_persona_and_event_fields_are_reached(written: dict[str, dict[str, Any]]) -> None:
    episode = {f"{n}.{p}" for n, p, _ in _properties(written["episode"])}
    assert {"CallerCondition.accent", "SpeechParams.rate_wpm", "Exposure.tool_trace"} <= episode
    events = {n for n, _, _ in _properties(written["event"])}
    assert {"CallStarted", "ToolResult", "HangUp", "AgentYield"} <= events
    assert all(
        re.search(r"\bms\b", spec["description"])
        for n, p, spec in _properties(written["event"])
        if p.endswith("_ms")
    ), "a duration must name its unit"


def test_the_walk_finds_an_undocumented_property() -> None:
    doc = {
        "title": "T",
        "properties": {"a": {"type": "string"}},
        "$defs": {"D": {"properties": {"b": {"description": "x"}}}},
    }
    assert undocumented(doc) == ["T.a"]


def test_the_walk_finds_an_id_hash_or_date_without_an_example() -> None:
    doc = {
        "title": "T",
        "properties": {
            "run_id": {"description": "x"},
            "sha256": {"description": "x", "examples": ["ab"]},
            "when": {
                "description": "x",
                "anyOf": [{"type": "string", "format": "date-time"}, {"type": "null"}],
            },
            "valid": {"description": "x"},
        },
        "$defs": {"D": {"properties": {"facts_sha256": {"description": "x", "examples": []}}}},
    }
    assert without_examples(doc) == ["T.run_id", "T.when", "D.facts_sha256"]
