"""eSpeak NG through ctypes on the `espeakng-loader` wheel: the embedded, offline default TTS.

The library holds one global, non-reentrant engine per process, so this module keeps one engine
per process behind a lock; the async facade runs it in a process pool for parallelism and so that
an engine crash (eSpeak calls exit() on some internal errors) cannot take the caller down.

Reproducibility: the engine keeps state from one synthesis to the next in static library globals
(pitch flutter, among others) that neither `espeak_Terminate` nor reseeding resets, so the same
(text, voice, parameters) came out a few samples different after another line had been spoken
(68,783 vs 68,767 samples). Every synthesis therefore runs on a pristine engine: the library is
unloaded (`dlclose`, checked in /proc/self/maps) and loaded and initialised again before each
utterance, which resets every global to its initial value. The same line, voice and parameters
then give the same samples in every process and in any order. Measured cost (best of 60 on a
loaded 2-core machine, a 2.8 s line): 5.3 ms per utterance against 1.9 ms without the reload
(unload and initialise 0.7 ms, reloading the voice and its dictionary about 3 ms); the real-time
factor stays below 0.002.

The engine's own random generator (the breath noise of voices such as f2, f3, f5 and whisper) is
seeded from the clock when it initialises, so those voices came out different in processes started
in different seconds: a worker that calibrated its speaking rate on its own measured 4.399 words/s
where the driver had 4.367 and sent 153 wpm instead of 154. It is reseeded with a constant after
every initialisation (`espeak_ng_SetRandSeed`), which makes every voice the same in every process.
"""

from __future__ import annotations

import _ctypes
import ctypes
import re
import sys
import threading
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from voice_audit.harness.audio.errors import EmptyTextError, SynthesisError, UnknownVoiceError
from voice_audit.harness.audio.types import Synthesis
from voice_audit.personas import SpeechParams

_AUDIO_OUTPUT_SYNCHRONOUS = 2
_INIT_DONT_EXIT = 0x8000
_POS_CHARACTER = 1
_SSML = 0x10
_PARAM = {"rate": 1, "volume": 2, "pitch": 3, "range": 4, "wordgap": 7}
RAND_SEED = 0
"""The engine's random generator starts here for every utterance (it would start from the clock)."""
_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.c_void_p)


@cache
def _paths() -> tuple[str, str]:
    import espeakng_loader

    return espeakng_loader.get_library_path(), espeakng_loader.get_data_path()


@cache
def espeak_voices() -> dict[str, str]:
    """Voice name (lower case) -> voice file identifier such as "gmw/en-US".

    `espeak_SetVoiceByName` only matches file names, while persona voices are often language codes
    ("en-gb" is declared inside the file "gmw/en"), so languages map to the file that declares them
    with the best priority, as the espeak-ng command line does.
    """
    lang_dir = Path(_paths()[1]) / "lang"
    files: dict[str, str] = {}
    languages: dict[str, tuple[int, str]] = {}
    for path in sorted(lang_dir.rglob("*")):
        if not path.is_file():
            continue
        ident = path.relative_to(lang_dir).as_posix()
        files[path.name.lower()] = ident
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            parts = line.split()
            if len(parts) >= 2 and parts[0] == "language":
                priority = int(parts[2]) if len(parts) > 2 and parts[2].isdigit() else 5
                best = languages.get(parts[1].lower())
                if best is None or (priority, ident) < best:
                    languages[parts[1].lower()] = (priority, ident)
    return {**{lang: ident for lang, (_, ident) in languages.items()}, **files}


@cache
def espeak_variants() -> frozenset[str]:
    """Variant names usable after '+', e.g. f2, m3, klatt4, grandma."""
    vdir = Path(_paths()[1]) / "voices" / "!v"
    return frozenset(p.name.lower() for p in vdir.iterdir() if p.is_file())


