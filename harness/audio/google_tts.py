"""Google Cloud Text-to-Speech over REST (`POST /v1/text:synthesize`), LINEAR16 out.

Google's Neural2 voices cover US, British, Australian and Indian English, several speakers of each
locale. With `voices: catalogue` (the default) a realisation gets a distinct catalogued speaker of
its accent and gender (`voice_audit.harness.audio.catalogue`); an explicit map (keys tried in order
`"<accent voice>+<variant>"`, `"<accent voice>"`, `"<variant>"`, `"*"`) picks voice names yourself.
A realisation without a voice is refused, never given another accent's speaker.

The request is the one the official client library (`google-cloud-texttospeech`, REST transport)
sends for the same call: JSON `input` (`ssml` when the caller's line has SSML, else `text`),
`voice` (`languageCode`, `name`), `audioConfig` (`audioEncoding: LINEAR16`, `speakingRate`,
`pitch`, `sampleRateHertz`); the test suite drives the library at the same local server and
compares. The key is read at each request from the environment variable NAMED by `api_key_env` and
sent only in the `X-Goog-Api-Key` header (never an option, never logged or written). The answer's
`audioContent` is a WAV file (LINEAR16 comes with its header); its rate must be the one asked.
Rate maps to `speakingRate` (`rate_wpm / reference_wpm`, clamped to the service's 0.25-4.0), pitch
to `pitch` in semitones (0.2 per point away from 50, as Flite's and Azure's), volume to a gain on
the samples. The cloud does not promise the same samples twice: the synthesis cache is what makes
both calls of a pair hear one recording.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import io
import json
import os
import wave
from typing import Any

import numpy as np

from voice_audit.harness.audio.catalogue import voice_entry
from voice_audit.harness.audio.cloud_http import (
    apply_gain,
    check_key_env,
    cloud_synthesis,
    cloud_voice,
    post,
    read_key,
)
from voice_audit.harness.audio.errors import (
    BackendLoadError,
    EmptyTextError,
    SynthesisError,
)
from voice_audit.harness.audio.types import Synthesis
from voice_audit.personas import SpeechParams

DEFAULT_ENDPOINT = "https://texttospeech.googleapis.com"
PATH = "/v1/text:synthesize"
REFERENCE_WPM = int(SpeechParams.model_fields["rate_wpm"].default)
SEMITONES_PER_PITCH_POINT = 0.2
RATE_RANGE = (0.25, 4.0)
SAMPLE_RATES = (8000, 16000, 22050, 24000, 44100, 48000)


def read_wav(data: bytes, expected_rate: int, where: str) -> np.ndarray:
    """Mono 16-bit samples of a WAV answer, or SynthesisError saying what it was instead."""
    try:
        with wave.open(io.BytesIO(data), "rb") as w:
            if w.getnchannels() != 1 or w.getsampwidth() != 2:
                raise SynthesisError(
                    f"{where} returned {w.getnchannels()} channel(s) of {8 * w.getsampwidth()}-bit audio, not mono LINEAR16"
                )
            if w.getframerate() != expected_rate:
                raise SynthesisError(
                    f"{where} returned {w.getframerate()} Hz audio, {expected_rate} Hz was asked"
                )
            return np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.int16)
    except (wave.Error, EOFError) as exc:
        raise SynthesisError(f"{where} returned audioContent that is not a WAV file ({exc})") from None


class GoogleTTSBackend:
    """`tts: {name: google, options: {api_key_env: GOOGLE_TTS_API_KEY}}`; see the module docstring."""

    name = "google"

    def __init__(
        self,
        voices: dict[str, str] | str = "catalogue",
        *,
        endpoint: str = DEFAULT_ENDPOINT,
        api_key_env: str = "GOOGLE_TTS_API_KEY",
        sample_rate: int = 16000,
        reference_wpm: int = REFERENCE_WPM,
        timeout_s: float = 60.0,
    ) -> None:
        if isinstance(voices, str) and voices != "catalogue":
            raise BackendLoadError(
                f"google: tts.options.voices must be `catalogue` or a map of accent voices to voice names, not {voices!r}"
            )
        if isinstance(voices, dict) and not voices:
            raise BackendLoadError(
                "google: tts.options.voices is empty; use `catalogue` or map each accent (and variant) to a voice "
                'name, e.g. {"en-gb": "en-GB-Neural2-A"}'
            )
        if sample_rate not in SAMPLE_RATES:
            raise BackendLoadError(
                f"google: sample_rate {sample_rate} is not offered; use one of {', '.join(map(str, SAMPLE_RATES))}"
            )
        if not 40 <= reference_wpm <= 600:
            raise BackendLoadError(f"google: reference_wpm must lie in [40, 600], not {reference_wpm}")
        if not 1.0 <= timeout_s <= 600.0:
            raise BackendLoadError(f"google: timeout_s must lie in [1, 600], not {timeout_s}")
        self.voices: dict[str, str] | str = dict(voices) if isinstance(voices, dict) else voices
        self.api_key_env = check_key_env(self.name, api_key_env, "GOOGLE_TTS_API_KEY")
        self.endpoint = endpoint.rstrip("/")
        self.sample_rate = sample_rate
        self.reference_wpm = reference_wpm
        self.timeout_s = timeout_s
        mapping = (
            "catalogue"
            if isinstance(self.voices, str)
            else ", ".join(f"{k}={v}" for k, v in sorted(self.voices.items()))
        )
        self.version = f"{self.endpoint}{PATH} LINEAR16 {sample_rate} Hz; reference {reference_wpm} wpm; voices {mapping}"

    def voice_name(self, params: SpeechParams) -> str:
        return cloud_voice(self.name, self.voices, params)

    def speaking_rate(self, params: SpeechParams) -> float:
        return round(min(RATE_RANGE[1], max(RATE_RANGE[0], params.rate_wpm / self.reference_wpm)), 4)

    def pitch(self, params: SpeechParams) -> float:
        return round((params.pitch - 50) * SEMITONES_PER_PITCH_POINT, 2)

    def request(self, text: str, ssml: str | None, params: SpeechParams) -> dict[str, Any]:
        """The JSON body of one utterance (the key goes only in the header)."""
        voice = self.voice_name(params)
        entry = voice_entry(self.name, voice)
        locale = entry.locale if entry is not None else "-".join(voice.split("-")[:2])
        audio: dict[str, Any] = {"audioEncoding": "LINEAR16", "speakingRate": self.speaking_rate(params)}
        if pitch := self.pitch(params):
            audio["pitch"] = pitch  # 0 is the field's default, which the client library leaves out
        audio["sampleRateHertz"] = self.sample_rate
        return {
            "input": {"ssml": ssml} if ssml else {"text": text},
            "voice": {"languageCode": locale, "name": voice},
            "audioConfig": audio,
        }

    async def synthesize_async(self, text: str, ssml: str | None, params: SpeechParams) -> Synthesis:
        if not text.strip():
            raise EmptyTextError(f"{self.name}: empty text for voice {params.espeak_name}")
        body = self.request(text, ssml, params)
        key = read_key(self.name, self.api_key_env, dict(os.environ))
        url = f"{self.endpoint}{PATH}"
        data = await post(
            url,
            data=json.dumps(body).encode("utf-8"),
            headers={"Content-Type": "application/json", "X-Goog-Api-Key": key},
            secret=key,
            api_key_env=self.api_key_env,
            timeout_s=self.timeout_s,
            voice=params.espeak_name,
        )
        try:
            audio = base64.b64decode(json.loads(data)["audioContent"], validate=True)
        except (ValueError, KeyError, TypeError, binascii.Error) as exc:
            raise SynthesisError(
                f"{url} answered without base64 audioContent ({type(exc).__name__})"
            ) from None
        pcm, gain = apply_gain(read_wav(audio, self.sample_rate, url), params)
        if pcm.size == 0 or not np.any(pcm):
            raise SynthesisError(f"{url} returned no audio for voice {params.espeak_name}")
        vendor = {
            "speaking_rate": body["audioConfig"]["speakingRate"],
            "pitch_semitones": body["audioConfig"].get("pitch", 0.0),
        }
        return cloud_synthesis(self, pcm, gain, body["voice"]["name"], params, vendor, ssml=bool(ssml))

    def synthesize(self, text: str, ssml: str | None, params: SpeechParams) -> Synthesis:
        return asyncio.run(self.synthesize_async(text, ssml, params))


__all__ = ["DEFAULT_ENDPOINT", "GoogleTTSBackend", "read_wav"]
