"""Every property of the emitted scenario and campaign JSON Schemas says what it is (`voice-audit schema`)."""

from __future__ import annotations

from typing import Any

from harness.schemas import schema_documents


def undocumented(doc: dict[str, Any]) -> list[str]:
    """Every property, at the top level and in every definition, that has no description."""
    nodes = [(str(doc.get("title", "root")), doc), *doc.get("$defs", {}).items()]
    return [
        f"{name}.{prop}"
        for name, node in nodes
        for prop, spec in (node.get("properties") or {}).items()
        if not str(spec.get("description", "")).strip()
    ]


def test_every_scenario_and_campaign_field_has_a_description() -> None:
    docs = schema_documents()
    assert undocumented(docs["scenario"]) == []
    assert undocumented(docs["campaign"]) == []


def test_the_walk_finds_an_undocumented_property() -> None:
    doc = {"title": "T", "properties": {"a": {"type": "string"}}, "$defs": {"D": {"properties": {"b": {"description": "x"}}}}}
    assert undocumented(doc) == ["T.a"]
