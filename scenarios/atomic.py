"""Atomic file writes, the one implementation every package uses (run folders, caches, lock files).

A file is written to a temporary name in its own folder, (fsynced,) and renamed over the target,
so a reader, or a process killed mid-write, never sees half a file. Temporary names are
`.<name>.<random>.tmp`; a leftover one means a write was interrupted.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

__all__ = ["atomic_open", "atomic_write_bytes", "atomic_write_text", "open_new", "write_all"]


def write_all(fd: int, parts: Sequence[bytes | memoryview]) -> None:
    """Write every part in turn, however short the kernel's writes."""
    for part in parts:
        view = memoryview(part)
        if not view.nbytes:  # an empty part (a recording nobody spoke on) may have no castable shape
            continue
        view = view.cast("B")
        while view:
            view = view[os.write(fd, view) :]


def open_new(path: Path, flags: int) -> int:
    """Open a file for writing, creating its folder (and parents) the first time."""
    try:
        return os.open(path, flags, 0o644)
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        return os.open(path, flags, 0o644)


def _open_temp(path: Path) -> tuple[Path, int]:
    """A fresh temporary file beside `path` (created exclusively), open for writing."""
    for _ in range(100):
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
        try:
            return tmp, open_new(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC)
        except FileExistsError:
            continue
    raise FileExistsError(f"{path.parent}: no free temporary file name")


def atomic_write_bytes(path: Path, data: bytes | Sequence[bytes | memoryview], *, fsync: bool = True) -> None:
    """Write to a temp file in the same folder, (fsync,) rename: readers never see half a file.

    `data` may come in parts (a header and a large array's buffer), written in turn without joining.
    Plain descriptors rather than file objects: episode files are written by the thousand, and
    every system call and lock hand-over counts there."""
    parts = [data] if isinstance(data, bytes) else data
    tmp, fd = _open_temp(path)
    try:
        try:
            os.fchmod(fd, 0o644)  # whatever the umask, like the files written in place
            write_all(fd, parts)
            if fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def atomic_write_text(path: Path, text: str, *, fsync: bool = True) -> None:
    atomic_write_bytes(path, text.encode("utf-8"), fsync=fsync)


@contextmanager
def atomic_open(path: Path, *, fsync: bool = True) -> Iterator[BinaryIO]:
    """A binary file that becomes `path` when the block ends without an exception.

    For what is too large to hold in memory (copied recordings, model weights): an exception
    inside the block (a failed checksum, say) leaves `path` as it was and removes the temporary."""
    tmp, fd = _open_temp(path)
    try:
        with os.fdopen(fd, "wb") as out:
            os.fchmod(fd, 0o644)
            yield out
            out.flush()
            if fsync:
                os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
