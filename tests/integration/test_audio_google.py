"""The Google Cloud Text-to-Speech backend against a local server on 127.0.0.1: its requests are the
official client library's requests for the same call (`google-cloud-texttospeech` over its REST
transport, pointed at the same server with `client_options={"api_endpoint": ...}`), the WAV answer
comes back as the persona's voice, and the key is sent only in `X-Goog-Api-Key`, never written."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import logging
import wave
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from aiohttp import web

from tests.helpers.collect_imports import LazyModule, skip_unless_installed
from voice_audit.harness.audio import SpeechSynthesizer, SynthesisError, UnknownVoiceError, create_tts
from voice_audit.harness.audio.errors import BackendLoadError
from voice_audit.personas import SpeechParams

skip_unless_installed("google.cloud.texttospeech", reason="the official client comes with the dev extra")
texttospeech = LazyModule("google.cloud.texttospeech")  # imported by the test that uses it

KEY = "AIza-local-test-93b1e0f2"
ENV = "VOICE_AUDIT_TEST_GOOGLE_KEY"
LINE = "Hello, I am calling about a charge on my account."


@dataclass
class Seen:
    requests: list[dict[str, Any]] = field(default_factory=list)
    wav_rate: int | None = None


def wav_tone(rate: int, seconds: float = 0.5) -> bytes:
    t = np.arange(int(rate * seconds)) / rate
    pcm = (np.sin(2 * np.pi * 180 * t) * 7000).astype("<i2")
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(pcm.tobytes())
    return buf.getvalue()


@pytest.fixture
async def server() -> AsyncIterator[tuple[str, Seen]]:
    seen = Seen()

    async def synthesize(request: web.Request) -> web.Response:
        body = await request.read()
        seen.requests.append(
            {
                "method": request.method,
                "path": request.path,
                "query": dict(request.query),
                "headers": {k.lower(): v for k, v in request.headers.items()},
                "json": json.loads(body),
            }
        )
        if request.headers.get("X-Goog-Api-Key") != KEY:
            return web.json_response(
                {"error": {"code": 403, "message": "API key not valid.", "status": "PERMISSION_DENIED"}},
                status=403,
            )
        rate = seen.wav_rate or int(json.loads(body)["audioConfig"]["sampleRateHertz"])
        return web.json_response({"audioContent": base64.b64encode(wav_tone(rate)).decode()})

    app = web.Application()
    app.router.add_post("/v1/text:synthesize", synthesize)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}", seen
    finally:
        await runner.cleanup()


def comparable(request: dict[str, Any]) -> dict[str, Any]:
    """What must match between our request and the library's: method, path, query, JSON body and the
    headers the service reads (key, content type)."""
    keep = ("x-goog-api-key", "content-type")
    return {**request, "headers": {k: request["headers"].get(k) for k in keep}}


def sdk_call(endpoint: str, body: dict[str, Any]) -> bytes:
    """The same synthesis through the official client (REST transport), built from our request's values."""
    client = texttospeech.TextToSpeechClient(
        transport="rest", client_options={"api_endpoint": endpoint, "api_key": KEY}
    )
    source = body["input"]
    audio = body["audioConfig"]
    response = client.synthesize_speech(
        input=texttospeech.SynthesisInput(
            **({"ssml": source["ssml"]} if "ssml" in source else {"text": source["text"]})
        ),
        voice=texttospeech.VoiceSelectionParams(
            language_code=body["voice"]["languageCode"], name=body["voice"]["name"]
        ),
        audio_config=texttospeech.AudioConfig(
            audio_encoding=texttospeech.AudioEncoding.LINEAR16,
            speaking_rate=audio["speakingRate"],
            pitch=audio.get("pitch", 0.0),
            sample_rate_hertz=audio["sampleRateHertz"],
        ),
    )
    return bytes(response.audio_content)


@pytest.mark.parametrize(
    ("text", "ssml", "params", "extra"),
    [
        (LINE, None, SpeechParams(voice="en-gb", variant="f2", rate_wpm=190, pitch=62), {}),
        (
            "I, um, was charged twice.",
            '<speak>I, um,<break time="250ms"/> was charged twice.</speak>',
            SpeechParams(voice="en-in", variant="m1", rate_wpm=120),
            {"sample_rate": 24000},
        ),
        (LINE, None, SpeechParams(voice="en-us", variant="m3"), {"voices": {"en-us": "en-US-Neural2-J"}}),
    ],
)
async def test_our_request_is_the_client_librarys_request(
    server: tuple[str, Seen],
    monkeypatch: pytest.MonkeyPatch,
    text: str,
    ssml: str | None,
    params: SpeechParams,
    extra: dict[str, Any],
) -> None:
    endpoint, seen = server
    monkeypatch.setenv(ENV, KEY)
    tts = create_tts("google", endpoint=endpoint, api_key_env=ENV, **extra)
    ours = await tts.synthesize_async(text, ssml, params)
    assert ours.sample_rate == tts.sample_rate and ours.duration_s == pytest.approx(0.5, abs=0.01)
    wav = await asyncio.to_thread(sdk_call, endpoint, seen.requests[0]["json"])
    with wave.open(io.BytesIO(wav)) as w:
        assert np.array_equal(np.frombuffer(w.readframes(w.getnframes()), dtype="<i2"), ours.pcm)
    assert len(seen.requests) == 2
    mine, sdk = (comparable(r) for r in seen.requests)
    assert mine == sdk
    assert mine["path"] == "/v1/text:synthesize"
    config = mine["json"]["audioConfig"]
    assert config["speakingRate"] == round(params.rate_wpm / 165, 4)
    assert config.get("pitch", 0.0) == round((params.pitch - 50) * 0.2, 2)
    assert mine["json"]["input"] == ({"ssml": ssml} if ssml else {"text": text})
    assert ours.params["voice_name"] == mine["json"]["voice"]["name"]


