"""Coqui TTS (`coqui-tts`) from a local checkpoint and its config.json; no weights ship in any
wheel and nothing is downloaded.

Coqui models take no pitch parameter at synthesis time, so the persona's voice maps to a speaker
name (multi-speaker models, via `speaker_map`, read like every backend's voice map:
`voice_audit.harness.audio.voice_map`). Rate is applied where the model has a duration
scale (VITS, Glow-TTS: `length_scale`): the model's own scale times `reference_wpm / rate_wpm`,
so the persona's reference rate (`reference_wpm`, default SpeechParams' 165 wpm) keeps the
model's natural pace and an affect's faster rate shortens every token alike. Models without one
record `length_scale: null`, and the rate as requested only.
The version string carries the checkpoint's and config's sha256, so a retrained model under the
same file name never hits the synthesis cache of the old one.
VITS-type models sample noise while speaking; each utterance is drawn under a seed derived from
its text and speaker (the caller's torch RNG is left as it was), so the same request gives the
same audio in any process. Coqui pads every sentence with silence; the pad after the last one is
dropped, so an utterance's duration measures speech and the caller's turn ends when it does.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import zipfile
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from voice_audit.harness.audio.dsp import to_int16
from voice_audit.harness.audio.errors import BackendLoadError, EmptyTextError, SynthesisError
from voice_audit.harness.audio.registry import require
from voice_audit.harness.audio.types import Synthesis
from voice_audit.harness.audio.voice_map import mapped_voice
from voice_audit.personas import SpeechParams

_MODULES = ("TTS", "torch", "torchaudio", "torchcodec")
"""coqui-tts refuses to import unless torchaudio and (from torch 2.9) torchcodec are installed."""
_CHECK_FIX = "fix: set the tts option model_path to a local Coqui checkpoint (.pth file or model folder)"
_CONFIG_FIX = "fix: pass config_path=<the config.json saved with the checkpoint>"
_JSON_COMMENT = re.compile(r"(\"(?:[^\"\\]|\\.)*\")|(/\*(?:.|[\n\r])*?\*/)|(//.*)")
_digests: dict[tuple[tuple[str, int, int], ...], str] = {}
_REFERENCE_WPM = int(SpeechParams.model_fields["rate_wpm"].default)


class CoquiBackend:
    name = "coqui"
    requires = _MODULES

    def __init__(
        self,
        model_path: str | Path,
        config_path: str | Path | None = None,
        *,
        speaker_map: dict[str, str] | None = None,
        reference_wpm: int = _REFERENCE_WPM,
    ) -> None:
        require(self.name, _MODULES, "coqui")
        if not 40 <= reference_wpm <= 600:
            raise BackendLoadError(f"coqui: reference_wpm {reference_wpm} is out of range (fix: use 40-600)")
        self.reference_wpm = reference_wpm
        self.model_path = Path(model_path).expanduser()
        if not self.model_path.exists():
            raise BackendLoadError(
                f"coqui: no checkpoint at {self.model_path} ({_CHECK_FIX}; nothing is downloaded)"
            )
        folder = self.model_path if self.model_path.is_dir() else self.model_path.parent
        self.config_path = (
            Path(config_path).expanduser() if config_path is not None else folder / "config.json"
        )
        if not self.config_path.is_file():
            raise BackendLoadError(f"coqui: no model config at {self.config_path} ({_CONFIG_FIX})")
        if self.model_path.is_file():
            _check_checkpoint(self.model_path)
        self.sample_rate = _sample_rate(_read_config(self.config_path), self.config_path)
        self.speaker_map = dict(speaker_map or {})
        self.model_sha256 = _sha256(self.model_path)
        self.config_sha256 = _sha256(self.config_path)
        self.version = (
            f"coqui-tts {_dist_version()}; {self.model_path.name} sha256:{self.model_sha256[:16]}"
            f"; config sha256:{self.config_sha256[:16]}"
        )
        self._synth: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        if self._synth is None:
            from TTS.utils.synthesizer import Synthesizer

            try:
                synth = Synthesizer(
                    tts_checkpoint=str(self.model_path), tts_config_path=str(self.config_path)
                )
            except Exception as exc:
                raise BackendLoadError(
                    f"coqui: cannot load {self.model_path} with {self.config_path}: {_one_line(exc)} "
                    "(fix: use the config.json saved with this checkpoint, and check the checkpoint is whole)"
                ) from None
            self.sample_rate = int(synth.output_sample_rate)
            self._synth = synth
        return self._synth

    def synthesize(self, text: str, ssml: str | None, params: SpeechParams) -> Synthesis:
        import torch
        from TTS.utils.synthesizer import PAD_SILENCE_SAMPLES

        if not text.strip():
            raise EmptyTextError(f"coqui: empty text for voice {params.espeak_name}")
        speaker = mapped_voice(self.speaker_map, params)
        seed = _seed(text, speaker)
        with self._lock, torch.random.fork_rng(devices=[]):
            synth = self._load()
            model = synth.tts_model
            natural = getattr(model, "length_scale", None)
            scale = None if natural is None else float(natural) * self.reference_wpm / params.rate_wpm
            torch.manual_seed(seed)
            try:
                if scale is not None:
                    model.length_scale = scale
                wav = synth.tts(text, speaker_name=speaker) if speaker else synth.tts(text)
            except Exception as exc:
                raise SynthesisError(
                    f"coqui ({self.model_path.name}) failed on {text[:40]!r}: {_one_line(exc)}"
                ) from None
            finally:
                if natural is not None:
                    model.length_scale = natural
        audio = np.asarray(wav, dtype=np.float32)
        if audio.size > PAD_SILENCE_SAMPLES and not audio[-PAD_SILENCE_SAMPLES:].any():
            audio = audio[:-PAD_SILENCE_SAMPLES]
        if not np.isfinite(audio).all():
            raise SynthesisError(
                f"coqui ({self.model_path.name}) produced non-finite samples for {text[:40]!r}"
            )
        peak = float(np.max(np.abs(audio))) if audio.size else 0.0
        pcm = to_int16(audio / peak * 0.9 if peak > 1.0 else audio)
        return Synthesis(
            pcm=pcm,
            sample_rate=self.sample_rate,
            backend=self.name,
            backend_version=self.version,
            params={
                "model": self.model_path.name,
                "model_path": str(self.model_path.resolve()),
                "model_sha256": self.model_sha256,
                "config_sha256": self.config_sha256,
                "speaker": speaker,
                "seed": seed,
                "persona_voice": params.espeak_name,
                "rate_wpm_requested": params.rate_wpm,
                "reference_wpm": self.reference_wpm,
                "length_scale": scale,
                "input": "text",
            },
        )


def _check_checkpoint(path: Path) -> None:
    """torch.save writes a zip archive (a bare pickle before torch 1.6); a truncated copy has no
    zip directory, so this catches it here rather than in every worker's first utterance."""
    with path.open("rb") as fh:
        head = fh.read(2)
    if zipfile.is_zipfile(path) or (len(head) == 2 and head[0] == 0x80 and head[1] <= 5):
        return
    raise BackendLoadError(
        f"coqui: {path} is not a PyTorch checkpoint (truncated or corrupt) (fix: copy or export the checkpoint again)"
    )


