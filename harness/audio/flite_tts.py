"""Flite (CMU, Debian's `flite` / `libflite1`): voices built from recordings of real speakers.

Speakers: `rms` (US male), `slt` (US female), `awb` (Scottish English male), all CMU ARCTIC
clustergen voices at 16 kHz, and `kal` / `kal16` (one US male diphone voice at 8 / 16 kHz).
Flite renders only the accents its speakers have: a persona accent whose eSpeak voice is `en-us`
is rendered by rms, slt, kal or kal16, `en-gb-scotland` by awb; every other accent is refused
(UnknownVoiceError) rather than given a speaker of another accent. A realisation picks its speaker
through the `voices` option (keys tried in order: `"<accent voice>+<variant>"`, `"<accent voice>"`,
`"<variant>"`, `"*"`); by default US female variants (f1-f5, grandma) get slt, other US variants
rms, Scottish ones awb. A speaker whose gender contradicts the variant's (an f-variant on awb) is
refused: Flite has no female Scottish English speaker.

Persona parameters: rate maps to `duration_stretch` (the speaker's own stretch times
`reference_wpm / rate_wpm`), volume to a gain of `volume / 100`. Pitch maps to
`int_f0_target_mean` (the speaker's own mean F0 moved by 0.2 semitone per point away from 50, the
scale's "voice default") and pitch range to `int_f0_target_stddev` (the speaker's own deviation
times `pitch_range / 50`) on every voice but rms: Debian's Flite 2.2 rms ignores both features
(measured: median F0 98.9 Hz at any target, while slt and awb follow a 90/140/200 Hz target with
85/134/194 Hz), so for rms pitch is recorded as not applied, as for Piper, and its own F0 is its
pitch. SSML is reduced to what the caller's lines use: `<break time=.../>` becomes silence
between separately spoken segments; other tags are dropped. Word gaps are not applied (recorded).

Output is 16 kHz mono int16 (kal's 8 kHz is resampled). The clustergen vocoder draws its noise
from libc's `rand()`; seeding it (srand(1), what a fresh process starts with) before every
utterance makes each line the same samples in any process and order, and the in-process library
and the `flite` command give identical audio. The library path (ctypes, default) costs a few
milliseconds per utterance; `engine: cli` runs the command instead.
"""

from __future__ import annotations

import ctypes
import html
import re
import shutil
import subprocess
import tempfile
import threading
import wave
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal

import numpy as np

from voice_audit.harness.audio.catalogue import catalogue_map
from voice_audit.harness.audio.dsp import resample
from voice_audit.harness.audio.errors import (
    BackendLoadError,
    EmptyTextError,
    SynthesisError,
    UnknownVoiceError,
)
from voice_audit.harness.audio.types import Synthesis
from voice_audit.harness.audio.voice_map import map_keys, mapped_voice
from voice_audit.personas import SpeechParams

SAMPLE_RATE = 16000
REFERENCE_WPM = int(SpeechParams.model_fields["rate_wpm"].default)
SEMITONES_PER_PITCH_POINT = 0.2
_INSTALL = "apt-get install -y flite (or `make system-deps`)"
_SEED = 1


@dataclass(frozen=True)
class FliteVoice:
    """One Flite speaker and what it can credibly render."""

    name: str
    library: str
    gender: Literal["female", "male"]
    accent: str
    """The eSpeak voice name of the speaker's own accent (the persona catalogue's accent voice)."""
    description: str
    pitch_control: bool = True


