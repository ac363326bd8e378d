"""Test ordering for the lanes of `make test`."""

from __future__ import annotations

import pytest

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