def _read_config(path: Path) -> dict[str, Any]:
    text = path.read_text(encoding="utf-8")
    try:
        if path.suffix in (".yaml", ".yml"):
            data = yaml.safe_load(text)
        else:
            data = json.loads(_JSON_COMMENT.sub(lambda m: m.group(1) or "", text))
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise BackendLoadError(
            f"coqui: {path} is not valid JSON/YAML ({_one_line(exc)}) ({_CONFIG_FIX})"
        ) from None
    if not isinstance(data, dict):
        raise BackendLoadError(f"coqui: {path} is not a Coqui model config ({_CONFIG_FIX})")
    return data


def _sample_rate(config: dict[str, Any], path: Path) -> int:
    audio = config.get("audio")
    rate = (audio.get("output_sample_rate") or audio.get("sample_rate")) if isinstance(audio, dict) else None
    if "model" not in config or not isinstance(rate, int) or rate <= 0:
        raise BackendLoadError(
            f"coqui: {path} is not a Coqui model config (needs 'model' and 'audio.sample_rate') ({_CONFIG_FIX})"
        )
    return rate


def _sha256(path: Path) -> str:
    """Content hash of a file, or of every file (and its name) in a model folder; memoised per
    file list with sizes and modification times, since a checkpoint can be gigabytes."""
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    stamp = tuple((str(f.resolve()), f.stat().st_size, f.stat().st_mtime_ns) for f in files)
    if stamp not in _digests:
        h = hashlib.sha256()
        for f in files:
            if f != path:
                h.update(f.relative_to(path).as_posix().encode() + b"\0")
            with f.open("rb") as fh:
                while chunk := fh.read(1 << 20):
                    h.update(chunk)
        _digests[stamp] = h.hexdigest()
    return _digests[stamp]


def _seed(text: str, speaker: str | None) -> int:
    digest = hashlib.sha256(f"{speaker or ''}\0{text}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def _one_line(exc: BaseException) -> str:
    message = " ".join(str(exc).split()) or type(exc).__name__
    return message if len(message) <= 300 else message[:297] + "..."


def _dist_version() -> str:
    for dist in ("coqui-tts", "TTS"):
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return "unknown"
