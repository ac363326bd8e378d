"""The Azure Speech backend against a local server on 127.0.0.1 that checks each request as the
service's published REST reference defines it.

Azure's official Speech SDK is a native library speaking its own websocket protocol to
`*.tts.speech.microsoft.com`; it cannot be pointed at a plain local HTTP endpoint, so the server
here checks the REST reference instead ("Text to speech REST API",
https://learn.microsoft.com/azure/ai-services/speech-service/rest-text-to-speech, "Convert text to
speech"): `POST /cognitiveservices/v1`; headers `Ocp-Apim-Subscription-Key` (the resource key),
`Content-Type: application/ssml+xml`, `X-Microsoft-OutputFormat` (one of the listed formats; the
`raw-*-16bit-mono-pcm` ones return headerless little-endian 16-bit PCM) and `User-Agent`; body an
SSML document whose `<speak version="1.0" xml:lang=...>` holds `<voice name=...>` (SSML reference:
https://learn.microsoft.com/azure/ai-services/speech-service/speech-synthesis-markup-voice,
`prosody` `rate` as a relative percentage and `pitch` in semitones `st`, `break time`).
"""

from __future__ import annotations

import json
import logging
import xml.etree.ElementTree as ET
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from aiohttp import web

from voice_audit.harness.audio import SpeechSynthesizer, SynthesisError, UnknownVoiceError, create_tts
from voice_audit.harness.audio.azure_tts import OUTPUT_RATES
from voice_audit.harness.audio.errors import BackendLoadError
from voice_audit.personas import SpeechParams

KEY = "az-local-test-5e1d0c77"
ENV = "VOICE_AUDIT_TEST_AZURE_KEY"
LINE = "Hello, I am calling about a charge on my account."
NS = "{http://www.w3.org/2001/10/synthesis}"


@dataclass
class Seen:
    requests: list[dict[str, Any]] = field(default_factory=list)


def tone(rate: int, seconds: float = 0.5) -> bytes:
    t = np.arange(int(rate * seconds)) / rate
    return (np.sin(2 * np.pi * 200 * t) * 9000).astype("<i2").tobytes()


def reference_problem(request: web.Request, body: bytes) -> str | None:
    """What the REST reference says a request must carry, or why this one does not."""
    if request.headers.get("Content-Type") != "application/ssml+xml":
        return "Content-Type must be application/ssml+xml"
    if request.headers.get("X-Microsoft-OutputFormat") not in OUTPUT_RATES:
        return "X-Microsoft-OutputFormat must be a raw PCM format"
    if not request.headers.get("User-Agent"):
        return "User-Agent is required"
    try:
        root = ET.fromstring(body.decode("utf-8"))
    except ET.ParseError as exc:
        return f"SSML does not parse: {exc}"
    if (
        root.tag != f"{NS}speak"
        or root.get("version") != "1.0"
        or not root.get("{http://www.w3.org/XML/1998/namespace}lang")
    ):
        return "root must be <speak version='1.0' xml:lang=...> in the SSML namespace"
    voices = root.findall(f"{NS}voice")
    if len(voices) != 1 or not voices[0].get("name"):
        return "one <voice name=...> expected"
    return None


@pytest.fixture
async def server() -> AsyncIterator[tuple[str, Seen]]:
    seen = Seen()

    async def speak(request: web.Request) -> web.Response:
        body = await request.read()
        seen.requests.append(
            {
                "path": request.path,
                "headers": {k.lower(): v for k, v in request.headers.items()},
                "ssml": body.decode("utf-8"),
            }
        )
        if request.headers.get("Ocp-Apim-Subscription-Key") != KEY:
            return web.Response(status=401, text="Access denied due to invalid subscription key.")
        problem = reference_problem(request, body)
        if problem:
            return web.Response(status=400, text=problem)
        rate = OUTPUT_RATES[request.headers["X-Microsoft-OutputFormat"]]
        return web.Response(body=tone(rate), content_type="audio/x-wav")

    app = web.Application()
    app.router.add_post("/cognitiveservices/v1", speak)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}", seen
    finally:
        await runner.cleanup()


def parsed(ssml: str) -> tuple[ET.Element, ET.Element]:
    root = ET.fromstring(ssml)
    voice = root.find(f"{NS}voice")
    assert voice is not None
    prosody = voice.find(f"{NS}prosody")
    assert prosody is not None
    return voice, prosody


async def test_requests_follow_the_rest_reference_and_audio_comes_back(
    server: tuple[str, Seen], monkeypatch: pytest.MonkeyPatch
) -> None:
    base_url, seen = server
    monkeypatch.setenv(ENV, KEY)
    tts = create_tts("azure", base_url=base_url, api_key_env=ENV, output_format="raw-24khz-16bit-mono-pcm")
    ssml = '<speak>I, um,<break time="250ms"/> was charged &amp; billed twice.</speak>'
    out = await tts.synthesize_async(
        "I, um, was charged & billed twice.",
        ssml,
        SpeechParams(voice="en-ie", variant="m1", rate_wpm=198, pitch=60),
    )
    assert out.sample_rate == 24000 and out.duration_s == pytest.approx(0.5, abs=0.01)
    assert np.array_equal(out.pcm, np.frombuffer(tone(24000), dtype="<i2"))
    (req,) = seen.requests
    assert req["path"] == "/cognitiveservices/v1"
    assert req["headers"]["x-microsoft-outputformat"] == "raw-24khz-16bit-mono-pcm"
    voice, prosody = parsed(req["ssml"])
    assert voice.get("name") == "en-IE-ConnorNeural", "the catalogue's Irish English male speaker"
    assert ET.fromstring(req["ssml"]).get("{http://www.w3.org/XML/1998/namespace}lang") == "en-IE"
    assert prosody.get("rate") == "+20.00%" and prosody.get("pitch") == "+2.00st"
    brk = prosody.find(f"{NS}break")
    assert brk is not None and brk.get("time") == "250ms", "the caller's pause reaches the service"
    assert "".join(prosody.itertext()).split() == ["I,", "um,", "was", "charged", "&", "billed", "twice."]
    assert out.params["speaker"] == "azure-en-IE-Connor" and out.params["pitch_applied"] is True
    assert out.params["accent_rendering"] == "recorded speaker of that accent"


