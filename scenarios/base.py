"""The base of every data model: frozen, unknown fields refused, canonical JSON for hashing."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pydantic import BaseModel, ConfigDict


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def canonical_json(data: Any) -> str:
    """One serialisation for hashing: sorted keys, no whitespace, UTF-8, no NaN."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def sha256_of(data: Any) -> str:
    if isinstance(data, BaseModel):
        data = data.model_dump(mode="json")
    return hashlib.sha256(canonical_json(data).encode("utf-8")).hexdigest()
