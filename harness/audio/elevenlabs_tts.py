"""A cloud voice backend speaking ElevenLabs' text-to-speech API (`POST /v1/text-to-speech/{voice_id}`).

Voice-agent benchmarks render accented callers this way (a voice id per accent and speaker, one
model id). A persona realisation picks its voice id through the `voices` option, keys tried in
order `"<accent voice>+<variant>"`, `"<accent voice>"`, `"<variant>"`, `"*"`; a realisation
without one is refused, never given another voice. The accent rendered is the accent of the voice
id the study maps to it: the backend cannot check it, so the study's voice table must say it.

The API key is read from the environment variable NAMED by `api_key_env` (never passed as an
option, never logged, never written into a Synthesis, an error or the version string). `base_url`
points at the service or at a compatible local server. Requests carry exactly what the official
SDK sends for the same call (path, `output_format` query, `xi-api-key` header, JSON body keys
`text`, `model_id`, `voice_settings`, optional `language_code` and `seed`); a test drives the SDK
at the same local server and compares. The audio comes back as raw little-endian 16-bit PCM
(`pcm_<rate>` formats). Rate maps to `voice_settings.speed` (`rate_wpm / 165`, clamped to the
service's 0.7-1.2); pitch has no control there and is recorded as not applied; volume is a gain.
A cloud voice is not guaranteed to give the same samples twice, even with a seed: the synthesis
cache (by content hash) is what makes both calls of a pair, and the stimulus pilot and the run,
hear one recording.
"""

from __future__ import annotations

import asyncio
import os
import re
from typing import Any

import numpy as np

from voice_audit.harness.audio.errors import (
    BackendLoadError,
    EmptyTextError,
    SynthesisError,
    UnknownVoiceError,
)
from voice_audit.harness.audio.types import Synthesis
from voice_audit.harness.audio.voice_map import map_keys, mapped_voice
from voice_audit.personas import SpeechParams

DEFAULT_BASE_URL = "https://api.elevenlabs.io"
DEFAULT_MODEL = "eleven_multilingual_v2"
REFERENCE_WPM = int(SpeechParams.model_fields["rate_wpm"].default)
SPEED_RANGE = (0.7, 1.2)
_PCM_FORMAT = re.compile(r"pcm_(8000|16000|22050|24000|44100|48000)")
_SETTINGS = {"stability", "similarity_boost", "style", "use_speaker_boost"}


