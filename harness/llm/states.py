"""The KV state after a leading system message, kept on disk for every process (`LocalChatClient`).

An agent's system prompt (its tools and facts) costs a 1.5B model seconds of CPU to evaluate, and
every fresh process (a worker, a CLI run) paid it again. The state is computed canonically (a reset
context, then the system message's tokens alone), so its bytes are the same in every process with
the same model, llama.cpp build and context settings: one process writes it, the others load it and
evaluate nothing for it, and an answer is bit-identical either way.

A file is named by the sha256 of everything that can change those bytes (`state_key`: the model
file's sha256, llama-cpp-python's version, the CPU features llama.cpp uses, the context's sizes and
KV types, the exact token ids) and holds a header (key, tokens, size and sha256 of the state) and
the state itself (`llama_state_get_data`, without llama-cpp-python's logits rows). It is written
atomically and read defensively: a truncated, corrupt or foreign file (another key, other tokens)
is never loaded; the state is computed and the file overwritten.

Location: `VOICE_AUDIT_LLM_STATES` names the folder (`off`, `0`, `no` or `none` turns the files off);
by default `states/` under the models cache. The folder is bounded: after a write, the least
recently used files (by modification time, which a load refreshes) beyond `MAX_FILES` files or
`MAX_BYTES` bytes are deleted. Only system messages' states are stored; conversation tails stay
in the process's memory.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import struct
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from voice_audit.harness.llm.weights import cache_dir
from voice_audit.scenarios.atomic import atomic_write_bytes

ENV = "VOICE_AUDIT_LLM_STATES"
OFF = frozenset({"off", "0", "no", "none", "false"})
MAX_FILES = 16
MAX_BYTES = 1 << 30
"""At most 16 files and 1 GiB (the 1.5B agent model's prompt state is about 40 MB)."""
MAGIC = b"VA-LLM-STATE-1\n"
SUFFIX = ".state"


def states_dir() -> Path | None:
    """The folder of state files, or None when they are turned off."""
    value = os.environ.get(ENV, "").strip()
    if value.lower() in OFF:
        return None
    return Path(value).expanduser() if value else cache_dir() / "states"


def state_key(model_sha256: str, config: dict[str, Any], tokens: Sequence[int]) -> str:
    """The file key: the model's bytes, the runtime and context settings (`config`), the tokens."""
    doc = {"model": model_sha256, "config": config, "tokens": [int(t) for t in tokens]}
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()


def encode(key: str, tokens: Sequence[int], state: bytes) -> list[bytes]:
    """The file's bytes, in parts: magic, header length, header (JSON), state."""
    header = json.dumps(
        {
            "key": key,
            "tokens": [int(t) for t in tokens],
            "size": len(state),
            "sha256": hashlib.sha256(state).hexdigest(),
        }
    ).encode()
    return [MAGIC, struct.pack("<Q", len(header)), header, state]


def decode(blob: bytes, key: str, tokens: Sequence[int]) -> bytes | None:
    """The state in `blob` when it is whole and is this key's for exactly these tokens, else None."""
    start = len(MAGIC) + 8
    if len(blob) < start or not blob.startswith(MAGIC):
        return None
    (n,) = struct.unpack_from("<Q", blob, len(MAGIC))
    try:
        header = json.loads(blob[start : start + n])
    except ValueError:
        return None
    if not isinstance(header, dict) or header.get("key") != key:
        return None
    if header.get("tokens") != [int(t) for t in tokens]:
        return None
    state = blob[start + n :]
    if len(state) != header.get("size") or hashlib.sha256(state).hexdigest() != header.get("sha256"):
        return None
    return state


def load(folder: Path, key: str, tokens: Sequence[int]) -> bytes | None:
    """The stored state, or None (missing, unreadable, truncated, corrupt or another's)."""
    path = folder / f"{key}{SUFFIX}"
    try:
        blob = path.read_bytes()
    except OSError:
        return None
    state = decode(blob, key, tokens)
    if state is not None:
        with contextlib.suppress(OSError):
            os.utime(path)  # recently used: pruned last
    return state


def store(folder: Path, key: str, tokens: Sequence[int], state: bytes) -> None:
    """Best effort: a folder that cannot be written only costs the next process the evaluation.
    No fsync: a file a crash left incomplete fails its size or sha256 check and is recomputed."""
    try:
        atomic_write_bytes(folder / f"{key}{SUFFIX}", encode(key, tokens, state), fsync=False)
    except OSError:
        return
    prune(folder)


def prune(folder: Path, max_files: int = MAX_FILES, max_bytes: int = MAX_BYTES) -> None:
    """Delete the least recently used state files beyond `max_files` files or `max_bytes` bytes."""
    files = []
    for path in folder.glob(f"*{SUFFIX}"):
        with contextlib.suppress(OSError):
            st = path.stat()
            files.append((st.st_mtime_ns, st.st_size, path))
    files.sort(key=lambda f: f[0], reverse=True)
    kept = total = 0
    for _, size, path in files:
        if kept < max_files and total + size <= max_bytes:
            kept += 1
            total += size
            continue
        with contextlib.suppress(OSError):
            path.unlink()
