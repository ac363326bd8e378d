"""Episode metrics, one small module per family, each computed from the event log alone."""

from voice_audit.analysis.metrics._episodes import voice_id
from voice_audit.analysis.metrics.catalogue import CATALOGUE, QUALITY_LABELS, MetricSpec
from voice_audit.analysis.metrics.extract import extract_metrics
from voice_audit.analysis.metrics.ingest import Ingested, Problem, ingest
from voice_audit.analysis.metrics.table import EventTable, from_events

__all__ = [
    "CATALOGUE",
    "QUALITY_LABELS",
    "EventTable",
    "Ingested",
    "MetricSpec",
    "Problem",
    "extract_metrics",
    "from_events",
    "ingest",
    "voice_id",
]