FLITE_VOICES: dict[str, FliteVoice] = {
    "rms": FliteVoice(
        "rms",
        "cmu_us_rms",
        "male",
        "en-us",
        "CMU ARCTIC rms, US English male (clustergen)",
        pitch_control=False,
    ),
    "slt": FliteVoice(
        "slt", "cmu_us_slt", "female", "en-us", "CMU ARCTIC slt, US English female (clustergen)"
    ),
    "awb": FliteVoice(
        "awb", "cmu_us_awb", "male", "en-gb-scotland", "CMU ARCTIC awb, Scottish English male (clustergen)"
    ),
    "kal": FliteVoice("kal", "cmu_us_kal", "male", "en-us", "CMU kal, US English male (diphone, 8 kHz)"),
    "kal16": FliteVoice(
        "kal16", "cmu_us_kal16", "male", "en-us", "CMU kal, US English male (diphone, 16 kHz)"
    ),
}

DEFAULT_VOICES: dict[str, str] = {
    **{f"en-us+{v}": "slt" for v in ("f1", "f2", "f3", "f4", "f5", "grandma")},
    "en-us": "rms",
    "en-gb-scotland": "awb",
}

_BREAK = re.compile(r"<break\b([^>]*)/?>", re.IGNORECASE)
_TIME = re.compile(r"""time\s*=\s*["']\s*([0-9.]+)\s*(ms|s)\s*["']""", re.IGNORECASE)
_TAG = re.compile(r"<[^>]*>")
_MAX_BREAK_MS = 3000

# Feature names are stored by pointer in Flite's feature lists: they must live as long as the process.
_DURATION_STRETCH = b"duration_stretch"
_F0_MEAN = b"int_f0_target_mean"
_F0_STDDEV = b"int_f0_target_stddev"


def variant_gender(variant: str | None) -> Literal["female", "male"] | None:
    """The gender an eSpeak variant name presents (f1-f5, grandma: female; m1-m8: male), else None."""
    v = (variant or "").lower()
    if v == "grandma" or re.fullmatch(r"f\d+", v):
        return "female"
    if re.fullmatch(r"m\d+", v):
        return "male"
    return None


def segments(text: str, ssml: str | None) -> list[tuple[str, int]]:
    """(words, silence after them in ms) per stretch of speech; SSML breaks split the stretches."""
    if not ssml:
        return [(text.strip(), 0)]
    out: list[tuple[str, int]] = []
    pos = 0
    for m in _BREAK.finditer(ssml):
        t = _TIME.search(m.group(1))
        ms = 0
        if t:
            value = float(t.group(1))
            ms = round(value * (1000 if t.group(2).lower() == "s" else 1))
        out.append((_plain(ssml[pos : m.start()]), min(ms, _MAX_BREAK_MS)))
        pos = m.end()
    out.append((_plain(ssml[pos:]), 0))
    merged: list[tuple[str, int]] = []
    for words, ms in out:
        if not any(ch.isalnum() for ch in words):
            if merged:
                merged[-1] = (merged[-1][0], merged[-1][1] + ms)
            continue
        merged.append((words, ms))
    return merged


def _plain(fragment: str) -> str:
    return " ".join(html.unescape(_TAG.sub(" ", fragment)).split())


class _Wave(ctypes.Structure):
    _fields_ = (
        ("type", ctypes.c_char_p),
        ("sample_rate", ctypes.c_int),
        ("num_samples", ctypes.c_int),
        ("num_channels", ctypes.c_int),
        ("samples", ctypes.POINTER(ctypes.c_short)),
    )


class _Voice(ctypes.Structure):
    _fields_ = (
        ("name", ctypes.c_char_p),
        ("features", ctypes.c_void_p),
        ("ffunctions", ctypes.c_void_p),
        ("utt_init", ctypes.c_void_p),
    )


class _CgDb(ctypes.Structure):
    """The leading fields of cst_cg_db (flite's cst_cg.h keeps them stable)."""

    _fields_ = (
        ("name", ctypes.c_char_p),
        ("types", ctypes.c_void_p),
        ("num_types", ctypes.c_int),
        ("sample_rate", ctypes.c_int),
        ("f0_mean", ctypes.c_float),
        ("f0_stddev", ctypes.c_float),
    )


@dataclass(frozen=True)
class _Defaults:
    duration_stretch: float
    f0_mean: float
    f0_stddev: float
    sample_rate: int
    pitch_control: bool


