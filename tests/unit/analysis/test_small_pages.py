"""`small_pages` turns numpy's huge-page hint off only while ingest runs, and puts back what it found."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from voice_audit.analysis.metrics import readlogs
from voice_audit.analysis.metrics.ingest import ingest
from voice_audit.analysis.metrics.readlogs import small_pages

GOLDEN = Path(__file__).parents[2] / "fixtures" / "runs" / "golden"
if readlogs._HUGEPAGES is None:
    pytest.skip("this numpy has no huge-page switch", allow_module_level=True)
_switch = readlogs._HUGEPAGES


@pytest.fixture(autouse=True)
def _keep_setting() -> Iterator[None]:
    before = _switch(True)
    yield
    _switch(before)


@pytest.mark.parametrize("initial", [True, False])
def test_off_inside_and_restored_after(initial: bool) -> None:
    _switch(initial)
    with small_pages():
        assert _switch(False) is False
    assert _switch(initial) is initial


def test_restored_when_the_body_raises() -> None:
    _switch(True)
    with pytest.raises(RuntimeError), small_pages():
        raise RuntimeError("boom")
    assert _switch(True) is True


def test_ingest_leaves_the_setting_as_it_was() -> None:
    _switch(True)
    ing = ingest(GOLDEN)
    assert len(ing.episodes) == 4
    assert _switch(True) is True
