"""A vendor's limits hold for the whole run when it is split over worker processes: with
four workers, an agent limited to two calls in flight never has more, and its calls start at the
campaign's calls per minute, not at a multiple of it (each worker keeps its share of the limits and the
workers' starts interleave).

The agent is the scripted agent served over the HTTP turn API on 127.0.0.1; a middleware in
front of it times every session's creation and deletion, as the vendor's gateway would. The grid is
checked on the harness's own admission times (`call_started.admitted_at`): the agent sees a start a
connection setup after its admission, and that setup is the machine's load, not the limiter's."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from aiohttp import web

from voice_audit.agents.fakes import ScriptedAgent
from voice_audit.agents.serve import ServeConfig
from voice_audit.agents.serve.http_server import build_http_app
from voice_audit.harness.planning import load_campaign
from voice_audit.harness.runlog import RunReader
from voice_audit.harness.runtime import CampaignRunner

# Real-time admissions a second apart, and the gateway's count of calls in flight: the quiet lane.
pytestmark = pytest.mark.serial

CAMPAIGN = """\
name: limited-split
seed: 5
scenarios: [refund_duplicate_charge]
agents: [{{name: vendor, adapter: http, url: "{url}", max_concurrent_calls: 2, calls_per_minute: 60}}]
pairs:
  - contrast: [accent]
    base: {{voice_profile: female_adult, affect: calm, disfluency: none, wording: plain}}
    a: {{accent: us_general}}
    b: {{accent: gb_southern}}
voices: 2
replicates: 4
concurrency: 8
timeouts: {{connect_s: 10, turn_s: 60, call_s: 240}}
tts: {{name: espeak, options: {{match_rate: false}}}}  # the vendor-side admission grid, without each worker calibrating its voices at its first call
"""


async def _serve(log: list[tuple[str, float]]) -> tuple[web.AppRunner, str]:
    @web.middleware
    async def gateway(
        request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        if request.method == "POST" and request.path.rstrip("/") == "/sessions":
            log.append(("start", time.time()))
        response = await handler(request)
        if request.method == "DELETE":
            log.append(("end", time.time()))
        return response

    app = build_http_app(ScriptedAgent(audio_ms=200, think_ms=300), ServeConfig())
    app.middlewares.append(gateway)
    runner = web.AppRunner(app, handle_signals=False)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    return runner, f"http://127.0.0.1:{runner.addresses[0][1]}"


async def _serve_and_run(tmp_path: Path, cache: Path) -> list[tuple[str, float]]:
    log: list[tuple[str, float]] = []
    server, url = await _serve(log)
    try:
        cfile = tmp_path / "c.yaml"
        cfile.write_text(CAMPAIGN.format(url=url))
        campaign_runner = CampaignRunner(
            load_campaign(cfile), tmp_path / "run", cache_dir=cache, progress=False
        )
        summary = await campaign_runner.run(workers=4)
        assert summary.statuses == {"completed": 16}, (summary.statuses, summary.failures)
    finally:
        await server.cleanup()
    return log


def admissions(run: Path) -> list[float]:
    """When the harness admitted each recorded call (wall clock), in order."""
    reader = RunReader(run)
    out = []
    for rec in reader.records():
        started = [e for e in reader.events(rec.header.episode_id) if e.type == "call_started"]
        assert len(started) == 1 and started[0].admitted_at is not None, started
        out.append(started[0].admitted_at)
    return sorted(out)


def check_limits(log: list[tuple[str, float]], admitted: list[float]) -> None:
    """The vendor's two calls in flight and 60 calls a minute, for the run as a whole."""
    in_flight, most = 0, 0
    for kind, _ in sorted(log, key=lambda x: x[1]):
        in_flight += 1 if kind == "start" else -1
        most = max(most, in_flight)
    assert most == 2  # never more than the vendor's two in flight, whatever the split

    # The gate's grid, on its own admissions: never two closer than the vendor's second for the
    # whole run, the workers taking turns (each pacing alone would admit calls half a second apart)
    assert len(admitted) == 16
    gaps = [b - a for a, b in itertools.pairwise(admitted)]
    assert min(gaps) > 0.999, gaps
    # And the agent saw none early: the k-th session request it got came after the k-th admission.
    starts = sorted(t for k, t in log if k == "start")
    assert len(starts) == 16
    assert all(s >= a for s, a in zip(starts, admitted, strict=True)), list(
        zip(starts, admitted, strict=True)
    )


def test_limits_hold_across_worker_processes(tmp_path: Path, audio_cache: Path) -> None:
    log = asyncio.run(_serve_and_run(tmp_path, audio_cache))
    assert len(list(RunReader(tmp_path / "run").records())) == 16
    check_limits(log, admissions(tmp_path / "run"))
