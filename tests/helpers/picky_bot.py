"""The picky Pipecat Twilio bot (`tests/fixtures/protocols/pipecat_picky_bot.py`) served on
loopback, and one real-time campaign against it: shared by its integration test and
`benchmarks/repair_loop_walltime.py`."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web

BOT = Path(__file__).parents[1] / "fixtures" / "protocols" / "pipecat_picky_bot.py"

CAMPAIGN = """\
name: pipecat-picky
seed: 23
scenarios: [refund_duplicate_charge]
agents:
  - {{name: picky, adapter: twilio, url: "ws://127.0.0.1:{port}/ws"}}
pairs:
  - contrast: [voice_profile]
    base: {{accent: us_general, affect: calm, disfluency: none, wording: plain}}
    a: {{voice_profile: male_adult}}
    b: {{voice_profile: female_adult}}
voices: 1
replicates: {replicates}
concurrency: 2
pacing: realtime
asr: {{name: faster-whisper}}
tts: {{name: espeak}}
timeouts: {{turn_s: 60, call_s: 600}}
"""


def load_bot() -> Any:
    spec = importlib.util.spec_from_file_location("va_pipecat_picky_bot", BOT)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


async def _rest_stub() -> tuple[web.AppRunner, str]:
    """Pipecat's Twilio serializer ends a call through Twilio's REST API: a loopback stub takes it."""

    async def hangup(request: web.Request) -> web.Response:
        return web.json_response({"status": "completed"})

    app = web.Application()
    app.router.add_post("/{tail:.*}", hangup)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return runner, f"http://127.0.0.1:{runner.addresses[0][1]}"


@dataclass
class PickyRun:
    run_dir: Path
    stats: Any
    statuses: dict[str, int]
    wall_s: float


async def run_against_picky_bot(
    out: Path, *, replicates: int = 1, extra: str = "", cache_dir: Path | None = None
) -> PickyRun:
    """One real-time campaign (a male_adult vs female_adult pair per replicate) against the bot; its
    audio cache is `cache_dir` (tests: the session's) or else a private one under `out`."""
    import uvicorn

    from voice_audit.harness.planning import load_campaign
    from voice_audit.harness.runtime import CampaignRunner

    os.environ.setdefault("TWILIO_ACCOUNT_SID", "AC" + "0" * 32)
    os.environ.setdefault("TWILIO_AUTH_TOKEN", "dummy-token")
    bot = load_bot()
    stats = bot.PickyStats()
    rest, rest_url = await _rest_stub()
    config = uvicorn.Config(
        bot.build_app(stats, rest_url), host="127.0.0.1", port=0, log_level="warning", lifespan="off"
    )
    server = uvicorn.Server(config)
    serving = asyncio.create_task(server.serve())
    try:
        async with asyncio.timeout(15):
            while not server.started:
                await asyncio.sleep(0.02)
        port = server.servers[0].sockets[0].getsockname()[1]
        out.mkdir(parents=True, exist_ok=True)
        path = out / "picky.yaml"
        path.write_text(CAMPAIGN.format(port=port, replicates=replicates) + extra)
        runner = CampaignRunner(
            load_campaign(path),
            out / "run",
            cache_dir=cache_dir or out / "cache",
            progress=False,
            tts_pool_size=1,
        )
        t0 = time.monotonic()
        summary = await runner.run()
        wall = time.monotonic() - t0
    finally:
        server.should_exit = True
        await asyncio.wait_for(serving, 15)
        await rest.cleanup()
    return PickyRun(out / "run", stats, dict(summary.statuses), wall)
