"""Loading the persona catalogue and turning a caller condition into concrete speech parameters."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from voice_audit.personas._model import AXES, CallerCondition, Catalogue, SpeechParams
from voice_audit.scenarios.errors import ConfigError
from voice_audit.scenarios.yamlsrc import load_yaml

DEFAULT_CATALOGUE = Path(__file__).with_name("catalogue.yaml")


def load_catalogue(path: str | Path | None = None) -> Catalogue:
    """Load and validate a persona catalogue (the bundled one by default)."""
    p = Path(path) if path is not None else DEFAULT_CATALOGUE
    if path is None:
        return _bundled()
    return load_yaml(p).validate(Catalogue)


@lru_cache(maxsize=1)
def _bundled() -> Catalogue:
    return load_yaml(DEFAULT_CATALOGUE).validate(Catalogue)


def check_level(catalogue: Catalogue, axis: str, level: str) -> str | None:
    """Return an error message when `level` is not a level of `axis`, else None."""
    if axis not in AXES:
        return f"unknown persona axis '{axis}' (axes: {', '.join(AXES)})"
    levels = catalogue.levels(axis)
    if level not in levels:
        return f"unknown level '{level}' for axis '{axis}' (levels: {', '.join(levels)})"
    return None


def check_condition(catalogue: Catalogue, condition: CallerCondition) -> None:
    for axis in AXES:
        problem = check_level(catalogue, axis, getattr(condition, axis))
        if problem:
            raise ConfigError(problem)


def voice_count(catalogue: Catalogue, condition: CallerCondition) -> int:
    return len(catalogue.voice_profile[condition.voice_profile].realisations)


def speech_params(catalogue: Catalogue, condition: CallerCondition, voice_index: int) -> SpeechParams:
    """The exact voice of realisation `voice_index` of a condition cell.

    Accent picks the engine voice, the profile realisation picks variant, pitch and range, and
    affect shifts rate, pitch, range and volume. Two conditions that share a profile and voice
    index therefore share every parameter except those of their differing axes.
    """
    check_condition(catalogue, condition)
    accent = catalogue.accent[condition.accent]
    profile = catalogue.voice_profile[condition.voice_profile]
    if not 0 <= voice_index < len(profile.realisations):
        raise ConfigError(
            f"voice index {voice_index} out of range for profile '{condition.voice_profile}' "
            f"({len(profile.realisations)} realisations)"
        )
    real = profile.realisations[voice_index]
    affect = catalogue.affect[condition.affect]
    return SpeechParams(
        voice=accent.voice,
        variant=real.variant,
        rate_wpm=affect.rate_wpm,
        pitch=min(100, max(0, real.pitch + affect.pitch_offset)),
        pitch_range=min(100, max(0, real.pitch_range + affect.range_offset)),
        volume=affect.volume,
    )
