"""How many different people voice each condition of a campaign: `voices: N` asks for N.

A finding about an accent must rest on several speakers of it, not on one person at several
pitches. Each condition's realisations 0..N-1 are resolved to the speaker its backend gives them
(`voice_audit.harness.audio.speakers`: the voice catalogue's person for catalogued voices, so
Flite's `kal` and `kal16` are one man), `voice-audit plan` prints the distinct speakers per
condition, and a `voices:` the campaign writes that the backend cannot fill with distinct speakers
is refused in one line naming the campaign file and the fix (unwritten, the default takes each
voice profile's realisations as they come, and `plan` shows how many people that is). A backend that does not say who speaks (your own recordings,
a custom backend) is printed as unknown and not refused here.
"""

from __future__ import annotations

from dataclasses import dataclass

from voice_audit.harness.audio.catalogue import backend_catalogue
from voice_audit.harness.audio.speakers import CATALOGUE_DEFAULT, NO_VOICE, realisation_speaker
from voice_audit.harness.model.campaign import Campaign
from voice_audit.personas import CallerCondition, Catalogue, speech_params, voice_count
from voice_audit.scenarios.yamlsrc import YamlDocument

__all__ = ["CellSpeakers", "cell_speakers", "check_speakers"]


@dataclass(frozen=True)
class CellSpeakers:
    """The speakers of one side of one pair: one entry per voice index (None: the backend does not say)."""

    pair: int
    side: str
    condition: CallerCondition
    backend: str
    speakers: tuple[str | None, ...]

    @property
    def known(self) -> bool:
        return all(s is not None for s in self.speakers)

    @property
    def distinct(self) -> list[str]:
        out: list[str] = []
        for s in self.speakers:
            if s and s not in out:
                out.append(s)
        return out

    def line(self) -> str:
        """One line for `plan`: how many people, and who."""
        label = f"pair {self.pair} {self.side} ({self.condition.accent}, {self.condition.voice_profile})"
        if not self.known:
            return f"{label}: speakers not known to tts {self.backend}"
        missing = sum(1 for s in self.speakers if s == NO_VOICE)
        text = f"{label}: {len(self.distinct)} distinct speaker(s) via {self.backend}: {', '.join(self.distinct) or '-'}"
        return text + (f"; {missing} realisation(s) without a voice" if missing else "")


def cell_speakers(campaign: Campaign, catalogue: Catalogue) -> list[CellSpeakers]:
    """Every pair side's speakers for voice indices 0..voices-1, under the backend that voices it."""
    out: list[CellSpeakers] = []
    for index, pair in enumerate(campaign.pairs):
        for side in ("a", "b"):
            condition = CallerCondition(**{**pair.base, **(pair.a if side == "a" else pair.b)})
            spec = campaign.tts_for(condition)
            n = min(pair.voices or campaign.voices, voice_count(catalogue, condition))
            speakers = tuple(
                realisation_speaker(spec.name, spec.options, speech_params(catalogue, condition, i))
                for i in range(n)
            )
            out.append(CellSpeakers(index, side, condition, spec.name, speakers))
    return out


def check_speakers(doc: YamlDocument, campaign: Campaign, catalogue: Catalogue) -> None:
    """Refuse (one positioned ConfigError) the first condition whose backend has no voice for one
    of its realisations, or cannot give the `voices:` the campaign file writes as distinct
    speakers. A campaign that writes no `voices:` takes each profile's realisations as they come:
    `plan` prints how many people that is."""
    for cell in cell_speakers(campaign, catalogue):
        if not cell.known:
            continue
        pair_voices = campaign.pairs[cell.pair].voices
        written = pair_voices is not None or "voices" in doc.data
        wanted = pair_voices or campaign.voices
        distinct = cell.distinct
        voiceless = NO_VOICE in cell.speakers
        if not voiceless and (not written or len(distinct) >= wanted):
            continue
        spec = campaign.tts_for(cell.condition)
        accent = catalogue.accent[cell.condition.accent].voice.lower()
        fixes = []
        if (
            backend_catalogue(spec.name) is not None
            and spec.options.get("voices") != "catalogue"
            and spec.name not in CATALOGUE_DEFAULT
        ):
            fixes.append("set tts.options.voices: catalogue to draw distinct catalogued speakers")
        if distinct:
            fixes.append(f"set voices: {len(distinct)}")
        fixes.append(
            ("or " if fixes else "")
            + f"voice the cell with a backend that has more speakers of {accent} (docs/voices.md lists them)"
        )
        where = f"pair {cell.pair} condition {cell.side} ({cell.condition.accent}, {cell.condition.voice_profile})"
        gives = f"{len(distinct)}: {', '.join(distinct) or 'none'}"
        if written:
            message = (
                f"voices: {wanted} asks for {wanted} different speakers per condition, but tts "
                f"{spec.name} gives {where} {gives}" + ("; a realisation has no voice" if voiceless else "")
            )
        else:
            missing = cell.speakers.index(NO_VOICE)
            message = (
                f"tts {spec.name} has no voice for realisation {missing + 1} of {where} (voices: "
                f"{campaign.voices}, the default); its speakers there: {gives}"
            )
        key = (
            ("pairs", cell.pair, "voices")
            if pair_voices
            else ("voices",)
            if written
            else ("pairs", cell.pair)
        )
        raise doc.error(key, message, fix="; ".join(fixes))
