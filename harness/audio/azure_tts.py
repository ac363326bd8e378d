"""Azure Speech text to speech over REST: SSML in, raw PCM out (`POST /cognitiveservices/v1`).

Azure's neural voices cover the widest range of English locales of any vendor (US, British, Irish,
Indian, Australian, New Zealand, Canadian, Nigerian, South African, Kenyan, Tanzanian, Philippine,
Singapore, Hong Kong English), each voice recorded from a speaker of its locale. With
`voices: catalogue` (the default) a realisation gets a distinct catalogued speaker of its accent and
gender (`voice_audit.harness.audio.catalogue`); an explicit map (keys tried in order
`"<accent voice>+<variant>"`, `"<accent voice>"`, `"<variant>"`, `"*"`) picks voice names yourself.
A realisation without a voice is refused, never given another accent's speaker.

The request is the one the service's REST reference defines: headers `Ocp-Apim-Subscription-Key`
(the key, read at each request from the environment variable NAMED by `api_key_env`; never an
option, never logged or written), `Content-Type: application/ssml+xml`, `X-Microsoft-OutputFormat`
(a raw 16-bit mono PCM format: `raw-8khz-16bit-mono-pcm`, `raw-16khz-16bit-mono-pcm`,
`raw-22050hz-16bit-mono-pcm`, `raw-24khz-16bit-mono-pcm`, `raw-44100hz-16bit-mono-pcm`,
`raw-48khz-16bit-mono-pcm`) and `User-Agent`; the body is `<speak>` with one `<voice name=...>`
holding a `<prosody>`. Rate maps to prosody `rate` (relative to `reference_wpm`), pitch to prosody
`pitch` in semitones (0.2 per point away from 50, as Flite's), volume to a gain on the samples. The
caller's SSML breaks pass through. The cloud does not promise the same samples twice: the synthesis
cache is what makes both calls of a pair hear one recording.
"""

from __future__ import annotations

import asyncio
import os
import re
from xml.sax.saxutils import escape, quoteattr

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

REFERENCE_WPM = int(SpeechParams.model_fields["rate_wpm"].default)
SEMITONES_PER_PITCH_POINT = 0.2
OUTPUT_RATES = {
    "raw-8khz-16bit-mono-pcm": 8000,
    "raw-16khz-16bit-mono-pcm": 16000,
    "raw-22050hz-16bit-mono-pcm": 22050,
    "raw-24khz-16bit-mono-pcm": 24000,
    "raw-44100hz-16bit-mono-pcm": 44100,
    "raw-48khz-16bit-mono-pcm": 48000,
}
PATH = "/cognitiveservices/v1"
USER_AGENT = "voice-audit"
_SPEAK = re.compile(r"^\s*<speak\b[^>]*>(.*)</speak>\s*$", re.DOTALL | re.IGNORECASE)
_REGION = re.compile(r"[a-z0-9]+")


def ssml_content(text: str, ssml: str | None) -> str:
    """What goes inside the voice's prosody: the caller's SSML without its `<speak>` wrapper (its
    words are escaped already, its breaks are Azure's), else the escaped text."""
    if ssml:
        m = _SPEAK.match(ssml)
        return (m.group(1) if m else ssml).strip()
    return escape(text.strip())


