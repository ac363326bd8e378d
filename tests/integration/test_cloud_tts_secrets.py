"""A whole campaign voiced by a cloud TTS backend (Azure Speech, Google Cloud Text-to-Speech) against a
local server on 127.0.0.1 that refuses requests without the planted key: the calls complete (so the
key provably travelled, in its vendor's header), and every byte of the run folder and of the DEBUG
log is scanned for the key, raw, base64- and URL-encoded. The server speaks each requested line
with Flite, so the caller is real speech the agent answers."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import io
import json
import re
import secrets
import shutil
import wave
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import quote

import numpy as np
import pytest
from aiohttp import web

from tests.helpers.debug_log import debug_log
from voice_audit.harness.audio import create_tts
from voice_audit.harness.planning import load_campaign
from voice_audit.harness.runlog import RunReader
from voice_audit.harness.runtime import CampaignRunner
from voice_audit.personas import SpeechParams

pytestmark = pytest.mark.skipif(shutil.which("flite") is None, reason="the local server speaks with flite")

ENV = "VA_TEST_CLOUD_TTS_KEY"
CAMPAIGN = """\
name: cloud-secrets
seed: 9
scenarios: [refund_duplicate_charge]
agents: [{{name: s, adapter: "voice_audit.agents.fakes.scripted:scripted"}}]
pairs:
  - contrast: [accent]
    base: {{voice_profile: male_adult, affect: calm, disfluency: none, wording: plain}}
    a: {{accent: us_general}}
    b: {{accent: gb_southern}}
voices: 2
concurrency: 2
tts: {tts}
"""
_TAG = re.compile(r"<[^>]+>")


def _speak(ssml_or_text: str) -> np.ndarray:
    words = " ".join(_TAG.sub(" ", ssml_or_text).split()) or "hello"
    flite = create_tts("flite", voices={"*": "rms", "en-us": "rms"})
    return flite.synthesize(words, None, SpeechParams(voice="en-us", variant="m1")).pcm


@contextlib.asynccontextmanager
async def vendor(key: str) -> AsyncIterator[tuple[str, list[str]]]:
    seen: list[str] = []

    async def azure(request: web.Request) -> web.Response:
        seen.append("azure")
        if request.headers.get("Ocp-Apim-Subscription-Key") != key:
            return web.Response(status=401, text="Access denied due to invalid subscription key.")
        assert request.headers["X-Microsoft-OutputFormat"] == "raw-16khz-16bit-mono-pcm"
        pcm = await asyncio.to_thread(_speak, (await request.read()).decode())
        return web.Response(body=pcm.astype("<i2").tobytes(), content_type="audio/x-wav")

    async def google(request: web.Request) -> web.Response:
        seen.append("google")
        if request.headers.get("X-Goog-Api-Key") != key:
            return web.json_response({"error": {"code": 403, "status": "PERMISSION_DENIED"}}, status=403)
        body = await request.json()
        assert body["audioConfig"]["sampleRateHertz"] == 16000
        pcm = await asyncio.to_thread(_speak, body["input"].get("ssml") or body["input"]["text"])
        buf = io.BytesIO()
        with wave.open(buf, "wb") as w:
            w.setnchannels(1)
            w.setsampwidth(2)
            w.setframerate(16000)
            w.writeframes(pcm.astype("<i2").tobytes())
        return web.json_response({"audioContent": base64.b64encode(buf.getvalue()).decode()})

    app = web.Application()
    app.router.add_post("/cognitiveservices/v1", azure)
    app.router.add_post("/v1/text:synthesize", google)
    runner = web.AppRunner(app, handle_signals=False)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}", seen
    finally:
        await runner.cleanup()


def _forms(secret: str) -> set[bytes]:
    raw = secret.encode()
    return {raw, base64.b64encode(raw), quote(secret).encode()}


@pytest.mark.parametrize("backend", ["azure", "google"])
def test_a_cloud_voiced_run_never_writes_the_key(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = f"{backend}-planted-" + secrets.token_hex(12)
    monkeypatch.setenv(ENV, key)

    async def run() -> tuple[Path, list[str]]:
        async with vendor(key) as (url, seen):
            where = f"base_url: {url}" if backend == "azure" else f"endpoint: {url}"
            cfile = tmp_path / "c.yaml"
            cfile.write_text(
                CAMPAIGN.format(tts=f"{{name: {backend}, options: {{{where}, api_key_env: {ENV}}}}}")
            )
            run_dir = tmp_path / "run"
            await CampaignRunner(
                load_campaign(cfile), run_dir, cache_dir=tmp_path / "cache", progress=False, tts_pool_size=1
            ).run()
            return run_dir, seen

    # numba logs every statement of a kernel it compiles at DEBUG (librosa's, compiled once on a
    # fresh install): compiler trace that cannot hold the key and only slows the compilation
    with debug_log(tmp_path / "debug.log", quiet=("numba",)):
        run_dir, seen = asyncio.run(run())

    records = list(RunReader(run_dir).records())
    assert len(records) == 4 and all(r.outcome.status == "completed" for r in records), [
        (r.outcome.status, r.outcome.failure_kind, r.outcome.termination) for r in records
    ]
    assert seen and set(seen) == {backend}, "the caller's lines came from the vendor's server"
    manifest = json.loads((run_dir / "run.json").read_text())
    assert ENV in json.dumps(manifest), "the run keeps the variable's name"
    scanned = 0
    leaks = []
    for path in sorted(p for p in tmp_path.rglob("*") if p.is_file()):
        data = path.read_bytes()
        scanned += len(data)
        if any(f in data for f in _forms(key)):
            leaks.append(str(path.relative_to(tmp_path)))
    assert scanned > 10_000
    assert not leaks, leaks
