"""Content-addressed caches: an in-memory LRU in front of an optional on-disk store.

Keys are sha256 digests of everything that determines the output, so a hit is exact by
construction and a cache directory can be shared between runs and processes. Disk writes go to
a temporary file that is renamed into place, so a killed run never leaves a torn entry.
"""

from __future__ import annotations

import hashlib
import io
import json
import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any, Generic, TypeVar

import numpy as np

from voice_audit.harness.audio.types import Synthesis, Transcript
from voice_audit.scenarios.atomic import atomic_write_bytes
from voice_audit.scenarios.base import canonical_json

T = TypeVar("T")


def content_key(**parts: Any) -> str:
    return hashlib.sha256(canonical_json(parts).encode("utf-8")).hexdigest()


class ContentCache(Generic[T]):
    """Memory LRU (bounded by entry count) plus an optional directory of atomically written blobs."""

    def __init__(
        self,
        dump: Callable[[T], bytes],
        load: Callable[[bytes], T],
        *,
        max_items: int = 2048,
        directory: str | Path | None = None,
        suffix: str = ".bin",
    ) -> None:
        self._dump = dump
        self._load = load
        self._max = max_items
        self._mem: OrderedDict[str, T] = OrderedDict()
        self._lock = threading.Lock()
        self.directory = Path(directory) if directory is not None else None
        self._suffix = suffix
        self.hits = 0
        self.misses = 0
        if self.directory is not None:
            self.directory.mkdir(parents=True, exist_ok=True)

    def _path(self, key: str) -> Path:
        assert self.directory is not None
        return self.directory / key[:2] / f"{key}{self._suffix}"

    def get(self, key: str) -> T | None:
        with self._lock:
            value = self._mem.get(key)
            if value is not None:
                self._mem.move_to_end(key)
                self.hits += 1
                return value
        if self.directory is not None:
            path = self._path(key)
            try:
                data = path.read_bytes()
            except FileNotFoundError:
                data = None
            if data is not None:
                try:
                    value = self._load(data)
                except Exception:
                    path.unlink(missing_ok=True)
                else:
                    self._remember(key, value)
                    with self._lock:
                        self.hits += 1
                    return value
        with self._lock:
            self.misses += 1
        return None

    def put(self, key: str, value: T) -> None:
        self._remember(key, value)
        if self.directory is not None:
            atomic_write_bytes(self._path(key), self._dump(value))

    def _remember(self, key: str, value: T) -> None:
        with self._lock:
            self._mem[key] = value
            self._mem.move_to_end(key)
            while len(self._mem) > self._max:
                self._mem.popitem(last=False)

    def __len__(self) -> int:
        return len(self._mem)


def dump_synthesis(s: Synthesis) -> bytes:
    meta = s.model_dump(mode="json", exclude={"pcm", "cached"})
    buf = io.BytesIO()
    np.savez(buf, pcm=np.asarray(s.pcm), meta=np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8))
    return buf.getvalue()


def load_synthesis(data: bytes) -> Synthesis:
    with np.load(io.BytesIO(data)) as npz:
        meta = json.loads(npz["meta"].tobytes().decode())
        return Synthesis(pcm=npz["pcm"].astype(np.int16), **meta)


def dump_transcript(t: Transcript) -> bytes:
    return t.model_dump_json(exclude={"cached"}).encode()


def load_transcript(data: bytes) -> Transcript:
    return Transcript.model_validate_json(data)


def synthesis_cache(directory: str | Path | None = None, max_items: int = 2048) -> ContentCache[Synthesis]:
    return ContentCache(
        dump_synthesis, load_synthesis, max_items=max_items, directory=directory, suffix=".npz"
    )


def transcript_cache(directory: str | Path | None = None, max_items: int = 4096) -> ContentCache[Transcript]:
    return ContentCache(
        dump_transcript, load_transcript, max_items=max_items, directory=directory, suffix=".json"
    )
