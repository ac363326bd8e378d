"""Planted credentials never reach a log, a run folder or a report.

A Realtime agent takes its key from `api_key_env`; an HTTP agent gets `Authorization: Bearer
${TOKEN}` through the `headers` option. Both servers refuse calls without the right credential,
so the secrets provably travel on the wire. Logs are captured at DEBUG (websockets logs every
handshake header there). Then the run is analysed and reported, in full and `--redact`ed, and
every byte under the run folder, the reports and the log is scanned for each secret, raw and
in its base64 and URL-encoded forms. One campaign carries every planted credential (a third HTTP
agent's URL and options carry signatures), run, analysed and reported once for the two scans.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import secrets
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from aiohttp import web
from websockets.asyncio.server import ServerConnection, serve
from websockets.datastructures import Headers
from websockets.http11 import Request, Response

from tests.helpers.debug_log import debug_log
from tests.helpers.pilot_cache import session_cache
from voice_audit.agents.fakes import ChaosAgent, ToneAgent
from voice_audit.agents.serve import ServeConfig
from voice_audit.agents.serve.http_server import build_http_app
from voice_audit.agents.serve.realtime_server import realtime_handler
from voice_audit.harness.model.campaign import AgentSpec
from voice_audit.harness.planning import load_campaign
from voice_audit.harness.runlog import RunReader
from voice_audit.harness.runtime import CampaignRunner

KEY_ENV, TOKEN_ENV = "VA_TEST_REALTIME_KEY", "VA_TEST_HTTP_TOKEN"
CFG = ServeConfig(greeting_timeout_s=2.0, turn_timeout_s=20.0, hangup_grace_s=0.3)


def _tone() -> ToneAgent:
    return ToneAgent(
        AgentSpec(
            name="tone", adapter="voice_audit.agents.fakes.tone_agent:tone_agent", options={"hangup_after": 1}
        )
    )


CAMPAIGN = """\
name: secrets
seed: 4
scenarios: [refund_duplicate_charge]
agents:
  - {{name: rt, adapter: realtime, url: "{rt}", options: {{api_key_env: {key_env}}}}}
  - {{name: web, adapter: http, url: "{web}", options: {{headers: {{Authorization: "Bearer ${{{token_env}}}"}}}}}}
  - {{name: web-5xx, adapter: http, url: "{bad}", options: {{headers: {{Authorization: "Bearer ${{{token_env}}}"}}}}}}
pairs:
  - contrast: [accent]
    base: {{voice_profile: male_adult, affect: calm, disfluency: none, wording: plain}}
    a: {{accent: us_general}}
    b: {{accent: gb_rp}}
