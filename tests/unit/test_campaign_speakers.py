"""`voices: N` draws N different people per condition: a catalogued backend gives three distinct
speakers per condition, and a `voices:` the backend cannot fill is refused in one line naming the
campaign file and the fix."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from voice_audit.harness.model.campaign import Campaign
from voice_audit.harness.speakers import cell_speakers, check_speakers
from voice_audit.personas import load_catalogue
from voice_audit.scenarios import ConfigError
from voice_audit.scenarios.yamlsrc import YamlDocument, load_yaml


def campaign_file(
    tmp_path: Path,
    tts: dict[str, Any],
    base: dict[str, str],
    a: dict[str, str],
    b: dict[str, str],
    voices: int = 3,
) -> YamlDocument:
    contrast = sorted(set(a))
    data = {
        "name": "speakers",
        "scenarios": ["refund_duplicate_charge"],
        "agents": [{"name": "hybrid", "adapter": "hybrid"}],
        "pairs": [{"contrast": contrast, "base": base, "a": a, "b": b}],
        "voices": voices,
        "tts": tts,
    }
    path = tmp_path / "speakers.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return load_yaml(path)


CALM = {"affect": "calm", "disfluency": "none", "wording": "plain"}


def speakers_of(doc: YamlDocument) -> list[list[str | None]]:
    campaign = Campaign.model_validate(doc.data)
    return [list(c.speakers) for c in cell_speakers(campaign, load_catalogue())]


def check(doc: YamlDocument) -> None:
    check_speakers(doc, Campaign.model_validate(doc.data), load_catalogue())


def test_a_speaker_catalogue_gives_three_distinct_speakers_per_condition(tmp_path: Path) -> None:
    doc = campaign_file(
        tmp_path,
        {"name": "azure", "options": {"region": "westeurope"}},
        {"voice_profile": "female_adult", **CALM},
        {"accent": "us_general"},
        {"accent": "gb_southern"},
    )
    a, b = speakers_of(doc)
    assert len(set(a)) == 3 and len(set(b)) == 3
    assert all(s and s.startswith("azure-en-US-") for s in a) and all(
        s and s.startswith("azure-en-GB-") for s in b
    )
    check(doc)  # not refused


def test_a_within_speaker_contrast_on_offline_speakers(tmp_path: Path) -> None:
    doc = campaign_file(
        tmp_path,
        {"name": "flite", "options": {"voices": "catalogue"}},
        {"accent": "us_general", "voice_profile": "young_neutral", "affect": "calm", "wording": "plain"},
        {"disfluency": "none"},
        {"disfluency": "heavy"},
    )
    a, b = speakers_of(doc)
    assert a == b, "each speaker is in both conditions"
    assert sorted(s or "" for s in a) == ["cmu-kal", "cmu-rms", "cmu-slt"]
    check(doc)


def test_one_man_at_three_pitches_is_refused(tmp_path: Path) -> None:
    doc = campaign_file(
        tmp_path,
        {"name": "flite"},
        {"voice_profile": "male_adult", **CALM},
        {"accent": "us_general"},
        {"accent": "gb_scottish"},
    )
    with pytest.raises(ConfigError) as err:
        check(doc)
    line = err.value.one_line()
    assert "\n" not in line and "speakers.yaml" in line
    assert (
        "voices: 3 asks for 3 different speakers per condition, but tts flite gives pair 0 condition a"
        in line
    )
    assert "cmu-rms" in line and "tts.options.voices: catalogue" in line and "set voices: 1" in line


def test_a_catalogue_that_cannot_fill_voices_is_refused(tmp_path: Path) -> None:
    doc = campaign_file(
        tmp_path,
        {"name": "flite", "options": {"voices": "catalogue"}},
        {"voice_profile": "male_adult", **CALM},
        {"accent": "us_general"},
        {"accent": "gb_scottish"},
    )
    with pytest.raises(
        ConfigError,
        match=r"gives pair 0 condition a \(us_general, male_adult\) 2: cmu-rms, cmu-kal; a realisation has no voice",
    ) as err:
        check(doc)
    assert "set voices: 2" in err.value.one_line()
    fits = campaign_file(
        tmp_path,
        {"name": "flite", "options": {"voices": "catalogue"}},
        {"voice_profile": "male_adult", **CALM},
        {"accent": "us_general"},
        {"accent": "gb_scottish"},
        voices=1,
    )
    check(fits)
    assert speakers_of(fits) == [["cmu-rms"], ["cmu-awb"]]


def test_an_unwritten_voices_is_shown_not_refused(tmp_path: Path) -> None:
    doc = campaign_file(
        tmp_path,
        {"name": "flite"},
        {"voice_profile": "male_adult", **CALM},
        {"accent": "us_general"},
        {"accent": "gb_scottish"},
    )
    del doc.data["voices"]
    check(doc)
    campaign = Campaign.model_validate(doc.data)
    lines = [c.line() for c in cell_speakers(campaign, load_catalogue())]
    assert lines == [
        "pair 0 a (us_general, male_adult): 1 distinct speaker(s) via flite: cmu-rms",
        "pair 0 b (gb_scottish, male_adult): 1 distinct speaker(s) via flite: cmu-awb",
    ]


def test_an_unwritten_voices_the_backend_has_no_voice_for_is_refused(tmp_path: Path) -> None:
    doc = campaign_file(
        tmp_path,
        {"name": "azure", "options": {"region": "westeurope"}},
        {"voice_profile": "male_adult", **CALM},
        {"accent": "us_general"},
        {"accent": "gb_scottish"},
    )
    del doc.data["voices"]
    with pytest.raises(
        ConfigError,
        match=r"tts azure has no voice for realisation 1 of pair 0 condition b \(gb_scottish, male_adult\)",
    ) as err:
        check(doc)
    lines = doc.path.read_text().splitlines()
    pair_line = next(i for i, line in enumerate(lines, 1) if line.lstrip().startswith("- contrast"))
    assert f"speakers.yaml:{pair_line}:" in err.value.one_line(), "points at the pair"
    assert (
        "(fix: voice the cell with a backend that has more speakers of en-gb-scotland" in err.value.one_line()
    )


def test_synthetic_and_unknown_voices_are_not_refused_here(tmp_path: Path) -> None:
    espeak = campaign_file(
        tmp_path,
        {"name": "espeak"},
        {"voice_profile": "male_adult", **CALM},
        {"accent": "us_general"},
        {"accent": "l2_spanish"},
    )
    check(espeak)
    assert all(len(set(s)) == 3 for s in speakers_of(espeak))
    recorded = campaign_file(
        tmp_path,
        {"name": "recorded"},
        {"voice_profile": "male_adult", **CALM},
        {"accent": "us_general"},
        {"accent": "l2_spanish"},
    )
    check(recorded)
    assert speakers_of(recorded) == [[None] * 3, [None] * 3]