async def test_catalogue_draws_distinct_speakers_and_refuses_beyond_them(
    server: tuple[str, Seen], monkeypatch: pytest.MonkeyPatch
) -> None:
    base_url, seen = server
    monkeypatch.setenv(ENV, KEY)
    tts = create_tts("azure", base_url=base_url, api_key_env=ENV)
    names = []
    for variant in ("f1", "f2", "f4"):
        s = await tts.synthesize_async(LINE, None, SpeechParams(voice="en-gb", variant=variant))
        names.append(s.params["voice_name"])
    assert len(set(names)) == 3 and all(n.startswith("en-GB-") for n in names)
    assert names == [parsed(r["ssml"])[0].get("name") for r in seen.requests]
    # Nigerian English has one female speaker at Azure: a second realisation is refused, not substituted.
    await tts.synthesize_async(LINE, None, SpeechParams(voice="en-ng", variant="f1"))
    with pytest.raises(UnknownVoiceError, match="1 female speaker"):
        await tts.synthesize_async(LINE, None, SpeechParams(voice="en-ng", variant="f2"))
    with pytest.raises(UnknownVoiceError, match="0 male speaker"):
        await tts.synthesize_async(LINE, None, SpeechParams(voice="es", variant="m1"))


async def test_an_explicit_map_and_volume(server: tuple[str, Seen], monkeypatch: pytest.MonkeyPatch) -> None:
    base_url, seen = server
    monkeypatch.setenv(ENV, KEY)
    tts = create_tts("azure", base_url=base_url, api_key_env=ENV, voices={"en-us": "en-US-DavisNeural"})
    quiet = await tts.synthesize_async(
        LINE, None, SpeechParams(voice="en-us", variant="m3", volume=50, rate_wpm=132)
    )
    loud = await tts.synthesize_async(LINE, None, SpeechParams(voice="en-us", variant="m3"))
    assert np.abs(quiet.pcm).max() == pytest.approx(np.abs(loud.pcm).max() / 2, abs=1)
    assert parsed(seen.requests[0]["ssml"])[1].get("rate") == "-20.00%"
    assert quiet.params["speaker"] == "azure-en-US-Davis"
    with pytest.raises(UnknownVoiceError, match=r"tts\.options\.voices"):
        await tts.synthesize_async(LINE, None, SpeechParams(voice="en-gb", variant="m1"))


async def test_the_key_is_sent_only_in_its_header(
    server: tuple[str, Seen], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    base_url, seen = server
    monkeypatch.setenv(ENV, KEY)
    caplog.set_level(logging.DEBUG)
    async with SpeechSynthesizer(create_tts("azure", base_url=base_url, api_key_env=ENV)) as synth:
        s = await synth.speak(LINE, None, SpeechParams(voice="en-us"))
        again = await synth.speak(LINE, None, SpeechParams(voice="en-us"))
    assert again.cached and len(seen.requests) == 1
    written = json.dumps(s.params) + s.backend_version + s.cache_key + caplog.text + seen.requests[0]["ssml"]
    assert KEY not in written
    assert seen.requests[0]["headers"]["ocp-apim-subscription-key"] == KEY


async def test_a_wrong_or_missing_key_is_one_line_naming_the_variable(
    server: tuple[str, Seen], monkeypatch: pytest.MonkeyPatch
) -> None:
    base_url, _ = server
    tts = create_tts("azure", base_url=base_url, api_key_env=ENV)
    monkeypatch.setenv(ENV, "az-wrong-key-42")
    with pytest.raises(SynthesisError, match=f"answered 401 .* check the key in {ENV}") as wrong:
        await tts.synthesize_async(LINE, None, SpeechParams(voice="en-us"))
    assert "az-wrong-key-42" not in str(wrong.value) and "\n" not in str(wrong.value)
    monkeypatch.delenv(ENV)
    with pytest.raises(SynthesisError, match=f"environment variable {ENV} is not set"):
        await tts.synthesize_async(LINE, None, SpeechParams(voice="en-us"))


def test_options_that_would_leak_or_mislead_are_refused() -> None:
    with pytest.raises(BackendLoadError, match="NAME of an environment variable"):
        create_tts("azure", region="westeurope", api_key_env="0123abcd-key")
    with pytest.raises(BackendLoadError, match="not raw 16-bit PCM"):
        create_tts("azure", region="westeurope", output_format="audio-24khz-48kbitrate-mono-mp3")
    with pytest.raises(BackendLoadError, match="region"):
        create_tts("azure")
    tts = create_tts("azure", region="westeurope")
    assert tts.version.startswith("https://westeurope.tts.speech.microsoft.com/cognitiveservices/v1 ")
