"""TTS worker processes with a per-utterance time limit.

eSpeak NG (and most native engines) keeps one global engine per process, so CPU-bound backends
run in spawned worker processes, each building its own backend from the same (name, options)
spec. Each pool slot owns one process and talks to it over a pipe, one utterance at a time, so a
crashed or hung engine is killed and replaced alone: utterances running on other slots finish,
and the parent process never dies with it. (A ProcessPoolExecutor cannot tell which worker runs
which call, so it can only break every call in flight.)
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import pickle
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Connection
from typing import Any, Literal

from pydantic import Field

from voice_audit.harness.audio.errors import SynthesisError
from voice_audit.harness.audio.registry import create_tts
from voice_audit.harness.audio.types import Synthesis, TTSBackend
from voice_audit.personas import SpeechParams
from voice_audit.scenarios.base import Frozen
from voice_audit.scenarios.errors import VoiceAuditError

_SPAWN = multiprocessing.get_context("spawn")
_KILL_WAIT_S = 5.0
_worker_backends: dict[str, TTSBackend] = {}

Stopped = Literal["killed", "cancelled", "abandoned"]
_STOPPED: dict[Stopped, str] = {
    "killed": "its engine process was killed and replaced",
    "cancelled": "the request was cancelled",
    "abandoned": "it runs in a thread of this process, which cannot be stopped",
}


class SynthesisTimeout(Frozen):
    """How long one utterance may take: `base_s + per_char_s * len(text)`, plus `cold_start_s`
    the first time a worker speaks (it builds the engine and loads the model then).

    The defaults leave room for a neural model at several times real time on two CPU cores,
    yet fire well before a call's own time limit (300 s by default) would blame the agent.
    """

    base_s: float = Field(default=15.0, gt=0)
    per_char_s: float = Field(default=0.2, ge=0)
    cold_start_s: float = Field(default=60.0, ge=0)

    def for_text(self, text: str, *, cold: bool = False) -> float:
        return self.base_s + self.per_char_s * len(text) + (self.cold_start_s if cold else 0.0)


class SynthesisTimeoutError(SynthesisError):
    """An utterance outlived its time limit; `stopped` says what became of the work.

    `kind`, `backend`, `voice`, `words`, `timeout_s` and `stopped` let a caller branch and log
    without parsing the message.
    """

    kind = "tts_timeout"

    def __init__(self, backend: str, voice: str, words: str, timeout_s: float, stopped: Stopped) -> None:
        self.backend = backend
        self.voice = voice
        self.words = words
        self.timeout_s = timeout_s
        self.stopped: Stopped = stopped
        super().__init__(
            f"{backend} did not finish speaking voice {voice} within {timeout_s:.1f} s "
            f"(text {words!r}); {_STOPPED[stopped]} (fix: check this text and voice with the "
            "backend alone, or raise the synthesis timeout)"
        )

    def __reduce__(self) -> tuple[type, tuple[str, str, str, float, Stopped]]:
        return (type(self), (self.backend, self.voice, self.words, self.timeout_s, self.stopped))


def first_words(text: str, n: int = 6) -> str:
    words = text.split()
    return " ".join(words[:n]) + (" ..." if len(words) > n else "")


def _worker_synthesize(
    name: str, options: dict[str, Any], text: str, ssml: str | None, params: SpeechParams
) -> Synthesis:
    key = f"{name}:{sorted(options.items())!r}"
    backend = _worker_backends.get(key)
    if backend is None:
        backend = _worker_backends[key] = create_tts(name, **options)
    try:
        return backend.synthesize(text, ssml, params)
    except VoiceAuditError as exc:
        try:
            pickle.dumps(exc)
        except Exception:
            raise SynthesisError(str(exc)) from None
        raise
    except Exception as exc:
        raise SynthesisError(
            f"{name} failed on voice {params.espeak_name}: {type(exc).__name__}: {exc}"
        ) from None


def _exit_with_parent(parent_pid: int) -> None:
    """Workers end when the process that started them dies (even by kill -9), instead of
    lingering as orphans holding an engine."""

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(1.0)
        os._exit(0)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def _serve(conn: Connection, parent_pid: int) -> None:
    _exit_with_parent(parent_pid)
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            return
        reply: tuple[bool, Any]
        try:
            reply = (True, _worker_synthesize(*job))
        except Exception as exc:
            reply = (False, exc)
        try:
            conn.send(reply)
        except (pickle.PicklingError, TypeError, AttributeError) as exc:
            conn.send((False, SynthesisError(f"{job[0]}: the result could not be returned: {exc}")))


class _Crashed(Exception):
    pass


class _Slot:
    """One worker process and its pipe."""

    def __init__(self) -> None:
        parent, child = _SPAWN.Pipe()
        self.process = _SPAWN.Process(
            target=_serve, args=(child, os.getpid()), name="tts-worker", daemon=True
        )
        self.process.start()
        child.close()
        self.conn = parent
        self.served = 0

    def ask(self, job: tuple[Any, ...], timeout_s: float) -> Synthesis | None:
        """The worker's answer, or None when it gave none within `timeout_s`."""
        try:
            self.conn.send(job)
            if not self.conn.poll(timeout_s):
                return None
            ok, value = self.conn.recv()
        except (EOFError, OSError) as exc:
            raise _Crashed from exc
        if not ok:
            raise value
        assert isinstance(value, Synthesis)
        return value

    def kill(self) -> None:
        self.process.kill()
        self.process.join(_KILL_WAIT_S)
        self.conn.close()

    def stop(self) -> None:
        """Closing the pipe ends an idle worker's loop; one that does not end is killed."""
        self.conn.close()
        self.process.join(_KILL_WAIT_S)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(_KILL_WAIT_S)


