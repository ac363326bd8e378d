"""The call id an agent sees: unique per call across runs, opaque, and found again in the log.

`call_id(run_dir, run_id, episode_id, attempt)` is an HMAC-SHA256, keyed by a secret salt drawn
once per run folder (`call_id.salt`, created on first use and kept with the run), of the run id,
episode id and attempt. So:
- ids differ between runs (a new run has a new run id and a new salt) and between the calls and
  attempts of one run;
- nothing about the condition can be read from an id: without the salt the two calls of a pair
  are indistinguishable by their ids (the agent never sees the salt);
- a run is reproducible from its folder: the same salt gives the same ids, so a resumed run
  places its unfinished calls again under the ids they were first given (a vendor log then holds
  the interrupted session and its replacement under one id, told apart by time).
The episode log records the id sent (`call_started.call_id`) and the agent side's own session
id when the protocol has one (`call_started.agent_session_id`), the keys to the vendor's logs.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import hmac
import os
import secrets
from pathlib import Path

from voice_audit.harness.runlog import CALL_ID_SALT

__all__ = ["SALT_FILE", "call_id", "run_salt"]

SALT_FILE = CALL_ID_SALT
_SALT_BYTES = 32


@functools.lru_cache(maxsize=64)
def _salt_at(path: Path) -> bytes:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        data = _create(path)
    salt = bytes.fromhex(data.decode("ascii").strip())
    if len(salt) != _SALT_BYTES:
        raise ValueError(
            f"{path}: not a call-id salt ({len(salt)} bytes); restore it or start a new run folder"
        )
    return salt


def _create(path: Path) -> bytes:
    """Write a fresh salt atomically; when another process won the race, read theirs."""
    data = (secrets.token_hex(_SALT_BYTES) + "\n").encode("ascii")
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(tmp, path)  # fails if the salt exists: the first writer wins, whole
    except FileExistsError:
        data = path.read_bytes()
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    return data


def run_salt(run_dir: Path) -> bytes:
    """The run folder's secret salt, created on first use."""
    run_dir.mkdir(parents=True, exist_ok=True)
    return _salt_at(run_dir.resolve() / SALT_FILE)


def call_id(run_dir: Path | bytes, run_id: str, episode_id: str, attempt: int) -> str:
    """`CA` + 32 hex digits: the shape of a Twilio CallSid, which every protocol can carry.

    `run_dir` may be the salt itself, read once per run by the executor (`run_salt`), so that a
    call does not touch the file system for it."""
    salt = run_dir if isinstance(run_dir, bytes) else run_salt(run_dir)
    msg = f"call|{run_id}|{episode_id}|{attempt}".encode()
    return "CA" + hmac.new(salt, msg, hashlib.sha256).hexdigest()[:32]
