"""The line list of a campaign: every line each voice of each cell can say, for voice actors.

A voice is what a recording realises: an accent, a voice-profile realisation and an affect (the
speech parameters of a cell and voice index); disfluency and wording change only the words, so
they make different lines for the same voice. A line is one text said by one voice, whatever
scenario, anchor or cell says it (all are listed in `uses`), so the same words in the same voice
are recorded once, and both calls of a pair only ever use their own voices' recordings.

The key is derived from the voice's speech parameters without the speaking rate and the exact
text: the caller slows down when asked to repeat (`clearer_speech`), which changes the rate and
not the words, so a repeat plays the line's one recording (its slower rates are listed in the
actor's guidance, not recorded separately). Two voices of a campaign that differ only in rate
could not be told apart by such a key, so listing refuses them.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from voice_audit.harness.audio.recorded import RATES, missing_recordings
from voice_audit.harness.caller.vocabulary import clearer_speech, say_forms, text_key
from voice_audit.harness.model.campaign import BackendSpec, Interruptions, Patience
from voice_audit.harness.planning import LoadedCampaign
from voice_audit.harness.runlog import atomic_write_bytes
from voice_audit.personas import (
    CallerCondition,
    Catalogue,
    MatchedPair,
    SpeechParams,
    line_key,
    render_utterance,
    speech_params,
    voice_identity,
)
from voice_audit.scenarios import ConfigError, Frozen, Scenario
from voice_audit.scenarios.base import canonical_json

CSV_COLUMNS: tuple[str, ...] = (
    "key",
    "file",
    "voice",
    "accent",
    "voice_profile",
    "realisation",
    "affect",
    "text",
    "rate_wpm",
    "slower_wpm",
    "guidance",
    "uses",
    "speech",
)


class VoiceLine(Frozen):
    key: str
    voice: str
    accent: str
    voice_profile: str
    realisation: int
    affect: str
    text: str
    ssml: str | None = None
    """The markup the caller's synthesis receives with the text (breaks, prosody), as the call renders it."""
    speech: SpeechParams
    slower_wpm: tuple[int, ...]
    guidance: str
    uses: tuple[str, ...]

    @property
    def file(self) -> str:
        return f"{self.key}.wav"


@dataclass
class _Building:
    voice: str
    condition: CallerCondition
    realisation: int
    speech: SpeechParams
    text: str
    ssml: str | None = None
    slower: set[int] = field(default_factory=set)
    uses: dict[str, None] = field(default_factory=dict)


def _voice_label(condition: CallerCondition, realisation: int) -> str:
    return f"{condition.accent}/{condition.voice_profile}/{realisation}/{condition.affect}"


def _guidance(catalogue: Catalogue, b: _Building) -> str:
    affect = catalogue.affect[b.condition.affect]
    dis = catalogue.disfluency[b.condition.disfluency]
    parts = [f"{affect.label.lower()} affect", f"about {b.speech.rate_wpm} words per minute"]
    if b.slower:
        parts.append(
            f"also played for repeats, as recorded (a synthetic voice would slow to {min(b.slower)} wpm)"
        )
    if dis.filler_rate > 0 or dis.restart_rate > 0:
        parts.append(f"say the fillers and restarts as written, pausing about {dis.break_ms} ms after each")
    return "; ".join(parts)


def campaign_lines(
    pairs: Iterable[MatchedPair],
    scenarios: dict[str, Scenario],
    catalogue: Catalogue,
    patience: Patience,
    interruptions: Interruptions | None = None,
    only: Callable[[CallerCondition], bool] | None = None,
) -> tuple[VoiceLine, ...]:
    """Every line each side of each planned pair can say, one per (voice, text), sorted by voice;
    `only`: the conditions to list (those one backend voices, say)."""
    lines: dict[str, _Building] = {}
    identities: dict[str, str] = {}
    seen: set[tuple[str, int, int, CallerCondition]] = set()
    for pair in pairs:
        scenario = scenarios[pair.scenario_id]
        forms = say_forms(scenario, patience, interruptions)
        slots = dict(scenario.caller.slots)
        for condition in (pair.condition_a, pair.condition_b):
            done = (pair.scenario_id, pair.text_seed, pair.voice_index, condition)
            if done in seen or (only is not None and not only(condition)):
                continue
            seen.add(done)
            speech = speech_params(catalogue, condition, pair.voice_index)
            voice = _voice_label(condition, pair.voice_index)
            ident = canonical_json(voice_identity(speech))
            other = identities.setdefault(ident, voice)
            if other != voice:
                raise ConfigError(
                    f"voices {other} and {voice} differ only in speaking rate: a recording cannot tell them apart",
                    fix="give their affect levels different pitch, range or volume as well",
                )
            cell = condition.label()
            for form in forms:
                for count in range(form.counts):
                    framing = form.framing and count == 0
                    utt = render_utterance(
                        form.template,
                        slots,
                        condition,
                        catalogue,
                        seed=pair.text_seed,
                        key=text_key(form.template, framing),
                        framing=framing,
                    )
                    key = line_key(speech, utt.text)
                    b = lines.get(key)
                    if b is None:
                        b = lines[key] = _Building(
                            voice, condition, pair.voice_index, speech, utt.text, utt.ssml
                        )
                    slowed = clearer_speech(speech, form.kind, count).rate_wpm
                    if slowed != speech.rate_wpm:
                        b.slower.add(slowed)
                    b.uses[f"{pair.scenario_id}:{form.kind}:{form.item}:{cell}"] = None
    out = [
        VoiceLine(
            key=key,
            voice=b.voice,
            accent=b.condition.accent,
            voice_profile=b.condition.voice_profile,
            realisation=b.realisation,
            affect=b.condition.affect,
            text=b.text,
            ssml=b.ssml,
            speech=b.speech,
            slower_wpm=tuple(sorted(b.slower, reverse=True)),
            guidance=_guidance(catalogue, b),
            uses=tuple(b.uses),
        )
        for key, b in lines.items()
    ]
    return tuple(sorted(out, key=lambda v: (v.voice, v.text)))


