"""An agent whose vendor answers HTTP 429 to every third new session: the harness waits (Retry-After)
and places the call again, so every call is placed, none counts against the agent, every pair is
whole, each rate-limited attempt is kept and logged, and the calls reach the agent in the plan's
call order (a call placed again keeps its place: waiting never reorders a and b).

The agent is the scripted agent served over the HTTP turn API by the project's own front end on
127.0.0.1; the 429s come from a middleware in front of it, as a vendor's gateway would send them.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path

from aiohttp import web

from voice_audit.agents.fakes import ScriptedAgent
from voice_audit.agents.serve import ServeConfig
from voice_audit.agents.serve.http_server import build_http_app
from voice_audit.harness.planning import call_order, load_campaign
from voice_audit.harness.runlog import RunReader, read_usage, usage_jsonl
from voice_audit.harness.runtime import CampaignRunner

CAMPAIGN = """\
name: limited
seed: 3
scenarios: [refund_duplicate_charge]
agents: [{{name: vendor, adapter: http, url: "{url}", max_concurrent_calls: 1}}]
pairs:
  - contrast: [accent]
    base: {{voice_profile: female_adult, affect: calm, disfluency: none, wording: plain}}
    a: {{accent: us_general}}
    b: {{accent: gb_southern}}
voices: 2
replicates: 2
concurrency: 2
timeouts: {{connect_s: 10, turn_s: 60, call_s: 240}}
tts: {{name: espeak}}
"""


async def _serve_and_run(tmp_path: Path, cache: Path) -> tuple[Path, ScriptedAgent, list[int]]:
    agent = ScriptedAgent(audio_ms=200)
    answers: list[int] = []  # status of every session request, in arrival order

    @web.middleware
    async def every_third_session_limited(
        request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        if request.method == "POST" and request.path.rstrip("/") == "/sessions":
            if len(answers) % 3 == 2:
                answers.append(429)
                return web.json_response(
                    {"error": {"kind": "rate_limited", "message": "too many sessions"}},
                    status=429,
                    headers={"Retry-After": "1"},
                )
            answers.append(201)
        return await handler(request)

    app = build_http_app(agent, ServeConfig())
    app.middlewares.append(every_third_session_limited)
    runner = web.AppRunner(app, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        cfile = tmp_path / "c.yaml"
        cfile.write_text(CAMPAIGN.format(url=f"http://127.0.0.1:{port}"))
        campaign_runner = CampaignRunner(
            load_campaign(cfile), tmp_path / "run", cache_dir=cache, progress=False
        )
        summary = await campaign_runner.run()
        assert summary.stats.get("harness_errors") is None, summary.stats.get("harness_errors")
    finally:
        await runner.cleanup()
    return tmp_path / "run", agent, answers


def test_every_third_session_refused_with_429_still_places_every_call_in_plan_order(
    tmp_path: Path, audio_cache: Path
) -> None:
    run_dir, agent, answers = asyncio.run(_serve_and_run(tmp_path, audio_cache))
    loaded = load_campaign(tmp_path / "c.yaml")
    reader = RunReader(run_dir)
    records = list(reader.records())

    # every call placed and served; none failed, none counted as the agent's non-service
    assert len(records) == len(loaded.plan.episodes) == 8
    assert all(r.outcome.status == "completed" and r.outcome.failure_kind is None for r in records)
    assert all(not r.outcome.outcome_flags for r in records)
    assert set(Counter(r.header.pair_id for r in records).values()) == {
        2
    }  # balanced: both sides of every pair

    # the vendor refused every third session; each refusal is an archived attempt with its event
    assert answers.count(429) == len(answers) // 3 >= 3 and answers.count(201) == 8
    limited = [r for r in records if r.header.attempt > 0]
    assert sum(r.header.attempt for r in records) == answers.count(429)
    for r in limited:
        folder = run_dir / "episodes" / r.header.episode_id
        attempts = [json.loads(line) for line in (folder / "attempts.jsonl").read_text().splitlines()]
        assert [a["outcome"]["failure_kind"] for a in attempts] == ["rate_limited"] * r.header.attempt
        events = [
            json.loads(line) for line in (folder / "attempts" / "0" / "events.jsonl").read_text().splitlines()
        ]
        rl = [e for e in events if e["type"] == "rate_limited"]
        assert len(rl) == 1 and rl[0]["retry_after_s"] == 1.0 and rl[0]["source"] == "http_429"

    # a call placed again kept its place: the agent was reached in exactly the plan's call order
    by_call_id: dict[str, str] = {}
    for r in records:
        started = next(e for e in reader.events(r.header.episode_id) if e.type == "call_started")
        assert started.call_id is not None
        by_call_id[started.call_id] = r.header.episode_id
    served = [by_call_id[s.call.call_id] for s in agent.sessions]
    assert served == [e.episode_id for e in call_order(loaded.plan)]

    # every attempt is in the usage ledger, the refused ones too (billed at what they used)
    ledger = read_usage(usage_jsonl(run_dir)).records
    assert len(ledger) == len(answers)
    assert Counter(u.failure_kind for u in ledger) == {None: 8, "rate_limited": answers.count(429)}
