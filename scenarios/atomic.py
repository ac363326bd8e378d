"""Atomic file writes, the one implementation every package uses (run folders, caches, lock files).

A file is written to a temporary name in its own folder, (fsynced,) and renamed over the target,
so a reader, or a process killed mid-write, never sees half a file. Temporary names are
`.<name>.<random>.tmp`; a leftover one means a write was interrupted.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Sequence
from pathlib import Path

__all__ = ["atomic_write_bytes", "atomic_write_text", "open_new", "write_all"]


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


def atomic_write_bytes(path: Path, data: bytes | Sequence[bytes | memoryview], *, fsync: bool = True) -> None:
    """Write to a temp file in the same folder, (fsync,) rename: readers never see half a file.

    `data` may come in parts (a header and a large array's buffer), written in turn without joining.
    Plain descriptors rather than file objects: episode files are written by the thousand, and
    every system call and lock hand-over counts there."""
    parts = [data] if isinstance(data, bytes) else data
    for _ in range(100):
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
        try:
            fd = open_new(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC)
            break
        except FileExistsError:
            continue
    else:
        raise FileExistsError(f"{path.parent}: no free temporary file name")
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
