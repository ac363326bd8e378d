"""The ElevenLabs-style cloud voice backend against a local server on 127.0.0.1: its requests are the
official SDK's requests for the same call (the SDK is driven at the same server), the audio comes
back as the persona's voice, and the key is sent only in its header, never logged or written."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from aiohttp import web

from voice_audit.harness.audio import SpeechSynthesizer, SynthesisError, UnknownVoiceError, create_tts
from voice_audit.personas import SpeechParams

elevenlabs = pytest.importorskip("elevenlabs", reason="the official SDK comes with the dev extra")

KEY = "sk-local-test-7f3a9c"
ENV = "VOICE_AUDIT_TEST_ELEVENLABS_KEY"
LINE = "Hello, I am calling about a charge on my account."
VOICES = {"en-us": "us-voice-1", "en-gb-scotland+m1": "scot-voice-1"}
SETTINGS = {"stability": 0.4, "similarity_boost": 0.8, "style": 0.1, "use_speaker_boost": True}


@dataclass
class Seen:
    requests: list[dict[str, Any]] = field(default_factory=list)


def tone(rate: int, seconds: float = 0.5) -> bytes:
    t = np.arange(int(rate * seconds)) / rate
    return (np.sin(2 * np.pi * 220 * t) * 8000).astype("<i2").tobytes()


@pytest.fixture
async def server() -> AsyncIterator[tuple[str, Seen]]:
    seen = Seen()

    async def speak(request: web.Request) -> web.Response:
        body = await request.read()
        seen.requests.append(
            {
                "method": request.method,
                "path": request.path,
                "query": dict(request.query),
                "headers": {k.lower(): v for k, v in request.headers.items()},
                "json": json.loads(body) if body else None,
            }
        )
        if request.headers.get("xi-api-key") != KEY:
            return web.json_response({"detail": {"status": "invalid_api_key"}}, status=401)
        rate = int(request.query.get("output_format", "pcm_16000").split("_")[1])
        return web.Response(body=tone(rate), content_type="application/octet-stream")

    app = web.Application()
    app.router.add_post("/v1/text-to-speech/{voice_id}", speak)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}", seen
    finally:
        await runner.cleanup()


def backend(base_url: str, **extra: Any):  # type: ignore[no-untyped-def]
    return create_tts(
        "elevenlabs", voices=VOICES, api_key_env=ENV, base_url=base_url, voice_settings=SETTINGS, **extra
    )


def comparable(request: dict[str, Any]) -> dict[str, Any]:
    """What must match between our request and the SDK's: method, path, query, JSON body, the
    headers the service reads (key, content type)."""
    keep = ("xi-api-key", "content-type")
    return {**request, "headers": {k: request["headers"].get(k) for k in keep}}


@pytest.mark.parametrize(
    ("params", "extra"),
    [
        (SpeechParams(voice="en-us", variant="f2", rate_wpm=190), {}),
        (
            SpeechParams(voice="en-gb-scotland", variant="m1", rate_wpm=120),
            {"seed": 42, "language_code": "en"},
        ),
        (
            SpeechParams(voice="en-us", variant="m3"),
            {"output_format": "pcm_22050", "model_id": "eleven_flash_v2_5"},
        ),
    ],
)
async def test_our_request_is_the_sdks_request(
    server: tuple[str, Seen], monkeypatch: pytest.MonkeyPatch, params: SpeechParams, extra: dict[str, Any]
) -> None:
    base_url, seen = server
    monkeypatch.setenv(ENV, KEY)
    tts = backend(base_url, **extra)
    ours = await tts.synthesize_async(LINE, None, params)
    assert ours.sample_rate == tts.sample_rate and ours.duration_s == pytest.approx(0.5, abs=0.01)

    from elevenlabs import AsyncElevenLabs, VoiceSettings

    client = AsyncElevenLabs(api_key=KEY, base_url=base_url)
    audio = b""
    async for chunk in client.text_to_speech.convert(
        ours.params["voice_id"],
        text=LINE,
        model_id=ours.params["model_id"],
        output_format=ours.params["output_format"],
        voice_settings=VoiceSettings(**ours.params["voice_settings"]),
        **{k: v for k, v in (("seed", tts.seed), ("language_code", tts.language_code)) if v is not None},
    ):
        audio += chunk
    assert np.array_equal(np.frombuffer(audio, dtype="<i2"), ours.pcm), "both read the same audio"
    assert len(seen.requests) == 2
    mine, sdk = (comparable(r) for r in seen.requests)
    assert mine == sdk
    assert mine["path"] == f"/v1/text-to-speech/{tts.voice_id(params)}"
    assert mine["json"]["voice_settings"]["speed"] == tts.speed(params)


async def test_rate_voice_and_volume_follow_the_persona(
    server: tuple[str, Seen], monkeypatch: pytest.MonkeyPatch
) -> None:
    base_url, seen = server
    monkeypatch.setenv(ENV, KEY)
    tts = backend(base_url)
    fast = await tts.synthesize_async(LINE, None, SpeechParams(voice="en-us", rate_wpm=400, volume=50))
    slow = await tts.synthesize_async(LINE, None, SpeechParams(voice="en-us", rate_wpm=80))
    scot = await tts.synthesize_async(LINE, None, SpeechParams(voice="en-gb-scotland", variant="m1"))
    assert [r["json"]["voice_settings"]["speed"] for r in seen.requests] == [1.2, 0.7, round(165 / 165, 3)]
    assert scot.params["voice_id"] == "scot-voice-1" and fast.params["voice_id"] == "us-voice-1"
    assert np.abs(fast.pcm).max() == pytest.approx(np.abs(slow.pcm).max() / 2, abs=1)
    with pytest.raises(UnknownVoiceError, match=r"tts\.options\.voices"):
        await tts.synthesize_async(LINE, None, SpeechParams(voice="en-gb-scotland", variant="f1"))


async def test_the_key_is_sent_only_in_its_header(
    server: tuple[str, Seen], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    base_url, seen = server
    monkeypatch.setenv(ENV, KEY)
    caplog.set_level(logging.DEBUG)
    async with SpeechSynthesizer(backend(base_url)) as synth:
        s = await synth.speak(LINE, None, SpeechParams(voice="en-us"))
        again = await synth.speak(LINE, None, SpeechParams(voice="en-us"))
    assert again.cached and len(seen.requests) == 1, "the cache serves a repeated line"
    written = (
        json.dumps(s.params)
        + s.backend_version
        + synth.backend.version
        + caplog.text
        + json.dumps(seen.requests[0]["json"])
    )
    assert KEY not in written
    assert seen.requests[0]["headers"]["xi-api-key"] == KEY


async def test_a_wrong_or_missing_key_is_one_line_naming_the_variable(
    server: tuple[str, Seen], monkeypatch: pytest.MonkeyPatch
) -> None:
    base_url, _ = server
    monkeypatch.setenv(ENV, "sk-wrong-key-123")
    with pytest.raises(SynthesisError, match=f"answered 401 .* check the key in {ENV}") as wrong:
        await backend(base_url).synthesize_async(LINE, None, SpeechParams(voice="en-us"))
    assert "sk-wrong-key-123" not in str(wrong.value) and "\n" not in str(wrong.value)
    monkeypatch.delenv(ENV)
    with pytest.raises(SynthesisError, match=f"environment variable {ENV} is not set"):
        await backend(base_url).synthesize_async(LINE, None, SpeechParams(voice="en-us"))


def test_options_that_would_leak_or_mislead_are_refused() -> None:
    from voice_audit.harness.audio.errors import BackendLoadError

    with pytest.raises(BackendLoadError, match="NAME of an environment variable"):
        create_tts("elevenlabs", voices=VOICES, api_key_env="sk-abc-123")
    with pytest.raises(BackendLoadError, match="not raw PCM"):
        create_tts("elevenlabs", voices=VOICES, output_format="mp3_44100_128")
    with pytest.raises(BackendLoadError, match="speed comes from the persona"):
        create_tts("elevenlabs", voices=VOICES, voice_settings={"speed": 1.1})
