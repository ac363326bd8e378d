"""Test ordering for the lanes of `make test`, the session's folder of LLM states, and the collected
suite kept out of the cyclic garbage collector, which runs less often in a test process."""

from __future__ import annotations

import gc
import os
import shutil
import tempfile

import pytest

# A model run in a test process keeps the state after its system prompt on disk (harness/llm/states.py),
# by default in the user's cache, where a later run would load it instead of computing it. Every
# session gets a fresh folder of its own unless one is given (`make test` gives its three lanes one);
# xdist workers inherit the controller's. Tests whose claim is about computing or loading a state
# point the variable at a private folder. The name is harness.llm.states.ENV, spelt here because
# importing that package costs every test process 0.3 s; test_llm_agent fails if the two differ.
LLM_STATES_ENV = "VOICE_AUDIT_LLM_STATES"
_OWN_STATES: list[str] = []


def pytest_configure(config: pytest.Config) -> None:
    if not os.environ.get(LLM_STATES_ENV):
        _OWN_STATES.append(tempfile.mkdtemp(prefix="voice-audit-llm-states-"))
        os.environ[LLM_STATES_ENV] = _OWN_STATES[-1]


def pytest_unconfigure(config: pytest.Config) -> None:
    for folder in _OWN_STATES:
        shutil.rmtree(folder, ignore_errors=True)


# The serial and cpu_bound lanes run with --dist loadfile --no-loadscope-reorder: each worker takes
# whole files in this order, and queues one more file behind a file with two tests or fewer left.
# The files that take longest start first, one per worker; the shortest files come next, so the file
# queued behind a long one is short; every other test keeps its place (the sort is stable). A lane
# collects only its own files, so the two lists never compete: the serial lane's files whose
# real-time calls run a minute or more, then the cpu_bound lane's (its longest, the calibration
# campaigns and the local LLM, would otherwise start last and finish alone on one core).
LONG_FIRST = (
    "test_llm_agent.py",
    "test_runtime_protocols.py",
    "test_sip_campaign.py",
    "test_webrtc_served.py",
    "test_runtime_durability.py",
    "test_gemini_live.py",
    "test_calibration_pipeline.py",
    "test_model_reader.py",
    "test_release_compare.py",
    "test_ray_cluster.py",
    "test_default_voice.py",
)
SHORT_NEXT = (
    "test_protocol_roundtrip.py",
    "test_audio_pool_lifetime.py",
    "test_audio_synth_timeout.py",
    "test_webrtc_failures.py",
    "test_gemini_live_protocol.py",
    "test_sip_interop.py",
)
_RANK = {name: i for i, name in enumerate(LONG_FIRST + SHORT_NEXT)}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Whole files move; the rest keep their order."""
    items.sort(key=lambda item: _RANK.get(item.path.name, len(_RANK)))


YOUNG_GC_EVERY = 10_000
"""Allocations between two collections of the youngest generation in a test process (Python's default
is 700), with each older generation collected after 20 and 50 of the younger one's (10 and 10)."""


def pytest_collection_finish(session: pytest.Session) -> None:
    """Everything alive once the tests are collected (the imported modules, the test items) lives as
    long as the process: moved out of the collector's reach (`gc.freeze`), it is no longer walked by
    every full collection a test's allocations trigger (measured: the unit tests take 14% less CPU).
    What a test creates is collected as usual, in rarer passes: a test allocates in bursts (models,
    tables, event logs) that the default young threshold walks over and over while they are built
    (measured, `tests/unit/release` in one process, runs alternated: 29.9-32.0 s of user CPU with the
    defaults, 20.0-26.6 s with these). The product's own processes keep Python's defaults."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNG_GC_EVERY, 20, 50)