class _Library:
    """libflite and its registered voices, one per process; Flite is not re-entrant, so one lock."""

    def __init__(self) -> None:
        mode = ctypes.RTLD_GLOBAL
        try:
            self.lib = ctypes.CDLL("libflite.so.1", mode=mode)
            ctypes.CDLL("libflite_usenglish.so.1", mode=mode)
            ctypes.CDLL("libflite_cmulex.so.1", mode=mode)
            self.libc = ctypes.CDLL("libc.so.6")
        except OSError as exc:
            raise BackendLoadError(f"flite: cannot load libflite ({exc}); fix: {_INSTALL}") from None
        lib = self.lib
        lib.flite_init()
        lib.flite_text_to_wave.restype = ctypes.POINTER(_Wave)
        lib.flite_text_to_wave.argtypes = (ctypes.c_char_p, ctypes.POINTER(_Voice))
        lib.delete_wave.argtypes = (ctypes.POINTER(_Wave),)
        lib.feat_set_float.argtypes = (ctypes.c_void_p, ctypes.c_char_p, ctypes.c_float)
        lib.get_param_float.argtypes = (ctypes.c_void_p, ctypes.c_char_p, ctypes.c_float)
        lib.get_param_float.restype = ctypes.c_float
        lib.feat_present.argtypes = (ctypes.c_void_p, ctypes.c_char_p)
        lib.feat_val.argtypes = (ctypes.c_void_p, ctypes.c_char_p)
        lib.feat_val.restype = ctypes.c_void_p
        lib.val_cg_db.argtypes = (ctypes.c_void_p,)
        lib.val_cg_db.restype = ctypes.POINTER(_CgDb)
        self.libc.srand.argtypes = (ctypes.c_uint,)
        self.version = _mapped_name("libflite.so.") or "libflite.so.1"
        self.voices: dict[str, tuple[Any, _Defaults]] = {}
        self.lock = threading.Lock()

    def voice(self, spec: FliteVoice) -> tuple[Any, _Defaults]:
        hit = self.voices.get(spec.name)
        if hit is not None:
            return hit
        try:
            vlib = ctypes.CDLL(f"libflite_{spec.library}.so.1", mode=ctypes.RTLD_GLOBAL)
        except OSError as exc:
            raise BackendLoadError(
                f"flite: no voice library for {spec.name} ({exc}); fix: {_INSTALL}"
            ) from None
        register = getattr(vlib, f"register_{spec.library}")
        register.restype = ctypes.POINTER(_Voice)
        register.argtypes = (ctypes.c_char_p,)
        voice = register(None)
        if not voice:
            raise BackendLoadError(f"flite: registering voice {spec.name} failed; fix: reinstall flite")
        feats = voice.contents.features
        stretch = float(self.lib.get_param_float(feats, _DURATION_STRETCH, 1.0))
        if self.lib.feat_present(feats, b"cg_db"):
            db = self.lib.val_cg_db(self.lib.feat_val(feats, b"cg_db")).contents
            f0_mean, f0_stddev, rate = float(db.f0_mean), float(db.f0_stddev), int(db.sample_rate)
            pitch_control = spec.pitch_control
        else:
            f0_mean = float(self.lib.get_param_float(feats, _F0_MEAN, 100.0))
            f0_stddev = float(self.lib.get_param_float(feats, _F0_STDDEV, 12.0))
            rate, pitch_control = 0, spec.pitch_control
        hit = self.voices[spec.name] = (voice, _Defaults(stretch, f0_mean, f0_stddev, rate, pitch_control))
        return hit

    def speak(self, voice: Any, text: str, settings: dict[bytes, float]) -> tuple[np.ndarray, int]:
        feats = voice.contents.features
        for key, value in settings.items():
            self.lib.feat_set_float(feats, key, value)
        self.libc.srand(_SEED)
        wav = self.lib.flite_text_to_wave(text.encode("utf-8"), voice)
        if not wav:
            raise SynthesisError(f"flite returned no wave for {text[:40]!r}")
        try:
            w = wav.contents
            if w.num_channels != 1:
                raise SynthesisError(f"flite returned {w.num_channels} channels, expected mono")
            pcm = (
                np.ctypeslib.as_array(w.samples, shape=(w.num_samples,)).astype(np.int16)
                if w.num_samples > 0
                else np.zeros(0, np.int16)
            )
            return pcm, int(w.sample_rate)
        finally:
            self.lib.delete_wave(wav)


