"""A real-time campaign against a Pipecat Twilio bot that cannot understand one condition.

The bot (`tests/fixtures/protocols/pipecat_picky_bot.py`) speaks real words (flite) and asks
every high-voiced caller turn to be said again, forever. The caller of that condition must end
its calls by its repair-loop patience (ask for a human, then hang up with reason `repair_loop`)
well before the scenario's turn limit; the calls stay in their pairs and fire
`safety_repair_loop`; the other condition's calls are served and do not.

Skipped when `pipecat-ai[websocket]`, uvicorn or flite are missing. Nothing leaves the machine.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.collect_imports import skip_unless_installed

skip_unless_installed("pipecat.serializers.twilio")
skip_unless_installed("pipecat.transports.websocket.fastapi")
skip_unless_installed("uvicorn")
if shutil.which("flite") is None:
    pytest.skip("the fixture bot speaks with Debian's flite (make system-deps)", allow_module_level=True)

from tests.helpers.collect_scenarios import locked  # noqa: E402
from tests.helpers.picky_bot import PickyRun, run_against_picky_bot  # noqa: E402
from tests.helpers.pilot_cache import session_cache  # noqa: E402
from voice_audit.analysis.pipeline import analyze  # noqa: E402
from voice_audit.harness.runlog import RunReader  # noqa: E402

MAX_TURNS = locked("refund_duplicate_charge").caller.max_turns
# Real-time calls against a bot: the serial lane of `make test` (Makefile), which runs a file on one
# worker, so the campaign of the module's fixture runs once (the parallel lane's work stealing once
# split the two tests over two workers, and each ran the 55 s campaign).
pytestmark = pytest.mark.serial


@pytest.fixture(scope="module")
def picky_run(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> tuple[Path, Any]:
    mp = pytest.MonkeyPatch()
    mp.setenv("TWILIO_ACCOUNT_SID", "AC" + "0" * 32)
    mp.setenv("TWILIO_AUTH_TOKEN", "dummy-token")
    request.addfinalizer(mp.undo)
    out = tmp_path_factory.mktemp("picky")
    # the caller's lines from the session's audio cache: the claims are about the calls, not synthesis
    run: PickyRun = asyncio.run(run_against_picky_bot(out, cache_dir=session_cache(tmp_path_factory)))
    assert run.statuses == {"completed": 2}, run.statuses
    return run.run_dir, run.stats


def test_the_misunderstood_caller_gives_up_on_the_repair_loop_well_before_the_turn_limit(
    picky_run: tuple[Path, Any],
) -> None:
    run, stats = picky_run
    reader = RunReader(run)
    records = {r.header.side: r for r in reader.records()}
    assert set(records) == {"a", "b"} and records["a"].header.pair_id == records["b"].header.pair_id
    # the bot heard both voices, and understood only the low one
    understood = [u for _, u in stats.turns]
    assert True in understood and False in understood, stats.turns

    b = reader.events(records["b"].header.episode_id)
    pats = [e for e in b if e.type == "caller_patience" and e.kind == "repair_loop"]
    assert [p.action for p in pats] == ["ask_human", "hang_up"], pats
    assert [(e.by, e.reason) for e in b if e.type == "hang_up"] == [("caller", "repair_loop")]
    assert [e.reason for e in b if e.type == "escalation_requested"] == ["repairs"]
    decisions = [e for e in b if e.type == "caller_decision"]
    assert len(decisions) <= MAX_TURNS // 2, [d.heard for d in decisions]
    assert records["b"].outcome.status == "completed"
    assert records["b"].outcome.terminal_outcome == "unresolved"

    a = reader.events(records["a"].header.episode_id)
    assert not [e for e in a if e.type == "caller_patience" and e.kind == "repair_loop"]
    assert [e.reason for e in a if e.type == "hang_up"] != ["repair_loop"]
    assert records["a"].outcome.terminal_outcome == "refund_issued"


def test_the_loop_fires_the_safety_event_for_that_condition_only_and_the_pair_stays(
    picky_run: tuple[Path, Any],
) -> None:
    run, _ = picky_run
    res = analyze(run, audio=False)
    m = res.metrics.set_index("side")
    assert m.loc["b", "safety_repair_loop"] == 1.0 and m.loc["a", "safety_repair_loop"] == 0.0
    assert m.loc["b", "safety_repair_run_max"] >= 3
    assert m.loc["b", "safety_refused_service"] == 0.0  # asked to repeat is not declined
    assert bool(res.pairs["included"].all()) and len(res.pairs) == 1
