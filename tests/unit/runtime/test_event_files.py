"""Episode files: the event log's write policy and hash, multi-part atomic writes, the spoken-audio cache."""

from __future__ import annotations

import asyncio
import errno
import hashlib
import time
from pathlib import Path

import numpy as np
import pytest

from voice_audit.harness.model.events import EVENT_ADAPTER, CallStarted, HangUp
from voice_audit.harness.runlog import atomic_write_bytes, writer
from voice_audit.harness.runtime.eventlog import EventLog
from voice_audit.harness.runtime.voice import Spoken, SpokenCache


def _events() -> list[CallStarted | HangUp]:
    return [
        CallStarted(t_ms=0, pacing="accelerated", protocol="in-process"),
        HangUp(t_ms=20, by="caller", reason="done"),
    ]


def test_log_without_hold_writes_at_every_flush(tmp_path: Path) -> None:
    path = tmp_path / "ep" / "events.jsonl"
    log = EventLog(path)
    log.append(_events()[0])
    assert not path.exists(), "nothing is written before the turn boundary"
    log.flush()
    assert path.read_bytes().count(b"\n") == 1
    log.append(_events()[1])
    log.flush()
    assert [EVENT_ADAPTER.validate_json(line).type for line in path.read_bytes().splitlines()] == [
        "call_started",
        "hang_up",
    ]
    log.close()


def test_held_log_writes_once_the_hold_has_passed_and_on_close(tmp_path: Path) -> None:
    path = tmp_path / "ep" / "events.jsonl"
    log = EventLog(path, hold_s=0.05)
    for ev in _events():
        log.append(ev)
    log.flush()
    assert not path.parent.exists(), "a call shorter than the hold creates no file before it ends"
    time.sleep(0.06)
    log.flush()
    assert path.read_bytes().count(b"\n") == 2, "events older than the hold are written at the next boundary"
    log.append(HangUp(t_ms=30, by="agent", reason="late"))
    digest = log.close()
    data = path.read_bytes()
    assert data.count(b"\n") == 3 and digest == hashlib.sha256(data).hexdigest() == log.sha256


def test_closing_an_empty_log_leaves_an_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "ep" / "events.jsonl"
    assert EventLog(path, hold_s=10).close() == hashlib.sha256(b"").hexdigest()
    assert path.read_bytes() == b""


def test_atomic_write_in_parts(tmp_path: Path) -> None:
    samples = np.arange(-5, 5, dtype="<i2")
    path = tmp_path / "d" / "x.bin"
    atomic_write_bytes(path, [b"head", samples.data.cast("B")], fsync=False)
    assert path.read_bytes() == b"head" + samples.tobytes()
    atomic_write_bytes(path, b"whole")
    assert path.read_bytes() == b"whole" and not list(path.parent.glob("*.tmp"))


def test_failed_atomic_write_keeps_the_old_file_and_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "call.wav"
    atomic_write_bytes(path, b"old")

    def full(fd: int, data: bytes) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(writer.os, "write", full)
    with pytest.raises(OSError, match="No space"):
        atomic_write_bytes(path, [b"new", b"data"])
    assert path.read_bytes() == b"old" and not list(tmp_path.glob(".*.tmp"))


def _spoken(text: str) -> Spoken:
    pcm = np.zeros(160, dtype=np.int16)
    return Spoken(text, b"", pcm, 10, {}, pcm, 16000)


async def test_concurrent_requests_make_an_utterance_once() -> None:
    cache = SpokenCache()
    made: list[str] = []

    async def make() -> Spoken:
        made.append("x")
        await asyncio.sleep(0.01)
        return _spoken("hello")

    results = await asyncio.gather(*(cache.get_or_make(("k",), make) for _ in range(20)))
    assert made == ["x"] and all(r is results[0] for r in results)
    assert cache.made == 1 and cache.hits == 19


async def test_a_failed_or_cancelled_maker_does_not_fail_the_waiters() -> None:
    cache = SpokenCache()
    calls = 0

    async def make() -> Spoken:
        nonlocal calls
        calls += 1
        await asyncio.sleep(0.01)
        if calls == 1:
            raise RuntimeError("engine crashed")
        return _spoken("ok")

    first = asyncio.create_task(cache.get_or_make(("k",), make))
    await asyncio.sleep(0)
    waiter = asyncio.create_task(cache.get_or_make(("k",), make))
    with pytest.raises(RuntimeError):
        await first
    assert (await waiter).text == "ok" and calls == 2

    async def slow() -> Spoken:
        await asyncio.sleep(10)
        return _spoken("never")

    maker = asyncio.create_task(cache.get_or_make(("c",), slow))
    await asyncio.sleep(0)
    other = asyncio.create_task(cache.get_or_make(("c",), make))
    await asyncio.sleep(0)
    maker.cancel()
    assert (await other).text == "ok", "the waiter makes it itself when the maker's call is cancelled"
    with pytest.raises(asyncio.CancelledError):
        await maker

    maker = asyncio.create_task(cache.get_or_make(("d",), slow))
    await asyncio.sleep(0)
    waiter = asyncio.create_task(cache.get_or_make(("d",), make))
    await asyncio.sleep(0)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert not maker.done(), "a cancelled waiter leaves the maker alone"
    maker.cancel()
