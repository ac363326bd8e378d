"""The runtime: campaign planning, callers, clocks, transports, artifact logs and the CLI.

Importing `harness` loads nothing else: the names below come from their modules on first use
(PEP 562), so `analysis` can import `voice_audit.harness.model` or `voice_audit.harness.runlog` without loading planning,
the registry or any audio engine.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from voice_audit.harness.planning import LoadedCampaign, Plan, PlannedEpisode, load_campaign
    from voice_audit.harness.runlog import RunFolderError, RunReader, RunWriter

_LAZY: dict[str, str] = {
    "LoadedCampaign": "voice_audit.harness.planning",
    "Plan": "voice_audit.harness.planning",
    "PlannedEpisode": "voice_audit.harness.planning",
    "load_campaign": "voice_audit.harness.planning",
    "RunFolderError": "voice_audit.harness.runlog",
    "RunReader": "voice_audit.harness.runlog",
    "RunWriter": "voice_audit.harness.runlog",
}

__all__ = [
    "LoadedCampaign",
    "Plan",
    "PlannedEpisode",
    "RunFolderError",
    "RunReader",
    "RunWriter",
    "load_campaign",
]


def __getattr__(name: str) -> Any:
    try:
        module = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
