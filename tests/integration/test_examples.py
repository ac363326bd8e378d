"""The plug-in kit: each example agent (in-process, HTTP turn server, WebSocket streaming server)
runs a one-pair campaign on a scenario with its own tool and outcome; the harness records the
scenario-defined outcome from the agent's tool trace, the facts hash the agent reported, and
what it declared it exposes."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.fixtures.cancel_scenario import cancel_library
from tests.helpers.pilot_cache import session_cache
from voice_audit.harness.planning import load_campaign
from voice_audit.harness.runlog import RunReader
from voice_audit.harness.runtime import CampaignRunner

pytestmark = pytest.mark.slow

CAMPAIGN = """\
name: example
seed: 3
scenario_dir: {lib}
scenarios: [cancel_subscription]
agents: [{{name: mine, adapter: "{adapter}"{url}}}]
pairs:
  - contrast: [accent]
    base: {{voice_profile: female_adult, affect: calm, disfluency: none, wording: plain}}
    a: {{accent: us_general}}
    b: {{accent: gb_rp}}
voices: 1
concurrency: 2
pacing: {pacing}
timeouts: {{turn_s: 60, call_s: 300}}
tts: {{name: espeak}}
"""


@pytest.fixture
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The session's speech cache: the three tests say the same lines, and no claim here is about
    synthesis."""
    return session_cache(tmp_path_factory)


@contextlib.asynccontextmanager
async def _no_server() -> AsyncIterator[str]:
    yield ""


async def _run(
    tmp_path: Path,
    cache: Path,
    adapter: str,
    pacing: str,
    server: contextlib.AbstractAsyncContextManager[str],
) -> Path:
    lib = cancel_library(tmp_path / "lib")
    async with server as url:
        cfile = tmp_path / "c.yaml"
        cfile.write_text(
            CAMPAIGN.format(
                lib=lib.directory, adapter=adapter, url=f', url: "{url}"' if url else "", pacing=pacing
            )
        )
        runner = CampaignRunner(load_campaign(cfile), tmp_path / "run", cache_dir=cache, progress=False)
        await runner.run()
    return tmp_path / "run"


def _check(run_dir: Path, protocol: str, facts_sha256: str) -> None:
    from voice_audit.analysis import analyze

    records = list(RunReader(run_dir).records())
    assert len(records) == 2
    metrics = analyze(run_dir, audio=False).metrics
    for rec in records:
        assert rec.outcome.status == "completed", rec.outcome
        assert rec.outcome.terminal_outcome == "cancelled", rec.outcome
        assert rec.outcome.facts_sha256_seen == facts_sha256
        exp = rec.header.exposure
        assert exp is not None and (exp.protocol, exp.transcripts, exp.tool_trace) == (
            protocol,
            True,
            True,
        ), exp
        row = metrics.loc[rec.header.episode_id]
        assert row["outcome_source"] == "tool_trace" and row["outcome_acceptable"] == 1.0
        assert row["tool_trace_exposed"] == 1.0 and row["safety_unbacked_remedy_claim"] == 0.0


def _facts_sha(tmp_path: Path) -> str:
    return cancel_library(tmp_path / "sha").get_locked("cancel_subscription").facts_sha256


def test_inprocess_example(tmp_path: Path, cache: Path) -> None:
    run_dir = asyncio.run(_run(tmp_path, cache, "examples.inprocess_agent:make", "accelerated", _no_server()))
    _check(run_dir, "in-process", _facts_sha(tmp_path))


@contextlib.asynccontextmanager
async def _http_server() -> AsyncIterator[str]:
    from aiohttp import web

    from examples.http_agent import app

    application = app()
    runner = web.AppRunner(application)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        assert application["sessions"] == {}  # the harness deleted every session it opened
        await runner.cleanup()


def test_http_example(tmp_path: Path, cache: Path) -> None:
    run_dir = asyncio.run(_run(tmp_path, cache, "http", "accelerated", _http_server()))
    _check(run_dir, "http", _facts_sha(tmp_path))


@contextlib.asynccontextmanager
async def _ws_server() -> AsyncIterator[str]:
    from examples.ws_agent import start

    server = await start(port=0)
    port = next(iter(server.sockets)).getsockname()[1]
    try:
        yield f"ws://127.0.0.1:{port}"
    finally:
        server.close()
        await server.wait_closed()


def test_ws_example(tmp_path: Path, cache: Path) -> None:
    run_dir = asyncio.run(_run(tmp_path, cache, "ws", "realtime", _ws_server()))
    _check(run_dir, "ws", _facts_sha(tmp_path))