def _mapped_name(prefix: str) -> str | None:
    """The file name of the loaded shared object whose name starts with `prefix`, with its full
    version (libflite.so.2.2), read from /proc/self/maps; None where that cannot be read."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            for line in maps:
                name = Path(line.split()[-1]).name if "/" in line else ""
                if name.startswith(prefix):
                    return name
    except OSError:
        return None
    return None


_library_lock = threading.Lock()
_loaded: list[_Library] = []


def _library() -> _Library:
    """The process's libflite, loaded once (two threads asking first must not both initialise it)."""
    with _library_lock:
        if not _loaded:
            _loaded.append(_Library())
        return _loaded[0]


def flite_speaker(voices: dict[str, str], params: SpeechParams) -> FliteVoice:
    """The Flite speaker of a realisation, or UnknownVoiceError when Flite cannot render it credibly."""
    accent = params.voice.lower()
    renderable = sorted({v.accent for v in FLITE_VOICES.values()})
    if accent not in renderable:
        raise UnknownVoiceError(
            "flite",
            params.espeak_name,
            "Flite renders only the accents of its recorded speakers: en-us (rms, slt, kal, kal16) and "
            "en-gb-scotland (awb); use a persona accent with one of those voices, or another backend",
        )
    name = mapped_voice(voices, params)
    if name is None:
        raise UnknownVoiceError(
            "flite",
            params.espeak_name,
            f"map it to a Flite voice in tts.options.voices, e.g. {{'{map_keys(params)[0]}': ...}}",
        )
    speaker = FLITE_VOICES[name]
    if speaker.accent != accent:
        raise UnknownVoiceError(
            "flite",
            params.espeak_name,
            f"tts.options.voices gives it {name}, whose accent is {speaker.accent}, not {accent}; "
            f"map {accent} to one of {', '.join(v.name for v in FLITE_VOICES.values() if v.accent == accent)}",
        )
    wanted = variant_gender(params.variant)
    if wanted is not None and wanted != speaker.gender:
        alternatives = [v.name for v in FLITE_VOICES.values() if v.accent == accent and v.gender == wanted]
        raise UnknownVoiceError(
            "flite",
            params.espeak_name,
            f"variant {params.variant} presents {wanted}, {name} is {speaker.gender}; "
            + (
                f"map it to {', '.join(alternatives)}"
                if alternatives
                else f"Flite has no {wanted} speaker of {accent}: use a {speaker.gender} voice profile or another backend"
            ),
        )
    return speaker


FLITE_ACCENTS: frozenset[str] = frozenset(v.accent for v in FLITE_VOICES.values())
"""The eSpeak voice names of the accents Flite has a recorded speaker of."""


def flite_problem(voices: object, params: SpeechParams) -> str | None:
    """Why Flite, with `tts.options.voices` = `voices` (None: the defaults), cannot voice `params`
    credibly, or None: the check a campaign gets when it is planned, before any audio is made.
    A `voices` option that is not a map of known speakers is left to the backend's own check."""
    table = DEFAULT_VOICES if voices is None else voices
    if not isinstance(table, dict) or not set(table.values()) <= set(FLITE_VOICES):
        return None
    try:
        flite_speaker({str(k): str(v) for k, v in table.items()}, params)
    except UnknownVoiceError as exc:
        return exc.fix
    return None