async def test_catalogue_speakers_by_accent_and_gender(
    server: tuple[str, Seen], monkeypatch: pytest.MonkeyPatch
) -> None:
    endpoint, seen = server
    monkeypatch.setenv(ENV, KEY)
    tts = create_tts("google", endpoint=endpoint, api_key_env=ENV)
    names = [
        (await tts.synthesize_async(LINE, None, SpeechParams(voice="en-au", variant=v))).params["voice_name"]
        for v in ("m1", "m3")
    ]
    assert names == ["en-AU-Neural2-B", "en-AU-Neural2-D"]
    assert [r["json"]["voice"]["languageCode"] for r in seen.requests] == ["en-AU", "en-AU"]
    with pytest.raises(UnknownVoiceError, match="2 male speaker"):
        await tts.synthesize_async(LINE, None, SpeechParams(voice="en-au", variant="m5"))
    with pytest.raises(UnknownVoiceError, match="0 male speaker"):
        await tts.synthesize_async(LINE, None, SpeechParams(voice="en-gb-scotland", variant="m1"))


async def test_audio_of_another_rate_is_refused(
    server: tuple[str, Seen], monkeypatch: pytest.MonkeyPatch
) -> None:
    endpoint, seen = server
    monkeypatch.setenv(ENV, KEY)
    seen.wav_rate = 22050
    with pytest.raises(SynthesisError, match="22050 Hz audio, 16000 Hz was asked"):
        await create_tts("google", endpoint=endpoint, api_key_env=ENV).synthesize_async(
            LINE, None, SpeechParams(voice="en-us")
        )


async def test_the_key_is_sent_only_in_its_header(
    server: tuple[str, Seen], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    endpoint, seen = server
    monkeypatch.setenv(ENV, KEY)
    caplog.set_level(logging.DEBUG)
    async with SpeechSynthesizer(create_tts("google", endpoint=endpoint, api_key_env=ENV)) as synth:
        s = await synth.speak(LINE, None, SpeechParams(voice="en-us", variant="f1", volume=50))
        again = await synth.speak(LINE, None, SpeechParams(voice="en-us", variant="f1", volume=50))
    assert again.cached and len(seen.requests) == 1
    written = (
        json.dumps(s.params)
        + s.backend_version
        + s.cache_key
        + caplog.text
        + json.dumps(seen.requests[0]["json"])
    )
    assert KEY not in written
    assert seen.requests[0]["headers"]["x-goog-api-key"] == KEY
    assert s.params["volume_gain"] == 0.5 and np.abs(s.pcm).max() == pytest.approx(3500, abs=2)


async def test_a_wrong_or_missing_key_is_one_line_naming_the_variable(
    server: tuple[str, Seen], monkeypatch: pytest.MonkeyPatch
) -> None:
    endpoint, _ = server
    tts = create_tts("google", endpoint=endpoint, api_key_env=ENV)
    monkeypatch.setenv(ENV, "AIza-wrong-key-77")
    with pytest.raises(SynthesisError, match=f"answered 403 .* check the key in {ENV}") as wrong:
        await tts.synthesize_async(LINE, None, SpeechParams(voice="en-us"))
    assert "AIza-wrong-key-77" not in str(wrong.value) and "\n" not in str(wrong.value)
    monkeypatch.delenv(ENV)
    with pytest.raises(SynthesisError, match=f"environment variable {ENV} is not set"):
        await tts.synthesize_async(LINE, None, SpeechParams(voice="en-us"))


def test_options_that_would_leak_or_mislead_are_refused() -> None:
    with pytest.raises(BackendLoadError, match="NAME of an environment variable"):
        create_tts("google", api_key_env="AIza-abc-123")
    with pytest.raises(BackendLoadError, match="sample_rate 11025 is not offered"):
        create_tts("google", sample_rate=11025)
    with pytest.raises(BackendLoadError, match="catalogue"):
        create_tts("google", voices="all")
