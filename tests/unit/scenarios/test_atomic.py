"""Streaming atomic writes: the target appears whole at the end of the block, or not at all."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from voice_audit.scenarios.atomic import atomic_open


def test_atomic_open_makes_the_file_visible_only_when_the_block_ends(tmp_path: Path) -> None:
    path = tmp_path / "new" / "weights.bin"
    with atomic_open(path) as out:
        out.write(b"first ")
        assert not path.exists(), "nothing is visible while the block runs"
        out.write(b"second")
    assert path.read_bytes() == b"first second"
    assert os.stat(path).st_mode & 0o777 == 0o644
    assert [p.name for p in path.parent.iterdir()] == ["weights.bin"]


def test_an_exception_in_the_block_keeps_the_old_file_and_no_temp(tmp_path: Path) -> None:
    path = tmp_path / "weights.bin"
    path.write_bytes(b"old")
    with pytest.raises(ValueError, match="checksum"), atomic_open(path, fsync=False) as out:
        out.write(b"half")
        raise ValueError("checksum mismatch")
    assert path.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["weights.bin"]