def lines_csv(lines: Iterable[VoiceLine]) -> bytes:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    for v in lines:
        w.writerow(
            [
                v.key,
                v.file,
                v.voice,
                v.accent,
                v.voice_profile,
                v.realisation,
                v.affect,
                v.text,
                v.speech.rate_wpm,
                " ".join(str(r) for r in v.slower_wpm),
                v.guidance,
                " | ".join(v.uses),
                json.dumps(voice_identity(v.speech), sort_keys=True),
            ]
        )
    return buf.getvalue().encode("utf-8")


def write_lines_csv(lines: Iterable[VoiceLine], path: Path) -> None:
    """Write the list atomically: a failed write leaves no half-written list behind."""
    atomic_write_bytes(path, lines_csv(lines))


MISSING_LIST = "missing-lines.csv"


def planned_lines(loaded: LoadedCampaign, tts: BackendSpec | None = None) -> tuple[VoiceLine, ...]:
    """The line list of a loaded campaign: every side of every planned pair (voiced by `tts` only,
    when given)."""
    pairs = {e.pair.pair_id: e.pair for e in loaded.plan.episodes}.values()
    c = loaded.campaign
    only = None if tts is None else (lambda cond: c.tts_for(cond) == tts)
    return campaign_lines(pairs, loaded.scenarios, loaded.catalogue, c.patience, c.interruptions, only)


def check_recordings(loaded: LoadedCampaign) -> None:
    """Refuse a campaign on recorded voices before any call when a line has no usable recording;
    the missing lines go to `missing-lines.csv` in the recordings folder, in the list's format.
    Each recorded backend (the campaign's or a cell's) is checked on the lines of its cells."""
    for tts in loaded.campaign.tts_backends():
        if tts.name == "recorded":
            _check_recorded(loaded, tts)


def _check_recorded(loaded: LoadedCampaign, tts: BackendSpec) -> None:
    if "dir" not in tts.options:
        raise ConfigError(
            "tts recorded needs options.dir, the folder of recordings",
            fix="tts: {name: recorded, options: {dir: voices/}}",
        )
    directory = Path(str(tts.options["dir"]))
    rates = tuple(int(r) for r in tts.options.get("rates", RATES))
    lines = planned_lines(loaded, tts)
    missing, bad = missing_recordings((v.key for v in lines), directory, rates)
    if bad:
        raise ConfigError(
            f"{len(bad)} recording(s) in {directory} cannot be played: {bad[0]}",
            fix="re-export them as mono 16-bit PCM WAV",
        )
    if missing:
        gone = set(missing)
        if directory.is_dir():
            out = directory / MISSING_LIST
            write_lines_csv([v for v in lines if v.key in gone], out)
            where = f"listed in {out}"
        else:
            where = f"and the folder {directory} does not exist"
        raise ConfigError(
            f"{len(missing)} of {len(lines)} lines of campaign {loaded.campaign.name} have no recording in "
            f"{directory}, {where}",
            fix=f"record each as <key>.wav (voice-audit personas lines {loaded.path} -o lines.csv)",
        )


__all__ = [
    "CSV_COLUMNS",
    "MISSING_LIST",
    "VoiceLine",
    "campaign_lines",
    "check_recordings",
    "lines_csv",
    "planned_lines",
    "write_lines_csv",
]