class WorkerPool:
    """`size` slots, each a thread that owns one worker process (started on first use).

    Waiting happens in the slot threads, so the pool is not tied to one event loop.
    """

    def __init__(self, size: int, timeout: SynthesisTimeout) -> None:
        self.size = size
        self.timeout = timeout
        self._threads = ThreadPoolExecutor(size, thread_name_prefix="tts-slot")
        self._local = threading.local()
        self._slots: set[_Slot] = set()
        self._lock = threading.Lock()

    def pids(self) -> list[int]:
        with self._lock:
            return sorted(s.process.pid for s in self._slots if s.process.pid is not None)

    async def run(
        self, name: str, options: dict[str, Any], text: str, ssml: str | None, params: SpeechParams
    ) -> Synthesis:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._threads, self._run, name, options, text, ssml, params)

    def _slot(self) -> _Slot:
        slot: _Slot | None = getattr(self._local, "slot", None)
        if slot is not None and not slot.process.is_alive():
            self._discard(slot)
            slot = None
        if slot is None:
            slot = self._local.slot = _Slot()
            with self._lock:
                self._slots.add(slot)
        return slot

    def _discard(self, slot: _Slot) -> None:
        self._local.slot = None
        with self._lock:
            self._slots.discard(slot)
        slot.kill()

    def _run(
        self, name: str, options: dict[str, Any], text: str, ssml: str | None, params: SpeechParams
    ) -> Synthesis:
        slot = self._slot()
        limit = self.timeout.for_text(text, cold=slot.served == 0)
        try:
            result = slot.ask((name, options, text, ssml, params), limit)
        except _Crashed:
            self._discard(slot)
            raise SynthesisError(
                f"the {name} engine process crashed while speaking voice {params.espeak_name}; "
                "its worker was restarted (fix: check the voice name and the SSML of this utterance)"
            ) from None
        if result is None:
            self._discard(slot)
            raise SynthesisTimeoutError(name, params.espeak_name, first_words(text), limit, "killed")
        slot.served += 1
        return result

    def close(self) -> None:
        """Wait for utterances in flight (each is bounded by its time limit), then stop the workers."""
        self._threads.shutdown(wait=True, cancel_futures=True)
        with self._lock:
            slots, self._slots = list(self._slots), set()
        for slot in slots:
            slot.stop()
