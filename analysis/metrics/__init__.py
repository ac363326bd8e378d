"""Episode metrics, one small module per family, each computed from the event log alone."""

from analysis.metrics.catalogue import CATALOGUE, QUALITY_LABELS, MetricSpec
from analysis.metrics.extract import extract_metrics
from analysis.metrics.ingest import Ingested, Problem, ingest
from analysis.metrics.table import EventTable, from_events

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
]