class AzureSpeechBackend:
    """`tts: {name: azure, options: {region: westeurope, api_key_env: AZURE_SPEECH_KEY}}`; see the module docstring."""

    name = "azure"

    def __init__(
        self,
        voices: dict[str, str] | str = "catalogue",
        *,
        region: str | None = None,
        base_url: str | None = None,
        api_key_env: str = "AZURE_SPEECH_KEY",
        output_format: str = "raw-16khz-16bit-mono-pcm",
        reference_wpm: int = REFERENCE_WPM,
        timeout_s: float = 60.0,
    ) -> None:
        if isinstance(voices, str) and voices != "catalogue":
            raise BackendLoadError(
                f"azure: tts.options.voices must be `catalogue` or a map of accent voices to voice names, not {voices!r}"
            )
        if isinstance(voices, dict) and not voices:
            raise BackendLoadError(
                "azure: tts.options.voices is empty; use `catalogue` or map each accent (and variant) to a voice name, "
                'e.g. {"en-us": "en-US-JennyNeural"}'
            )
        if base_url is None:
            if region is None or not _REGION.fullmatch(region):
                raise BackendLoadError(
                    f"azure: set tts.options.region to your Speech resource's region (e.g. westeurope), not {region!r}, "
                    "or base_url to an endpoint"
                )
            base_url = f"https://{region}.tts.speech.microsoft.com"
        if output_format not in OUTPUT_RATES:
            raise BackendLoadError(
                f"azure: output_format {output_format!r} is not raw 16-bit PCM; use one of {', '.join(OUTPUT_RATES)}"
            )
        if not 40 <= reference_wpm <= 600:
            raise BackendLoadError(f"azure: reference_wpm must lie in [40, 600], not {reference_wpm}")
        if not 1.0 <= timeout_s <= 600.0:
            raise BackendLoadError(f"azure: timeout_s must lie in [1, 600], not {timeout_s}")
        self.voices: dict[str, str] | str = dict(voices) if isinstance(voices, dict) else voices
        self.api_key_env = check_key_env(self.name, api_key_env, "AZURE_SPEECH_KEY")
        self.base_url = base_url.rstrip("/")
        self.output_format = output_format
        self.sample_rate = OUTPUT_RATES[output_format]
        self.reference_wpm = reference_wpm
        self.timeout_s = timeout_s
        mapping = (
            "catalogue"
            if isinstance(self.voices, str)
            else ", ".join(f"{k}={v}" for k, v in sorted(self.voices.items()))
        )
        self.version = (
            f"{self.base_url}{PATH} {output_format}; reference {reference_wpm} wpm; voices {mapping}"
        )

    def voice_name(self, params: SpeechParams) -> str:
        return cloud_voice(self.name, self.voices, params)

    def prosody(self, params: SpeechParams) -> dict[str, str]:
        rate = (params.rate_wpm / self.reference_wpm - 1.0) * 100.0
        pitch = (params.pitch - 50) * SEMITONES_PER_PITCH_POINT
        return {"rate": f"{rate:+.2f}%", "pitch": f"{pitch:+.2f}st"}

    def request(self, text: str, ssml: str | None, params: SpeechParams) -> tuple[str, dict[str, str], str]:
        """(URL, headers without the key, SSML body) of one utterance."""
        voice = self.voice_name(params)
        entry = voice_entry(self.name, voice)
        locale = entry.locale if entry is not None else "-".join(voice.split("-")[:2])
        prosody = self.prosody(params)
        body = (
            f"<speak version='1.0' xmlns='http://www.w3.org/2001/10/synthesis' xml:lang={quoteattr(locale)}>"
            f"<voice name={quoteattr(voice)}>"
            f"<prosody rate={quoteattr(prosody['rate'])} pitch={quoteattr(prosody['pitch'])}>"
            f"{ssml_content(text, ssml)}</prosody></voice></speak>"
        )
        headers = {
            "Content-Type": "application/ssml+xml",
            "X-Microsoft-OutputFormat": self.output_format,
            "User-Agent": USER_AGENT,
        }
        return f"{self.base_url}{PATH}", headers, body

    async def synthesize_async(self, text: str, ssml: str | None, params: SpeechParams) -> Synthesis:
        if not text.strip():
            raise EmptyTextError(f"{self.name}: empty text for voice {params.espeak_name}")
        url, headers, body = self.request(text, ssml, params)
        key = read_key(self.name, self.api_key_env, dict(os.environ))
        data = await post(
            url,
            data=body.encode("utf-8"),
            headers={**headers, "Ocp-Apim-Subscription-Key": key},
            secret=key,
            api_key_env=self.api_key_env,
            timeout_s=self.timeout_s,
            voice=params.espeak_name,
        )
        if len(data) % 2:
            raise SynthesisError(f"{url} returned {len(data)} bytes, not 16-bit PCM ({self.output_format})")
        pcm, gain = apply_gain(np.frombuffer(data, dtype="<i2").astype(np.int16), params)
        if pcm.size == 0 or not np.any(pcm):
            raise SynthesisError(f"{url} returned no audio for voice {params.espeak_name}")
        voice = self.voice_name(params)
        prosody = self.prosody(params)
        vendor = {
            "output_format": self.output_format,
            "prosody_rate": prosody["rate"],
            "prosody_pitch": prosody["pitch"],
        }
        return cloud_synthesis(self, pcm, gain, voice, params, vendor, ssml=bool(ssml))

    def synthesize(self, text: str, ssml: str | None, params: SpeechParams) -> Synthesis:
        return asyncio.run(self.synthesize_async(text, ssml, params))


__all__ = ["OUTPUT_RATES", "AzureSpeechBackend", "ssml_content"]