voices: 1
concurrency: 6
pacing: realtime
timeouts: {{connect_s: 5, turn_s: 8, call_s: 60}}
patience: {{prompt_after_s: 1, hang_up_after_s: 2}}
tts: {{name: espeak}}
"""


@contextlib.asynccontextmanager
async def _http_with_auth(adapter: Any, token: str) -> AsyncIterator[str]:
    app = build_http_app(adapter, CFG)

    @web.middleware
    async def auth(request: web.Request, handler: Any) -> web.StreamResponse:
        if request.headers.get("Authorization") != f"Bearer {token}":
            return web.json_response(
                {"error": {"kind": "protocol_error", "message": "unauthorised"}}, status=401
            )
        resp: web.StreamResponse = await handler(request)
        return resp

    app.middlewares.insert(0, auth)
    runner = web.AppRunner(app, handle_signals=False)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


@contextlib.asynccontextmanager
async def _realtime_with_auth(key: str) -> AsyncIterator[str]:
    def check(conn: ServerConnection, request: Request) -> Response | None:
        if request.headers.get("Authorization") != f"Bearer {key}":
            return Response(401, "Unauthorized", Headers(), b"no\n")
        return None

    handler = realtime_handler(_tone(), CFG)
    async with serve(handler, "127.0.0.1", 0, process_request=check) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        yield f"ws://127.0.0.1:{port}/v1/realtime"


SIGNED_TOKEN = "tok-fixed-credential"


def _signed_agent(url: str, planted: dict[str, str]) -> str:
    """An agent whose URL and options carry every kind of credential a URL or an option can: userinfo,
    `?signature=`, `?sig=`, a presigned `X-Amz-Signature`/`X-Amz-Credential`, an option named like
    `x_signature`, and a secret nested deep in the options (the one non-secret query: `region=eu`)."""
    signed = (
        url.replace("http://", f"http://caller:{planted['pw']}@")
        + f"/?signature={planted['signature']}&sig={planted['sig']}"
        + f"&X-Amz-Signature={planted['amzsig']}&X-Amz-Credential={planted['amzcred']}&region=eu"
    )
    return (
        f'  - {{name: signed, adapter: http, url: "{signed}", options: {{headers: {{Authorization: "Bearer {SIGNED_TOKEN}"}}, '
        f'x_signature: "{planted["xsig"]}", vendor: {{deep: {{client_secret: "{planted["deep"]}"}}}}}}}}\n'
    )


async def _run(tmp: Path, cache: Path, key: str, token: str, planted: dict[str, str]) -> Path:
    async with (
        _realtime_with_auth(key) as rt,
        _http_with_auth(_tone(), token) as web_url,
        _http_with_auth(ChaosAgent({"faults": ["http_5xx"]}), token) as bad,
        _http_with_auth(_tone(), SIGNED_TOKEN) as signed,
    ):
        text = CAMPAIGN.format(rt=rt, web=web_url, bad=bad, key_env=KEY_ENV, token_env=TOKEN_ENV)
        text = text.replace("pairs:", _signed_agent(signed, planted) + "pairs:", 1)
        cfile = tmp / "c.yaml"
        cfile.write_text(text)
        runner = CampaignRunner(load_campaign(cfile), tmp / "run", cache_dir=cache, progress=False)
        await runner.run()
    return tmp / "run"


def _forms(secret: str) -> set[bytes]:
    raw = secret.encode()
    return {raw, base64.b64encode(raw), base64.b64encode(b"Bearer " + raw), quote(secret).encode()}


@dataclass(frozen=True)
class Scanned:
    tmp: Path
    run_dir: Path
    key: str
    token: str
    planted: dict[str, str]
    log_file: Path


@pytest.fixture(scope="module")
def scanned(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scanned]:
    """One campaign with every planted credential (the environment's key and token, and the URL and
    option signatures), analysed and reported in full and redacted by the CLI: the two tests below
    scan its files for their own secrets."""
    tmp = tmp_path_factory.mktemp("secrets")
    key, token = "sk-planted-" + secrets.token_hex(12), "tok-planted-" + secrets.token_hex(12)
    planted = {
        name: f"{name}-{secrets.token_hex(10)}"
        for name in ("pw", "signature", "sig", "amzsig", "amzcred", "xsig", "deep")
    }
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(KEY_ENV, key)
        mp.setenv(TOKEN_ENV, token)
        with debug_log(tmp / "debug.log") as log_file:
            run_dir = asyncio.run(_run(tmp, session_cache(tmp_path_factory), key, token, planted))

        cli = [sys.executable, "-m", "voice_audit.harness.cli"]
        steps = [
            [["analyze", str(run_dir), "--no-audio", "--quiet"]],
            [  # the two reports side by side
                ["report", str(run_dir), "-o", str(tmp / "report"), "--quiet"],
                ["report", str(run_dir), "-o", str(tmp / "report-redacted"), "--redact", "--quiet"],
            ],
        ]
        for n, step in enumerate(steps):
            procs = [
                subprocess.Popen([*cli, *a], stdout=subprocess.PIPE, stderr=subprocess.STDOUT) for a in step
            ]
            for i, p in enumerate(procs):
                out, _ = p.communicate(timeout=180)
                assert p.returncode == 0, out.decode()
                (tmp / f"cli-{n}-{i}.log").write_bytes(out)
    yield Scanned(tmp, run_dir, key, token, planted, log_file)


def _leaks(tmp: Path, secrets_by_name: dict[str, str], skip: tuple[str, ...] = ()) -> tuple[int, list[str]]:
    """Bytes scanned under `tmp` (every file: the TTS cache is the session's, elsewhere) and the files
    holding a secret in any form."""
    scanned = 0
    leaks: list[str] = []
    for path in sorted(p for p in tmp.rglob("*") if p.is_file() and p.name not in skip):
        data = path.read_bytes()
        scanned += len(data)
        leaks += [
            f"{path.relative_to(tmp)} holds {n}"
            for n, v in secrets_by_name.items()
            if any(f in data for f in _forms(v))
        ]
    return scanned, leaks


def test_planted_secrets_never_written(scanned: Scanned) -> None:
    records = [r for r in RunReader(scanned.run_dir).records() if r.header.agent != "signed"]
    by_agent = {(r.header.agent, r.outcome.status, r.outcome.failure_kind) for r in records}
    # The credentials were accepted (calls completed) and the failing agent failed for its own
    # reason: the agent's failure, so an outcome of the call (completed, with its failure kind).
    assert by_agent == {
        ("rt", "completed", None),
        ("web", "completed", None),
        ("web-5xx", "completed", "http_error"),
    }, by_agent
    log_text = scanned.log_file.read_text()
    assert "> Authorization: [redacted]" in log_text  # the header was logged, masked

    n, leaks = _leaks(scanned.tmp, {"key": scanned.key, "token": scanned.token})
    assert n > 10_000 and (scanned.tmp / "report" / "report.json").exists()
    assert not leaks, leaks
    manifest = json.loads((scanned.run_dir / "run.json").read_text())
    assert "${VA_TEST_HTTP_TOKEN}" in json.dumps(manifest), "the run keeps the reference, not the value"


def test_literal_secret_in_options_is_masked_in_run_json(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    literal = "lit-" + secrets.token_hex(12)

    async def go() -> Path:
        async with _http_with_auth(_tone(), literal) as url:
            text = (
                CAMPAIGN.split("agents:")[0]
                + "agents:\n"
                + (
                    f'  - {{name: web, adapter: http, url: "{url}", options: {{headers: {{Authorization: "Bearer {literal}"}}}}}}\n'
                )
                + "pairs:"
                + CAMPAIGN.split("pairs:")[1].format()
            )
            cfile = tmp_path / "c.yaml"
            cfile.write_text(text.replace("pacing: realtime", "pacing: accelerated"))
            await CampaignRunner(
                load_campaign(cfile),
                tmp_path / "run",
                cache_dir=session_cache(tmp_path_factory),
                progress=False,
            ).run()
        return tmp_path / "run"

    run_dir = asyncio.run(go())
    assert literal.encode() not in (run_dir / "run.json").read_bytes()


def test_signatures_in_urls_and_option_names_never_written(scanned: Scanned) -> None:
    """Every kind of credential a URL or an option can carry (the `signed` agent's: userinfo,
    `?signature=`, `?sig=`, a cloud presigned `X-Amz-Signature`/`X-Amz-Credential`, an option named
    like `x_signature`, and a secret nested deep in the options); none reaches the run folder, the
    reports or the logs (the campaign file, which holds them, aside)."""
    statuses = {r.outcome.status for r in RunReader(scanned.run_dir).records() if r.header.agent == "signed"}
    assert statuses == {"completed"}
    _, leaks = _leaks(scanned.tmp, scanned.planted, skip=("c.yaml",))
    assert (scanned.tmp / "report" / "report.json").exists() and (scanned.run_dir / "run.json").exists()
    assert not leaks, leaks
    assert "region=eu" in (scanned.run_dir / "run.json").read_text()  # only the credentials are masked
