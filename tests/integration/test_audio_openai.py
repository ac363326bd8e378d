"""OpenAI-compatible speech and transcription clients against a local aiohttp server (127.0.0.1 only)."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator
from typing import Any

import numpy as np
import pytest
import soundfile
from aiohttp import web

from voice_audit.harness.audio import (
    SpeechRecognizer,
    SpeechSynthesizer,
    SynthesisError,
    TranscriptionError,
    create_asr,
    create_tts,
)
from voice_audit.personas import SpeechParams


@pytest.fixture
async def server() -> AsyncIterator[tuple[str, dict[str, Any]]]:
    seen: dict[str, Any] = {"speech": [], "transcriptions": []}

    async def speech(request: web.Request) -> web.Response:
        body = await request.json()
        seen["speech"].append({"body": body, "auth": request.headers.get("Authorization")})
        if body["voice"] == "broken":
            return web.Response(status=400, text='{"error": "unknown voice"}')
        t = np.arange(int(0.5 * 24000)) / 24000
        buf = io.BytesIO()
        soundfile.write(
            buf, (0.3 * np.sin(2 * np.pi * 220 * t)).astype(np.float32), 24000, format="WAV", subtype="PCM_16"
        )
        return web.Response(body=buf.getvalue(), content_type="audio/wav")

    async def transcriptions(request: web.Request) -> web.Response:
        form = await request.post()
        upload = form["file"]
        assert isinstance(upload, web.FileField)
        audio, rate = soundfile.read(io.BytesIO(upload.file.read()), dtype="int16")
        seen["transcriptions"].append(
            {k: form[k] for k in form if k != "file"} | {"rate": rate, "n": len(audio)}
        )
        if form["model"] == "bad":
            return web.Response(status=500, text="model exploded")
        return web.json_response(
            {
                "text": " Hello there.",
                "language": "english",
                "segments": [{"start": 0.0, "end": 1.0, "avg_logprob": -0.2}],
                "words": [
                    {"word": "Hello", "start": 0.1, "end": 0.4},
                    {"word": "there.", "start": 0.5, "end": 0.8},
                ],
            }
        )

    app = web.Application()
    app.router.add_post("/v1/audio/speech", speech)
    app.router.add_post("/v1/audio/transcriptions", transcriptions)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}", seen
    finally:
        await runner.cleanup()


async def test_speech_endpoint(server: tuple[str, dict[str, Any]], monkeypatch: pytest.MonkeyPatch) -> None:
    url, seen = server
    monkeypatch.setenv("TEST_TTS_KEY", "sk-local")
    backend = create_tts(
        "openai", base_url=url, model="tts-x", voice_map={"en-us+f2": "alloy"}, api_key_env="TEST_TTS_KEY"
    )
    async with SpeechSynthesizer(backend) as synth:
        s = await synth.speak("Hello there.", None, SpeechParams(voice="en-us", variant="f2", rate_wpm=198))
        again = await synth.speak(
            "Hello there.", None, SpeechParams(voice="en-us", variant="f2", rate_wpm=198)
        )
    assert s.sample_rate == 24000 and s.pcm.dtype == np.int16 and abs(s.duration_s - 0.5) < 0.01
    assert s.params["voice"] == "alloy" and s.params["speed"] == 1.2 and again.cached
    assert len(seen["speech"]) == 1
    assert seen["speech"][0]["auth"] == "Bearer sk-local" and seen["speech"][0]["body"]["model"] == "tts-x"
    with pytest.raises(SynthesisError, match="answered 400 for voice broken"):
        await backend.synthesize_async("Hi", None, SpeechParams(voice="broken"))  # type: ignore[attr-defined]


async def test_transcription_endpoint(server: tuple[str, dict[str, Any]]) -> None:
    url, seen = server
    pcm = (np.sin(np.arange(8000) * 0.2) * 3000).astype(np.int16)
    async with SpeechRecognizer(create_asr("openai", base_url=url, model="whisper-x")) as asr:
        t = await asr.transcribe(pcm, 8000)
    assert t.text == "Hello there." and [w.word for w in t.words] == ["Hello", "there."]
    assert t.confidence == pytest.approx(np.exp(-0.2))
    sent = seen["transcriptions"][0]
    assert sent["model"] == "whisper-x" and sent["response_format"] == "verbose_json"
    assert sent["rate"] == 8000 and sent["n"] == 8000 and sent["temperature"] == "0"
    bad = create_asr("openai", base_url=url, model="bad")
    with pytest.raises(TranscriptionError, match="answered 500"):
        await bad.transcribe_async(pcm, 8000)  # type: ignore[attr-defined]


async def test_unreachable_endpoint_is_a_clear_error() -> None:
    backend = create_tts("openai", base_url="http://127.0.0.1:9", timeout_s=2)
    with pytest.raises(SynthesisError, match=r"127\.0\.0\.1:9/v1/audio/speech failed"):
        await backend.synthesize_async("Hi", None, SpeechParams(voice="en-us"))  # type: ignore[attr-defined]
