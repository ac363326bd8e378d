"""Festival (Debian's `festival` with the `festvox-*` voices): more recorded US English speakers.

Speakers (Debian bookworm): `ked` (CMU ked diphone voice, US male, `festvox-kdlpc16k`), `kal` (CMU
kal diphone voice, US male, `festvox-kallpc16k`: the same man as Flite's kal/kal16) and `slt` (CMU
ARCTIC slt, HTS, US female, `festvox-us-slt-hts`: the same woman as Flite's slt). The voice catalogue
(`voice_audit.harness.audio.catalogue`) names each speaker, so a campaign never counts Flite's and
Festival's kal as two people. With `voices: catalogue` (the default) a realisation gets a distinct
catalogued speaker of its accent and gender; an explicit map (keys tried in order
`"<accent voice>+<variant>"`, `"<accent voice>"`, `"<variant>"`, `"*"`) picks them yourself. Every
speaker is General American (`en-us`): any other accent is refused, never given a US speaker.

One `festival --batch` process per utterance loads the voice and writes each stretch of speech
between SSML breaks as a WAV; the breaks become silence (other SSML tags are dropped, as for Flite).
Rate maps to `Duration_Stretch` (`reference_wpm / rate_wpm`) on the diphone voices and to the HTS
engine's speed `-r` (`rate_wpm / reference_wpm`) on slt; pitch has no control here and is recorded
as not applied; volume is a gain. Output is 16 kHz mono (slt's 32 kHz is resampled). The same line,
voice and parameters give the same samples in every process (measured: byte-identical WAVs).
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import wave
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from voice_audit.harness.audio.catalogue import catalogue_voice, voice_entry
from voice_audit.harness.audio.dsp import resample
from voice_audit.harness.audio.errors import (
    BackendLoadError,
    EmptyTextError,
    SynthesisError,
    UnknownVoiceError,
)
from voice_audit.harness.audio.flite_tts import segments, variant_gender
from voice_audit.harness.audio.types import Synthesis
from voice_audit.harness.audio.voice_map import mapped_voice
from voice_audit.personas import SpeechParams

SAMPLE_RATE = 16000
REFERENCE_WPM = int(SpeechParams.model_fields["rate_wpm"].default)
_INSTALL = "apt-get install -y festival festvox-kdlpc16k festvox-kallpc16k festvox-us-slt-hts (or `make system-deps`)"


@dataclass(frozen=True)
class FestivalVoice:
    name: str
    command: str
    """The Scheme function that selects the voice."""
    engine: str
    """`diphone` (Duration_Stretch) or `hts` (the HTS engine's speed)."""
    directory: str
    """Where Debian installs the voice, to say which package is missing."""


FESTIVAL_VOICES: dict[str, FestivalVoice] = {
    "ked": FestivalVoice("ked", "voice_ked_diphone", "diphone", "english/ked_diphone"),
    "kal": FestivalVoice("kal", "voice_kal_diphone", "diphone", "english/kal_diphone"),
    "slt": FestivalVoice("slt", "voice_cmu_us_slt_arctic_hts", "hts", "us/cmu_us_slt_arctic_hts"),
}
VOICE_ROOT = Path("/usr/share/festival/voices")


def scheme_string(text: str) -> str:
    """A Scheme string literal of `text` (backslash and double quote escaped, control characters dropped)."""
    clean = "".join(ch if ch.isprintable() else " " for ch in text)
    return '"' + clean.replace("\\", "\\\\").replace('"', '\\"') + '"'


@cache
def festival_version(command: str) -> str:
    try:
        out = subprocess.run([command, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        raise BackendLoadError(f"festival: {command} does not run ({exc}); fix: {_INSTALL}") from None
    return " ".join(out.split()) or "festival (unknown version)"


class FestivalBackend:
    """`tts: {name: festival, options: {voices: catalogue}}`; see the module docstring."""

    name = "festival"

    def __init__(
        self,
        voices: dict[str, str] | str = "catalogue",
        reference_wpm: int = REFERENCE_WPM,
        timeout_s: float = 120.0,
    ) -> None:
        if isinstance(voices, str) and voices != "catalogue":
            raise BackendLoadError(
                f"festival: tts.options.voices must be `catalogue` or a map of accent voices to voices, not {voices!r}"
            )
        if isinstance(voices, dict):
            unknown = sorted(set(voices.values()) - set(FESTIVAL_VOICES))
            if unknown or not voices:
                raise BackendLoadError(
                    f"festival: unknown voice {', '.join(unknown) or '(empty map)'} in tts.options.voices "
                    f"(voices: {', '.join(FESTIVAL_VOICES)})"
                )
        if not 40 <= reference_wpm <= 600:
            raise BackendLoadError(f"festival: reference_wpm must lie in [40, 600], not {reference_wpm}")
        command = shutil.which("festival")
        if command is None:
            raise BackendLoadError(f"festival: the festival command is not installed; fix: {_INSTALL}")
        self.command = command
        self.voices: dict[str, str] | str = dict(voices) if isinstance(voices, dict) else voices
        self.reference_wpm = reference_wpm
        self.timeout_s = timeout_s
        self.sample_rate = SAMPLE_RATE
        mapping = (
            "catalogue"
            if isinstance(self.voices, str)
            else ", ".join(f"{k}={v}" for k, v in sorted(self.voices.items()))
        )
        self.version = f"{festival_version(command)}; reference {reference_wpm} wpm; voices {mapping}"

    def voice_for(self, params: SpeechParams) -> FestivalVoice:
        """The Festival voice of a realisation, or UnknownVoiceError when no speaker of its accent and gender fits."""
        if isinstance(self.voices, str):
            name = catalogue_voice(self.name, params).voice
        else:
            mapped = mapped_voice(self.voices, params)
            if mapped is None:
                raise UnknownVoiceError(
                    self.name,
                    params.espeak_name,
                    f"map it to a Festival voice in tts.options.voices (voices: {', '.join(FESTIVAL_VOICES)}), "
                    "or use voices: catalogue",
                )
            name = mapped
        entry = voice_entry(self.name, name)
        assert entry is not None, f"festival voice {name} is missing from the voice catalogue"
        if entry.accent != params.voice.lower():
            raise UnknownVoiceError(
                self.name,
                params.espeak_name,
                f"{name} is a speaker of {entry.accent}, not {params.voice.lower()}; Festival renders only en-us here",
            )
        wanted = variant_gender(params.variant)
        if wanted is not None and wanted != entry.gender:
            raise UnknownVoiceError(
                self.name,
                params.espeak_name,
                f"variant {params.variant} presents {wanted}, {name} is {entry.gender}; map it to a {wanted} voice",
            )
        voice = FESTIVAL_VOICES[name]
        if not (VOICE_ROOT / voice.directory).is_dir():
            raise BackendLoadError(f"festival: voice {name} is not installed; fix: {_INSTALL}")
        return voice

    def settings(self, voice: FestivalVoice, params: SpeechParams) -> dict[str, float]:
        if voice.engine == "hts":
            return {"hts_speed": round(params.rate_wpm / self.reference_wpm, 4)}
        return {"duration_stretch": round(self.reference_wpm / params.rate_wpm, 4)}

    def script(self, voice: FestivalVoice, applied: dict[str, float], parts: list[str], out: Path) -> str:
        lines = [f"({voice.command})"]
        if "duration_stretch" in applied:
            lines.append(f"(Parameter.set 'Duration_Stretch {applied['duration_stretch']})")
        if "hts_speed" in applied:
            lines.append(
                f'(set! hts_engine_params (append hts_engine_params (list (list "-r" {applied["hts_speed"]}))))'
            )
        for i, words in enumerate(parts):
            lines.append(
                f"(utt.save.wave (utt.synth (Utterance Text {scheme_string(words)})) {scheme_string(str(out / f'{i}.wav'))} 'riff)"
            )
        return "\n".join(lines) + "\n"

    def synthesize(self, text: str, ssml: str | None, params: SpeechParams) -> Synthesis:
        parts = [(w, ms) for w, ms in segments(text, ssml) if any(ch.isalnum() for ch in w)]
        if not parts:
            raise EmptyTextError(
                f"{self.name}: nothing speakable in {(ssml or text)!r} (voice {params.espeak_name})"
            )
        voice = self.voice_for(params)
        applied = self.settings(voice, params)
        chunks: list[np.ndarray] = []
        source_rates: set[int] = set()
        with tempfile.TemporaryDirectory(prefix="festival-") as tmp:
            out = Path(tmp)
            src = out / "say.scm"
            src.write_text(self.script(voice, applied, [w for w, _ in parts], out), encoding="utf-8")
            try:
                done = subprocess.run(
                    [self.command, "--batch", str(src)],
                    capture_output=True,
                    timeout=self.timeout_s,
                    check=False,
                )
            except subprocess.TimeoutExpired:
                raise SynthesisError(
                    f"festival ({voice.name}) took longer than {self.timeout_s:g} s"
                ) from None
            for i, (_, ms) in enumerate(parts):
                path = out / f"{i}.wav"
                if not path.is_file():
                    detail = " ".join(done.stderr.decode(errors="replace").split())[:200]
                    raise SynthesisError(
                        f"festival ({voice.name}) wrote no audio (exit {done.returncode}): {detail}"
                    )
                with wave.open(str(path), "rb") as w:
                    if w.getnchannels() != 1 or w.getsampwidth() != 2:
                        raise SynthesisError(
                            f"festival wrote {w.getnchannels()} channels of {w.getsampwidth()} bytes"
                        )
                    rate = int(w.getframerate())
                    pcm = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.int16)
                source_rates.add(rate)
                chunks.append(pcm if rate == SAMPLE_RATE else resample(pcm, rate, SAMPLE_RATE)[0])
                if ms:
                    chunks.append(np.zeros(SAMPLE_RATE * ms // 1000, np.int16))
        pcm = np.concatenate(chunks).astype(np.int16)
        gain = params.volume / 100.0
        if gain != 1.0:
            pcm = np.clip(np.rint(pcm.astype(np.float64) * gain), -32768, 32767).astype(np.int16)
        if pcm.size == 0 or not np.any(pcm):
            raise EmptyTextError(f"{self.name}: {voice.name} produced no audio for {text!r}")
        entry = voice_entry(self.name, voice.name)
        assert entry is not None
        return Synthesis(
            pcm=pcm,
            sample_rate=SAMPLE_RATE,
            backend=self.name,
            backend_version=self.version,
            params={
                "voice_name": voice.name,
                "speaker": entry.speaker,
                "speaker_description": entry.note,
                "speaker_accent": entry.accent,
                "persona_voice": params.espeak_name,
                "accent_rendering": "recorded speaker of that accent",
                **applied,
                "rate_wpm": params.rate_wpm,
                "pitch": params.pitch,
                "pitch_applied": False,
                "volume_gain": gain,
                "word_gap_applied": False,
                "source_rate": min(source_rates),
                "breaks_ms": [ms for _, ms in parts if ms],
                "input": "ssml" if ssml else "text",
            },
        )


__all__ = ["FESTIVAL_VOICES", "FestivalBackend", "FestivalVoice", "scheme_string"]