class _Engine:
    """The process's single eSpeak NG engine, loaded afresh for every utterance (see the module
    docstring)."""

    lib: Any

    def __init__(self) -> None:
        self.lib_path, self.data_path = _paths()
        self._chunks: list[np.ndarray] = []
        self._callback = _CALLBACK(self._collect)
        self.lock = threading.Lock()
        self.reloads = 0
        self._load()
        self.version = (self.lib.espeak_Info(None) or b"unknown").decode()

    def _load(self) -> None:
        self.lib = ctypes.CDLL(self.lib_path)
        self.lib.espeak_Info.restype = ctypes.c_char_p
        rate = int(
            self.lib.espeak_Initialize(_AUDIO_OUTPUT_SYNCHRONOUS, 0, self.data_path.encode(), _INIT_DONT_EXIT)
        )
        if rate <= 0:
            raise SynthesisError(
                f"eSpeak NG failed to initialise with data at {self.data_path} (code {rate})"
            )
        self.sample_rate = rate
        self.lib.espeak_ng_SetRandSeed(ctypes.c_long(RAND_SEED))
        self.lib.espeak_SetSynthCallback(self._callback)

    def reset(self) -> None:
        """Unload the library and load it again, so no state of an earlier utterance survives."""
        self.lib.espeak_Terminate()
        handle = self.lib._handle
        del self.lib
        _ctypes.dlclose(handle)
        if _still_mapped(self.lib_path):
            raise SynthesisError(
                f"eSpeak NG could not be reset: {self.lib_path} stays loaded after dlclose (another "
                "component of this process holds it), so utterances would depend on what was said before "
                "(fix: run eSpeak in the synthesiser's worker pool, pool_size >= 1)"
            )
        self._load()
        self.reloads += 1

    def _collect(self, wav: Any, n: int, _events: Any) -> int:
        if wav and n > 0:
            self._chunks.append(np.ctypeslib.as_array(wav, shape=(n,)).copy())
        return 0

    def set_voice(self, name: str) -> int:
        return int(self.lib.espeak_SetVoiceByName(name.encode()))

    def speak(self, payload: str, *, ssml: bool, params: dict[str, int]) -> np.ndarray:
        for key, value in params.items():
            self.lib.espeak_SetParameter(_PARAM[key], value, 0)
        data = payload.encode("utf-8") + b"\0"
        self._chunks = []
        code = int(
            self.lib.espeak_Synth(data, len(data), 0, _POS_CHARACTER, 0, _SSML if ssml else 0, None, None)
        )
        if code != 0:
            raise SynthesisError(f"espeak_Synth returned error code {code}")
        chunks, self._chunks = self._chunks, []
        return np.concatenate(chunks).astype(np.int16) if chunks else np.zeros(0, dtype=np.int16)


def _still_mapped(path: str) -> bool:
    """Whether the shared object at `path` is still mapped into this process (Linux only; elsewhere
    the check is skipped and dlclose is trusted)."""
    if not sys.platform.startswith("linux"):
        return False
    real = str(Path(path).resolve())
    with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
        return any(line.rstrip().endswith(real) for line in maps)


_engine: _Engine | None = None
_engine_lock = threading.Lock()


def _get_engine() -> _Engine:
    global _engine
    with _engine_lock:
        if _engine is None:
            _engine = _Engine()
        return _engine


def _speakable(text: str) -> bool:
    stripped = re.sub(r"<[^>]*>", " ", text)
    return any(ch.isalnum() for ch in stripped)


class EspeakBackend:
    """eSpeak NG TTS. Accents are voices (en-gb-scotland, es, ...), voice profiles are variants (+f2)."""

    name = "espeak"

    def __init__(self, use_ssml: bool = True) -> None:
        self.use_ssml = use_ssml
        self.sample_rate = 22050
        # The version is part of every cache key: text read as text is not the same audio as its SSML.
        self.version = f"espeakng-loader {metadata.version('espeakng-loader')}" + (
            "" if use_ssml else "; ssml off"
        )

    def check_voice(self, params: SpeechParams) -> None:
        """Raise UnknownVoiceError before synthesis: eSpeak silently ignores an unknown variant."""
        if params.voice.lower() not in espeak_voices():
            english = sorted(v for v in espeak_voices() if v.startswith("en"))
            raise UnknownVoiceError(
                self.name,
                params.voice,
                f"use an eSpeak NG voice name such as {', '.join(english)}, or a language code (es, fr, de, vi)",
            )
        if params.variant is not None and params.variant.lower() not in espeak_variants():
            raise UnknownVoiceError(
                self.name,
                params.espeak_name,
                "use a variant from espeak-ng-data/voices/!v, e.g. m1-m8, f1-f5, klatt2-klatt6, grandma",
            )

    def synthesize(self, text: str, ssml: str | None, params: SpeechParams) -> Synthesis:
        use_ssml = bool(ssml) and self.use_ssml
        payload = ssml if use_ssml and ssml else text
        if not payload or not _speakable(payload):
            raise EmptyTextError(
                f"{self.name}: nothing speakable in {payload!r} (voice {params.espeak_name})"
            )
        self.check_voice(params)
        engine = _get_engine()
        applied = {
            "rate": params.rate_wpm,
            "volume": params.volume,
            "pitch": params.pitch,
            "range": params.pitch_range,
            "wordgap": params.word_gap_ms // 10,
        }
        ident = espeak_voices()[params.voice.lower()] + (f"+{params.variant}" if params.variant else "")
        with engine.lock:
            engine.reset()
            if engine.set_voice(ident) != 0:
                raise UnknownVoiceError(
                    self.name, params.espeak_name, f"eSpeak NG refused voice file {ident}"
                )
            pcm = engine.speak(payload, ssml=use_ssml, params=applied)
        if pcm.size == 0 or not np.any(pcm):
            raise EmptyTextError(f"{self.name}: voice {params.espeak_name} produced no audio for {payload!r}")
        return Synthesis(
            pcm=pcm,
            sample_rate=engine.sample_rate,
            backend=self.name,
            backend_version=f"{self.version}; espeak-ng {engine.version}",
            params={
                "voice": params.espeak_name,
                "voice_file": ident,
                "rate_wpm": params.rate_wpm,
                "pitch": params.pitch,
                "pitch_range": params.pitch_range,
                "volume": params.volume,
                "word_gap_ms": applied["wordgap"] * 10,
                "input": "ssml" if use_ssml else "text",
            },
        )