class FliteBackend:
    """`tts: {name: flite, options: {voices: {"en-us+m3": kal16}, engine: library}}`; see the module docstring."""

    name = "flite"

    def __init__(
        self,
        voices: dict[str, str] | Literal["catalogue"] | None = None,
        engine: Literal["library", "cli"] = "library",
        reference_wpm: int = REFERENCE_WPM,
    ) -> None:
        if engine not in ("library", "cli"):
            raise BackendLoadError(f"flite: engine must be 'library' or 'cli', not {engine!r}")
        if not 40 <= reference_wpm <= 600:
            raise BackendLoadError(f"flite: reference_wpm must lie in [40, 600], not {reference_wpm}")
        if isinstance(voices, str) and voices != "catalogue":
            raise BackendLoadError(f"flite: tts.options.voices must be `catalogue` or a map, not {voices!r}")
        # `catalogue`: each realisation a distinct catalogued speaker of its accent and gender
        # (voice_audit.harness.audio.catalogue), written out as the map Flite takes.
        if voices == "catalogue":
            self.voices = catalogue_map(self.name)
        else:
            self.voices = dict(DEFAULT_VOICES if voices is None else voices)
        unknown = sorted(set(self.voices.values()) - set(FLITE_VOICES))
        if unknown:
            raise BackendLoadError(
                f"flite: unknown voice {', '.join(unknown)} in tts.options.voices "
                f"(voices: {', '.join(FLITE_VOICES)})"
            )
        self.engine = engine
        self.reference_wpm = reference_wpm
        self.sample_rate = SAMPLE_RATE
        if engine == "cli":
            self._cli = shutil.which("flite")
            if self._cli is None:
                raise BackendLoadError(f"flite: the flite command is not installed; fix: {_INSTALL}")
            self.library_version = _cli_version(self._cli)
        else:
            self.library_version = _library().version
        self.version = (
            f"flite {self.library_version} ({engine}); seed {_SEED}; reference {reference_wpm} wpm; voices "
            + ", ".join(f"{k}={v}" for k, v in sorted(self.voices.items()))
        )

    def speaker_for(self, params: SpeechParams) -> FliteVoice:
        return flite_speaker(self.voices, params)

    def settings(self, params: SpeechParams, defaults: _Defaults) -> dict[str, float]:
        """The Flite features a persona's parameters map to (see the module docstring)."""
        out = {"duration_stretch": round(defaults.duration_stretch * self.reference_wpm / params.rate_wpm, 4)}
        if defaults.pitch_control:
            out["int_f0_target_mean"] = round(
                defaults.f0_mean * 2 ** ((params.pitch - 50) * SEMITONES_PER_PITCH_POINT / 12), 2
            )
            out["int_f0_target_stddev"] = round(defaults.f0_stddev * params.pitch_range / 50, 2)
        return out

    def synthesize(self, text: str, ssml: str | None, params: SpeechParams) -> Synthesis:
        parts = segments(text, ssml)
        if not parts or not any(any(ch.isalnum() for ch in words) for words, _ in parts):
            raise EmptyTextError(
                f"{self.name}: nothing speakable in {(ssml or text)!r} (voice {params.espeak_name})"
            )
        speaker = self.speaker_for(params)
        if self.engine == "library":
            lib = _library()
            with lib.lock:
                voice, defaults = lib.voice(speaker)
                applied = self.settings(params, defaults)
                keys = {
                    "duration_stretch": _DURATION_STRETCH,
                    "int_f0_target_mean": _F0_MEAN,
                    "int_f0_target_stddev": _F0_STDDEV,
                }
                native = {keys[k]: v for k, v in applied.items()}
                pieces = [(lib.speak(voice, words, native), ms) for words, ms in parts]
        else:
            defaults = _cli_defaults(speaker.name)
            applied = self.settings(params, defaults)
            pieces = [(self._run_cli(speaker, words, applied), ms) for words, ms in parts]
        rates = {sr for (_, sr), _ in pieces}
        source_rate = rates.pop() if len(rates) == 1 else SAMPLE_RATE
        chunks: list[np.ndarray] = []
        for (pcm, sr), ms in pieces:
            chunks.append(pcm if sr == SAMPLE_RATE else resample(pcm, sr, SAMPLE_RATE)[0])
            if ms:
                chunks.append(np.zeros(SAMPLE_RATE * ms // 1000, np.int16))
        out = np.concatenate(chunks).astype(np.int16) if chunks else np.zeros(0, np.int16)
        gain = params.volume / 100.0
        if gain != 1.0:
            out = np.clip(np.rint(out.astype(np.float64) * gain), -32768, 32767).astype(np.int16)
        if out.size == 0 or not np.any(out):
            raise EmptyTextError(f"{self.name}: {speaker.name} produced no audio for {text!r}")
        return Synthesis(
            pcm=out,
            sample_rate=SAMPLE_RATE,
            backend=self.name,
            backend_version=self.version,
            params={
                "speaker": speaker.name,
                "speaker_description": speaker.description,
                "speaker_accent": speaker.accent,
                "persona_voice": params.espeak_name,
                "accent_rendering": "recorded speaker of that accent",
                **applied,
                "rate_wpm": params.rate_wpm,
                "pitch": params.pitch,
                "pitch_range": params.pitch_range,
                "pitch_applied": "int_f0_target_mean" in applied,
                "volume_gain": gain,
                "word_gap_applied": False,
                "source_rate": source_rate,
                "breaks_ms": [ms for _, ms in parts if ms],
                "engine": self.engine,
                "input": "ssml" if ssml else "text",
            },
        )

    def _run_cli(self, speaker: FliteVoice, words: str, applied: dict[str, float]) -> tuple[np.ndarray, int]:
        assert self._cli is not None
        with tempfile.TemporaryDirectory(prefix="flite-") as tmp:
            src, out = Path(tmp) / "text.txt", Path(tmp) / "out.wav"
            src.write_text(words, encoding="utf-8")
            cmd = [self._cli, "-voice", speaker.name]
            for key, value in applied.items():
                cmd += ["--setf", f"{key}={value}"]
            cmd += ["-f", str(src), "-o", str(out)]
            try:
                subprocess.run(cmd, check=True, capture_output=True, timeout=120)
            except subprocess.CalledProcessError as exc:
                raise SynthesisError(
                    f"flite -voice {speaker.name} failed ({exc.returncode}): {exc.stderr.decode(errors='replace')[:200]}"
                ) from None
            with wave.open(str(out), "rb") as w:
                if w.getnchannels() != 1 or w.getsampwidth() != 2:
                    raise SynthesisError(
                        f"flite wrote {w.getnchannels()} channels of {w.getsampwidth()} bytes"
                    )
                pcm = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.int16)
                return pcm, int(w.getframerate())


@cache
def _cli_version(cli: str) -> str:
    try:
        out = subprocess.run([cli, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        raise BackendLoadError(f"flite: {cli} does not run ({exc}); fix: {_INSTALL}") from None
    m = re.search(r"flite-([0-9.]*[0-9])", out)
    return f"libflite.so.{m.group(1)}" if m else "libflite (unknown version)"


# The speakers' own settings, read from libflite once (the CLI applies its --setf values on top of them).
_KNOWN_DEFAULTS: dict[str, _Defaults] = {}


def _cli_defaults(name: str) -> _Defaults:
    hit = _KNOWN_DEFAULTS.get(name)
    if hit is None:
        lib = _library()
        with lib.lock:
            hit = _KNOWN_DEFAULTS[name] = lib.voice(FLITE_VOICES[name])[1]
    return hit


__all__ = [
    "DEFAULT_VOICES",
    "FLITE_VOICES",
    "FliteBackend",
    "FliteVoice",
    "flite_speaker",
    "segments",
    "variant_gender",
]
