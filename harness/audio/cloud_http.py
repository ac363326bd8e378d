"""What the cloud voice backends share: the key read from a NAMED environment variable at each
request, one POST with a time limit, and errors that say which side failed without the key in them.

The key is an argument of the request headers only: it is never an option, never part of a
backend's version, a Synthesis, a cache key, a log line or an error (a vendor's error body that
echoes it is masked before it is quoted).
"""

from __future__ import annotations

import re
from typing import Any

import aiohttp
import numpy as np

from voice_audit.harness.audio.catalogue import catalogue_voice, voice_entry
from voice_audit.harness.audio.errors import BackendLoadError, SynthesisError, UnknownVoiceError
from voice_audit.harness.audio.types import Synthesis
from voice_audit.harness.audio.voice_map import map_keys, mapped_voice
from voice_audit.personas import SpeechParams

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def check_key_env(backend: str, api_key_env: str, example: str) -> str:
    """The variable's NAME, refused when it looks like a key pasted in its place."""
    if not _ENV_NAME.fullmatch(api_key_env):
        raise BackendLoadError(
            f"{backend}: api_key_env must be the NAME of an environment variable (e.g. {example}), not a key"
        )
    return api_key_env


def read_key(backend: str, api_key_env: str, environ: dict[str, str]) -> str:
    key = environ.get(api_key_env, "")
    if not key:
        raise SynthesisError(
            f"{backend}: the environment variable {api_key_env} is not set "
            f"(fix: export {api_key_env}=<your key>, or name another variable in tts.options.api_key_env)"
        )
    return key


async def post(
    url: str,
    *,
    data: bytes,
    headers: dict[str, str],
    secret: str,
    api_key_env: str,
    timeout_s: float,
    voice: str,
) -> bytes:
    """POST `data` and return the body of a 200 answer; anything else is one SynthesisError line
    naming the URL, the status and (for 401/403) the variable to check."""
    try:
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout_s)) as session,
            session.post(url, data=data, headers=headers) as resp,
        ):
            body = await resp.read()
            if resp.status != 200:
                detail = " ".join(body[:200].decode(errors="replace").replace(secret, "***").split())
                raise SynthesisError(
                    f"{url} answered {resp.status} for voice {voice}: {detail}"
                    + (f" (fix: check the key in {api_key_env})" if resp.status in (401, 403) else "")
                )
            return body
    except (TimeoutError, aiohttp.ClientError) as exc:
        raise SynthesisError(f"{url} failed: {type(exc).__name__}: {exc}".replace(secret, "***")) from None


def apply_gain(pcm: np.ndarray, params: SpeechParams) -> tuple[np.ndarray, float]:
    """Volume as a gain of `volume / 100` on int16 samples (clipped)."""
    gain = params.volume / 100.0
    if gain != 1.0:
        pcm = np.clip(np.rint(pcm.astype(np.float64) * gain), -32768, 32767).astype(np.int16)
    return pcm, gain


def cloud_voice(backend: str, voices: str | dict[str, str], params: SpeechParams) -> str:
    """The vendor voice for `params`: the catalogue's speaker (`voices: catalogue`), else the map's entry
    for accent+variant, accent, variant or `*`, in that order."""
    if isinstance(voices, str):
        return catalogue_voice(backend, params).voice
    voice = mapped_voice(voices, params)
    if voice is not None:
        return voice
    keys = ", ".join(f"'{k}'" for k in map_keys(params))
    raise UnknownVoiceError(
        backend,
        params.espeak_name,
        f"map it to a voice name in tts.options.voices (keys tried: {keys}), or use voices: catalogue",
    )


def cloud_synthesis(
    backend: Any,
    pcm: np.ndarray,
    gain: float,
    voice: str,
    params: SpeechParams,
    vendor: dict[str, Any],
    *,
    ssml: bool,
) -> Synthesis:
    """One cloud utterance's record: the vendor voice, its catalogued speaker (so two engines or rates
    of one person stay one speaker), the vendor's own settings (`vendor`) and how the persona was
    rendered; the same fields, in the same order, for every cloud backend."""
    entry = voice_entry(backend.name, voice)
    extra: dict[str, Any] = {"speaker": entry.speaker, "speaker_locale": entry.locale} if entry else {}
    return Synthesis(
        pcm=pcm,
        sample_rate=backend.sample_rate,
        backend=backend.name,
        backend_version=backend.version,
        params={
            "voice_name": voice,
            **extra,
            **vendor,
            "persona_voice": params.espeak_name,
            "accent_rendering": "recorded speaker of that accent"
            if entry is not None and entry.accent == params.voice.lower()
            else "the cloud voice mapped to this accent",
            "rate_wpm": params.rate_wpm,
            "pitch": params.pitch,
            "pitch_applied": True,
            "pitch_range_applied": False,
            "volume_gain": gain,
            "input": "ssml" if ssml else "text",
        },
    )


__all__ = ["apply_gain", "check_key_env", "cloud_synthesis", "cloud_voice", "post", "read_key"]
