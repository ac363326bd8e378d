"""A pair may ask for its own number of voices: a contrast with three speakers per side can sit
beside one whose backend has a single speaker per condition; each is planned and checked on its own."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

from voice_audit.harness.planning import load_campaign
from voice_audit.scenarios import ConfigError

CAMPAIGN = """\
name: pv
seed: 3
scenarios: [refund_duplicate_charge]
agents: [{{name: h, adapter: hybrid}}]
pairs:
  - name: accent
    contrast: [accent]
    base: {{voice_profile: male_adult, affect: calm, disfluency: none, wording: plain}}
    a: {{accent: us_general}}
    b: {{accent: gb_scottish}}
  - name: disfluency
    contrast: [disfluency]
    base: {{accent: us_general, voice_profile: {profile}, affect: calm, wording: plain}}
    a: {{disfluency: none}}
    b: {{disfluency: heavy}}
    voices: {voices}
voices: 1
replicates: 2
tts:
  name: flite
  options:
    voices: {{"en-us": rms, "en-gb-scotland": awb, "en-us+klatt2": slt, "en-us+klatt4": kal16, "en-us+m7": rms}}
"""


def _load(tmp_path: Path, voices: int, profile: str = "young_neutral"):  # type: ignore[no-untyped-def]
    path = tmp_path / f"c{voices}{profile}.yaml"
    path.write_text(CAMPAIGN.format(voices=voices, profile=profile), encoding="utf-8")
    return load_campaign(path)


def test_each_pair_gets_its_own_voices(tmp_path: Path) -> None:
    loaded = _load(tmp_path, 3)
    seen: dict[str, set[int]] = defaultdict(set)
    for ep in loaded.plan.episodes:
        seen[ep.pair_name].add(ep.pair.voice_index)
    assert seen == {"accent": {0}, "disfluency": {0, 1, 2}}
    assert len(loaded.plan.episodes) == 2 * 2 * (1 + 3)


def test_a_pair_asking_more_voices_than_its_profile_has_is_refused_at_the_pair(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        _load(tmp_path, 4)
    assert "voices: 4 asked but pair 1 has only 3 realisations" in str(err.value)
    assert ".yaml:16:" in str(err.value)  # the pair's own voices: line


def test_a_pair_asking_more_speakers_than_the_backend_has_is_refused(tmp_path: Path) -> None:
    # male_adult's three realisations are all rms on Flite: one person, not three
    with pytest.raises(ConfigError, match="voices: 3 asks for 3 different speakers per condition"):
        _load(tmp_path, 3, profile="male_adult")
