"""Clients for OpenAI-compatible speech endpoints: `/v1/audio/speech` and `/v1/audio/transcriptions`.

Both are I/O-bound, so the facades await the `*_async` methods directly; the synchronous methods
exist for the Protocols and for worker threads. One session per request keeps them safe to use
from any event loop; the API key comes from an option or an environment variable named by the user.
"""

from __future__ import annotations

import asyncio
import io
import math
import os
from typing import Any

import numpy as np

from voice_audit.harness.audio.dsp import check_pcm, to_int16
from voice_audit.harness.audio.errors import EmptyTextError, SynthesisError, TranscriptionError
from voice_audit.harness.audio.types import Synthesis, Transcript, Word
from voice_audit.personas import SpeechParams

DEFAULT_RATE_WPM = 165


def _headers(api_key: str | None, api_key_env: str | None) -> dict[str, str]:
    key = api_key or (os.environ.get(api_key_env) if api_key_env else None)
    return {"Authorization": f"Bearer {key}"} if key else {}


def _decode_wav(data: bytes, what: str) -> tuple[np.ndarray, int]:
    import soundfile

    try:
        audio, rate = soundfile.read(io.BytesIO(data), dtype="int16", always_2d=True)
    except Exception as exc:
        raise SynthesisError(f"{what}: response is not a readable WAV ({exc})") from exc
    return np.ascontiguousarray(
        audio.mean(axis=1).astype(np.int16) if audio.shape[1] > 1 else audio[:, 0]
    ), int(rate)


class OpenAISpeechBackend:
    """TTS through `/v1/audio/speech`. `voice_map` maps persona voices to the service's voice names."""

    name = "openai-speech"

    def __init__(
        self,
        base_url: str,
        model: str = "tts-1",
        *,
        voice_map: dict[str, str] | None = None,
        api_key: str | None = None,
        api_key_env: str | None = None,
        timeout_s: float = 60.0,
        sample_rate: int = 24000,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.voice_map = dict(voice_map or {})
        self._headers = _headers(api_key, api_key_env)
        self.timeout_s = timeout_s
        self.sample_rate = sample_rate
        self.version = f"{self.base_url} {model}"

    def request_body(self, text: str, params: SpeechParams) -> dict[str, Any]:
        return {
            "model": self.model,
            "input": text,
            "voice": self.voice_map.get(params.espeak_name, self.voice_map.get(params.voice, params.voice)),
            "response_format": "wav",
            "speed": round(params.rate_wpm / DEFAULT_RATE_WPM, 3),
        }

    async def synthesize_async(self, text: str, ssml: str | None, params: SpeechParams) -> Synthesis:
        import aiohttp

        if not text.strip():
            raise EmptyTextError(f"{self.name}: empty text for voice {params.espeak_name}")
        body = self.request_body(text, params)
        url = f"{self.base_url}/v1/audio/speech"
        try:
            async with (
                aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self.timeout_s)) as session,
                session.post(url, json=body, headers=self._headers) as resp,
            ):
                data = await resp.read()
                if resp.status != 200:
                    raise SynthesisError(
                        f"{url} answered {resp.status} for voice {body['voice']}: {data[:200].decode(errors='replace')}"
                    )
        except (TimeoutError, aiohttp.ClientError) as exc:
            raise SynthesisError(f"{url} failed: {type(exc).__name__}: {exc}") from exc
        pcm, rate = _decode_wav(data, url)
        if pcm.size == 0:
            raise SynthesisError(f"{url} returned no audio for voice {body['voice']}")
        return Synthesis(
            pcm=pcm,
            sample_rate=rate,
            backend=self.name,
            backend_version=self.version,
            params=body | {"input": "text"},
        )

    def synthesize(self, text: str, ssml: str | None, params: SpeechParams) -> Synthesis:
        return asyncio.run(self.synthesize_async(text, ssml, params))


class OpenAITranscriptionBackend:
    """ASR through `/v1/audio/transcriptions` (verbose_json, word timestamps where the service has them).

    Confidence is exp(mean segment `avg_logprob`) when the service returns segments, else None.
    """

    name = "openai-transcriptions"

    def __init__(
        self,
        base_url: str,
        model: str = "whisper-1",
        *,
        language: str | None = "en",
        api_key: str | None = None,
        api_key_env: str | None = None,
        timeout_s: float = 60.0,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.language = language
        self._headers = _headers(api_key, api_key_env)
        self.timeout_s = timeout_s

    async def transcribe_async(self, pcm: np.ndarray, sample_rate: int) -> Transcript:
        import aiohttp
        import soundfile

        check_pcm(pcm, sample_rate, allow_silent=True, allow_clipped=True)
        buf = io.BytesIO()
        soundfile.write(buf, to_int16(pcm), sample_rate, format="WAV", subtype="PCM_16")
        form = aiohttp.FormData()
        form.add_field("file", buf.getvalue(), filename="audio.wav", content_type="audio/wav")
        form.add_field("model", self.model)
        form.add_field("response_format", "verbose_json")
        form.add_field("timestamp_granularities[]", "word")
        form.add_field("temperature", "0")
        if self.language:
            form.add_field("language", self.language)
        url = f"{self.base_url}/v1/audio/transcriptions"
        try:
            async with (
                aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self.timeout_s)) as session,
                session.post(url, data=form, headers=self._headers) as resp,
            ):
                if resp.status != 200:
                    raise TranscriptionError(f"{url} answered {resp.status}: {(await resp.text())[:200]}")
                body = await resp.json(content_type=None)
        except (TimeoutError, aiohttp.ClientError, ValueError) as exc:
            raise TranscriptionError(f"{url} failed: {type(exc).__name__}: {exc}") from exc
        return self.parse(body, pcm.size / sample_rate)

    def parse(self, body: dict[str, Any], seconds: float) -> Transcript:
        words = tuple(
            Word(word=str(w["word"]).strip(), start_s=float(w["start"]), end_s=float(w["end"]))
            for w in body.get("words") or []
        )
        logprobs = [float(s["avg_logprob"]) for s in body.get("segments") or [] if "avg_logprob" in s]
        confidence = min(1.0, math.exp(sum(logprobs) / len(logprobs))) if logprobs else None
        return Transcript(
            text=str(body.get("text", "")).strip(),
            words=words,
            confidence=confidence,
            backend=self.name,
            model=self.model,
            language=body.get("language"),
            audio_seconds=seconds,
        )

    def transcribe(self, pcm: np.ndarray, sample_rate: int) -> Transcript:
        return asyncio.run(self.transcribe_async(pcm, sample_rate))
