"""The files `voice-audit analyze` writes into a run folder: what the report reads and what a rerun replaces."""

from __future__ import annotations

OUTPUTS: tuple[str, ...] = (
    "metrics.parquet",
    "pairs.parquet",
    "gates.json",
    "deltas.json",
    "disposition.json",
    "audit_instances.jsonl",
    "analysis.json",
)
