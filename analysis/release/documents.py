"""What `check` and `compare` both read: the documents' names, JSON loading with a fix, cell labels.

Its own module so that the check (which reads a comparison) and the comparison (which labels cells the
way the check prints them) both depend on it and not on each other.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from voice_audit.scenarios import ConfigError

CHECK_JSON = "check.json"
COMPARISON_JSON = "comparison.json"


def short_label(cell: dict[str, str]) -> str:
    """agent | scenario | the contrast's levels, a vs b (the full condition keys are in `cell`)."""
    axes = [x for x in cell.get("contrast", "").split(",") if x]

    def levels(key: str) -> str:
        parts = dict(p.split("=", 1) for p in cell.get(key, "").split("|") if "=" in p)
        shown = [f"{a}={parts[a]}" for a in axes if a in parts]
        return ",".join(shown) or cell.get(key, "") or "-"

    head = " | ".join(x for x in (cell.get("agent", ""), cell.get("scenario_id", "")) if x)
    return f"{head} | a: {levels('condition_key_a')} vs b: {levels('condition_key_b')}"


def read_json(path: Path, what: str, fix: str) -> dict[str, Any]:
    """A JSON object from `path`; a missing or broken file is one ConfigError naming `fix`."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{what} not found", path=path, fix=fix) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{what} is not valid JSON ({exc})", path=path, fix=fix) from None
    if not isinstance(data, dict):
        raise ConfigError(f"{what} is not a JSON object", path=path, fix=fix)
    return data
