"""A local Ray instance that misses Ray's start-up window ends the run in one line, not a traceback."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from voice_audit.harness.runtime import rayexec
from voice_audit.harness.runtime.rayexec import RayExecutor
from voice_audit.scenarios import ConfigError


class SlowStartRay:
    """Ray's surface that `RayExecutor.start` touches, failing `init` as Ray does on a loaded machine."""

    def __init__(self, error: Exception) -> None:
        self.error = error
        self.inits: list[dict[str, Any]] = []

    def is_initialized(self) -> bool:
        return False

    def init(self, **kwargs: Any) -> None:
        self.inits.append(kwargs)
        raise self.error


def _start(monkeypatch: pytest.MonkeyPatch, fake: SlowStartRay) -> None:
    monkeypatch.setattr(rayexec, "import_ray", lambda loopback: fake)
    asyncio.run(RayExecutor(num_cpus=2).start())


def test_a_node_that_misses_rays_start_up_window_is_one_line_with_a_fix(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake = SlowStartRay(
        Exception(
            "The current node timed out during startup. This could happen because some of the raylet "
            "failed to startup or the GCS has become overloaded."
        )
    )
    with pytest.raises(ConfigError) as info:
        _start(monkeypatch, fake)
    text = str(info.value)
    assert "did not start" in text and "--address" in text and "\n" not in text
    assert len(fake.inits) == 1 and fake.inits[0]["address"] == "local"  # no second start in this process


def test_any_other_start_failure_is_not_relabelled(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(RuntimeError, match="something else"):
        _start(monkeypatch, SlowStartRay(RuntimeError("something else")))