class ElevenLabsBackend:
    """`tts: {name: elevenlabs, options: {voices: {...}, api_key_env: ELEVENLABS_API_KEY}}`; see the module docstring."""

    name = "elevenlabs"

    def __init__(
        self,
        voices: dict[str, str],
        *,
        api_key_env: str = "ELEVENLABS_API_KEY",
        model_id: str = DEFAULT_MODEL,
        base_url: str = DEFAULT_BASE_URL,
        output_format: str = "pcm_16000",
        voice_settings: dict[str, Any] | None = None,
        language_code: str | None = None,
        seed: int | None = None,
        timeout_s: float = 60.0,
    ) -> None:
        if not voices:
            raise BackendLoadError(
                "elevenlabs: tts.options.voices is empty; map each accent (and variant) to a voice id, "
                'e.g. {"en-us": "<voice id>", "en-gb-scotland+m1": "<voice id>"}'
            )
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", api_key_env):
            raise BackendLoadError(
                "elevenlabs: api_key_env must be the NAME of an environment variable (e.g. ELEVENLABS_API_KEY), "
                "not a key"
            )
        match = _PCM_FORMAT.fullmatch(output_format)
        if match is None:
            raise BackendLoadError(
                f"elevenlabs: output_format {output_format!r} is not raw PCM; use pcm_16000 (or pcm_8000, "
                "pcm_22050, pcm_24000, pcm_44100)"
            )
        settings = dict(voice_settings or {})
        unknown = sorted(set(settings) - _SETTINGS)
        if unknown:
            raise BackendLoadError(
                f"elevenlabs: unknown voice_settings {', '.join(unknown)} (allowed: {', '.join(sorted(_SETTINGS))}; "
                "speed comes from the persona's rate)"
            )
        if not 1.0 <= timeout_s <= 600.0:
            raise BackendLoadError(f"elevenlabs: timeout_s must lie in [1, 600], not {timeout_s}")
        self.voices = dict(voices)
        self.api_key_env = api_key_env
        self.model_id = model_id
        self.base_url = base_url.rstrip("/")
        self.output_format = output_format
        self.sample_rate = int(match.group(1))
        self.voice_settings = settings
        self.language_code = language_code
        self.seed = seed
        self.timeout_s = timeout_s
        self.version = (
            f"{self.base_url} {model_id} {output_format}; settings "
            + ", ".join(f"{k}={settings[k]}" for k in sorted(settings))
            + f"; seed {seed}; voices "
            + ", ".join(f"{k}={v}" for k, v in sorted(self.voices.items()))
        )

    def voice_id(self, params: SpeechParams) -> str:
        voice = mapped_voice(self.voices, params)
        if voice is not None:
            return voice
        keys = ", ".join(f"'{k}'" for k in map_keys(params))
        raise UnknownVoiceError(
            self.name, params.espeak_name, f"map it to a voice id in tts.options.voices (keys tried: {keys})"
        )

    def speed(self, params: SpeechParams) -> float:
        return round(min(SPEED_RANGE[1], max(SPEED_RANGE[0], params.rate_wpm / REFERENCE_WPM)), 3)

    def request(self, text: str, params: SpeechParams) -> tuple[str, dict[str, str], dict[str, Any]]:
        """(path, query, JSON body) of the request for one utterance; the key goes only in the header."""
        body: dict[str, Any] = {
            "text": text,
            "model_id": self.model_id,
            "voice_settings": {**self.voice_settings, "speed": self.speed(params)},
        }
        if self.language_code is not None:
            body["language_code"] = self.language_code
        if self.seed is not None:
            body["seed"] = self.seed
        return f"/v1/text-to-speech/{self.voice_id(params)}", {"output_format": self.output_format}, body

    def _key(self) -> str:
        key = os.environ.get(self.api_key_env, "")
        if not key:
            raise SynthesisError(
                f"elevenlabs: the environment variable {self.api_key_env} is not set "
                f"(fix: export {self.api_key_env}=<your API key>, or name another variable in tts.options.api_key_env)"
            )
        return key

    async def synthesize_async(self, text: str, ssml: str | None, params: SpeechParams) -> Synthesis:
        import aiohttp

        if not text.strip():
            raise EmptyTextError(f"{self.name}: empty text for voice {params.espeak_name}")
        path, query, body = self.request(text, params)
        headers = {"xi-api-key": self._key(), "Content-Type": "application/json", "Accept": "*/*"}
        url = f"{self.base_url}{path}"
        try:
            async with (
                aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self.timeout_s)) as session,
                session.post(url, params=query, json=body, headers=headers) as resp,
            ):
                data = await resp.read()
                if resp.status != 200:
                    detail = data[:200].decode(errors="replace").replace(headers["xi-api-key"], "***")
                    raise SynthesisError(
                        f"{url} answered {resp.status} for voice {params.espeak_name}: {detail}"
                        + (
                            f" (fix: check the key in {self.api_key_env})"
                            if resp.status in (401, 403)
                            else ""
                        )
                    )
        except (TimeoutError, aiohttp.ClientError) as exc:
            raise SynthesisError(f"{url} failed: {type(exc).__name__}: {exc}") from None
        if len(data) % 2:
            raise SynthesisError(f"{url} returned {len(data)} bytes, not 16-bit PCM ({self.output_format})")
        pcm = np.frombuffer(data, dtype="<i2").astype(np.int16)
        gain = params.volume / 100.0
        if gain != 1.0:
            pcm = np.clip(np.rint(pcm.astype(np.float64) * gain), -32768, 32767).astype(np.int16)
        if pcm.size == 0 or not np.any(pcm):
            raise SynthesisError(f"{url} returned no audio for voice {params.espeak_name}")
        return Synthesis(
            pcm=pcm,
            sample_rate=self.sample_rate,
            backend=self.name,
            backend_version=self.version,
            params={
                "voice_id": path.rsplit("/", 1)[1],
                "model_id": self.model_id,
                "output_format": self.output_format,
                "voice_settings": body["voice_settings"],
                "seed": self.seed,
                "language_code": self.language_code,
                "persona_voice": params.espeak_name,
                "accent_rendering": "the cloud voice mapped to this accent",
                "rate_wpm": params.rate_wpm,
                "pitch_applied": False,
                "volume_gain": gain,
                "input": "text",
            },
        )

    def synthesize(self, text: str, ssml: str | None, params: SpeechParams) -> Synthesis:
        return asyncio.run(self.synthesize_async(text, ssml, params))


__all__ = ["DEFAULT_BASE_URL", "DEFAULT_MODEL", "ElevenLabsBackend"]
