"""A file's SHA-256, the one implementation every package uses to check pinned files (models,
voices, encoders) and to key caches by content."""

from __future__ import annotations

import hashlib
from pathlib import Path

__all__ = ["file_sha256"]


def file_sha256(path: str | Path) -> str:
    """The hex SHA-256 of the file's bytes, read in blocks (`hashlib.file_digest`)."""
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()
