"""Can the campaign's caller voice render every cell it is given? Checked when a campaign is planned.

A campaign that names no `tts` is voiced by Flite (`DEFAULT_TTS`): its recorded speakers are
intelligible over a telephone line and pass the stimulus pre-screen, but they speak General
American and Scottish English only. A cell Flite cannot voice credibly (another accent, a female
Scottish speaker) is refused here, one line naming the pair, the condition and a backend that
renders it, before any audio is made.
"""

from __future__ import annotations

from voice_audit.harness.audio import FLITE_ACCENTS, flite_problem
from voice_audit.harness.model.campaign import DEFAULT_TTS, Campaign
from voice_audit.personas import CallerCondition, Catalogue, speech_params, voice_count
from voice_audit.scenarios.yamlsrc import YamlDocument

__all__ = ["DEFAULT_TTS", "check_voicing", "flite_levels"]

_OTHER_BACKENDS = (
    "name a backend that renders it in `tts:` (e.g. {name: recorded} for your own recordings, "
    "{name: elevenlabs} for a cloud voice; docs/voices.md says what each renders)"
)


def flite_levels(catalogue: Catalogue) -> list[str]:
    """The accent levels of `catalogue` that Flite has a recorded speaker of."""
    return [name for name, level in catalogue.accent.items() if level.voice.lower() in FLITE_ACCENTS]


def _where(doc: YamlDocument, index: int, side: str, axis: str) -> tuple[str | int, ...]:
    """The YAML key that sets `axis` for one side of pair `index` (its own level, else the base)."""
    pair = doc.data.get("pairs", [])[index]
    own = pair.get(side) if isinstance(pair, dict) else None
    return (
        ("pairs", index, side, axis)
        if isinstance(own, dict) and axis in own
        else ("pairs", index, "base", axis)
    )


def check_voicing(doc: YamlDocument, campaign: Campaign, catalogue: Catalogue) -> None:
    """Refuse (one positioned ConfigError) the first cell a Flite voice cannot render."""
    default = "tts" not in doc.data
    for index, pair in enumerate(campaign.pairs):
        for side in ("a", "b"):
            levels = {**pair.base, **(pair.a if side == "a" else pair.b)}
            condition = CallerCondition(**levels)  # the planner has checked every level
            spec = campaign.tts_for(condition)
            if spec.name != DEFAULT_TTS:
                continue
            # Every realisation of the cell, used or not: Flite's limits are accent and gender,
            # which the realisations of one profile share.
            for voice in range(voice_count(catalogue, condition)):
                why = flite_problem(spec.options.get("voices"), speech_params(catalogue, condition, voice))
                if why is None:
                    continue
                who = "Flite, the caller voice of a campaign that names no tts" if default else "tts flite"
                label = f"pair {index}: condition {side} ({condition.accent}, {condition.voice_profile})"
                if condition.accent not in flite_levels(catalogue):
                    raise doc.error(
                        _where(doc, index, side, "accent"),
                        f"{label} cannot be voiced by {who}: Flite has recorded speakers of "
                        f"{' and '.join(flite_levels(catalogue))} only",
                        fix=_OTHER_BACKENDS if default else f"{why}; or {_OTHER_BACKENDS}",
                    )
                raise doc.error(
                    _where(doc, index, side, "voice_profile"),
                    f"{label} cannot be voiced by {who}",
                    fix=f"{why}; or {_OTHER_BACKENDS}" if default else why,
                )
