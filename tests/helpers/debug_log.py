"""Every log record of a block, at DEBUG, in a file: what the secret scans read for leaks."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def debug_log(path: Path, quiet: tuple[str, ...] = ()) -> Iterator[Path]:
    """The root logger at DEBUG into `path` for the block, then as it was; the loggers named in
    `quiet` are held at WARNING meanwhile (compiler traces that cannot hold a secret)."""
    handler = logging.FileHandler(path)
    handler.setLevel(logging.DEBUG)
    root = logging.getLogger()
    old_level = root.level
    held = {name: logging.getLogger(name).level for name in quiet}
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    for name in quiet:
        logging.getLogger(name).setLevel(logging.WARNING)
    try:
        yield path
    finally:
        root.removeHandler(handler)
        root.setLevel(old_level)
        for name, level in held.items():
            logging.getLogger(name).setLevel(level)
        handler.close()
