"""A redacted report names no condition level, wherever the user wrote one: the levels' ids, labels,
eSpeak voices and their distinctive words are planted in every user-written field of a campaign (its
name, description, batch, scenario id, agent names, agent options and what the agent says, the pair
name, the stimulus override and its reason), and no output file of the redacted report holds any of
them, while words every side shares ("English", "General", the shared "male" and "calm") survive."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import yaml

from voice_audit.analysis.pipeline import analyze
from voice_audit.analysis.report import Built, build_report, write_report
from voice_audit.analysis.report.redact import LEVEL_MASK, Scrubber, distinctive_words, level_terms
from voice_audit.harness.model.campaign import Campaign
from voice_audit.harness.planning import load_campaign
from voice_audit.harness.runtime import CampaignRunner
from voice_audit.personas import load_catalogue
from voice_audit.scenarios import ScenarioLibrary

LIBRARY = Path(__file__).parents[3] / "scenarios" / "library"
SCENARIO = "refund_gb_scottish_scottish"
PAIR = "accent: General American vs Scottish English (us_general, gb_scottish)"
SHARED_LINE = "Plain English help for every caller in general, from a calm male voice."
PLANTED = (
    "us_general",
    "gb_scottish",
    "General American",
    "Scottish English",
    "Scottish",
    "American",
    "en-gb-scotland",
    "Scotland",
)
"""Ids, labels, the eSpeak voice of the accent, and the distinctive words of each (case-insensitive)."""


def _campaign(tmp: Path) -> Path:
    lib = tmp / "lib"
    lib.mkdir()
    text = (LIBRARY / "refund_duplicate_charge.yaml").read_text(encoding="utf-8")
    (lib / f"{SCENARIO}.yaml").write_text(text.replace("id: refund_duplicate_charge", f"id: {SCENARIO}"))
    ScenarioLibrary(lib).lock()
    lines = [
        "Thank you for calling the Scottish English desk. How can I help you today?",
        SHARED_LINE,
        "Before I look into it, can you confirm your full name and the zip code on the account?",
        "Thank you. Would you like me to refund the duplicate charge?",
        "I have issued a refund of twenty four dollars and ninety nine cents. Is there anything else?",
    ]
    doc = {
        "name": "Scottish.gb_scottish-vs-us_general",
        "description": "General American vs Scottish English callers",
        "batch": "gb_scottish.SCOTTISH",
        "seed": 5,
        "scenario_dir": str(lib),
        "scenarios": [SCENARIO],
        "agents": [
            {
                "name": "gb_scottish",
                "adapter": "scripted",
                "options": {
                    "audio_ms": 100,
                    "lines": lines,
                    "note": "tuned for American and Scottish callers, voice en-gb-scotland",
                },
            },
            {"name": "scottish-desk", "adapter": "scripted", "options": {"audio_ms": 100, "lines": lines}},
        ],
        "pairs": [
            {
                "name": PAIR,
                "contrast": ["accent"],
                "base": {
                    "voice_profile": "male_adult",
                    "affect": "calm",
                    "disfluency": "none",
                    "wording": "plain",
                },
                "a": {"accent": "us_general"},
                "b": {"accent": "gb_scottish"},
            }
        ],
        "stimulus": {"override": [PAIR], "reason": "the Scottish voice of gb_scottish is accepted"},
        "voices": 1,
        "replicates": 2,
        "concurrency": 4,
        "tts": {"name": "espeak"},
    }
    cfile = tmp / "c.yaml"
    cfile.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return cfile


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory, audio_cache: Path) -> tuple[Path, Built, Path]:
    tmp = tmp_path_factory.mktemp("levels")
    run = tmp / "run"
    runner = CampaignRunner(load_campaign(_campaign(tmp)), run, cache_dir=audio_cache, progress=False)
    asyncio.run(runner.run())
    analyze(run, audio=False)
    built = build_report(run, redact=True)
    out = tmp / "red"
    write_report(built, out)
    return run, built, out


def test_no_output_of_a_redacted_report_names_a_level(planted: tuple[Path, Built, Path]) -> None:
    run, built, out = planted
    full = build_report(run).report.model_dump_json()
    assert not [p for p in PLANTED if p.casefold() not in full.casefold()]  # the full report has them all
    files = [f for f in out.rglob("*") if f.is_file()]
    assert {f.suffix for f in files} >= {".html", ".md", ".json"}
    for f in files:
        text = f.read_text(encoding="utf-8").casefold()
        assert not [p for p in PLANTED if p.casefold() in text], f.name
    r = built.report
    assert r.campaign.startswith(LEVEL_MASK) and r.description == LEVEL_MASK
    assert sorted(a.name for a in r.agents) == [LEVEL_MASK, f"{LEVEL_MASK}-desk"]
    assert r.cells and r.findings.ranked  # the results survive, by side a and b


def test_words_every_side_shares_survive(planted: tuple[Path, Built, Path]) -> None:
    _, built, out = planted
    assert SHARED_LINE in (out / "report.json").read_text(encoding="utf-8")
    assert any(SHARED_LINE in str(a.options) for a in built.report.agents)


def test_distinctive_words_of_the_catalogue_labels() -> None:
    cat = load_catalogue()

    def names(axis: str, *levels: str) -> dict[str, list[str]]:
        return {lv: [lv, getattr(cat, axis)[lv].label] for lv in levels}

    words = distinctive_words(names("accent", "us_general", "gb_scottish"))
    assert words == {"us_general": {"american"}, "gb_scottish": {"scottish"}}
    # "English" is shared by both sides here, and in a stop list besides
    assert distinctive_words(names("accent", "gb_scottish", "gb_lancastrian")) == {
        "gb_scottish": {"scottish"},
        "gb_lancastrian": {"lancastrian"},
    }
    assert distinctive_words(names("accent", "us_general", "l2_spanish"))["l2_spanish"] == {
        "spanish",
        "spain",
    }
    assert distinctive_words(names("voice_profile", "female_adult", "male_adult")) == {
        "female_adult": {"female"},
        "male_adult": {"male"},
    }
    assert distinctive_words(names("disfluency", "mild", "heavy")) == {
        "mild": {"mild", "mildly"},
        "heavy": {"heavy", "heavily"},
    }


def test_terms_are_masked_as_words_in_any_case_and_inside_identifiers() -> None:
    campaign = Campaign.model_validate(
        {
            "name": "t",
            "scenarios": ["refund_duplicate_charge"],
            "agents": [{"name": "s", "adapter": "scripted"}],
            "pairs": [
                {
                    "contrast": ["accent"],
                    "base": {
                        "voice_profile": "male_adult",
                        "affect": "calm",
                        "disfluency": "none",
                        "wording": "plain",
                    },
                    "a": {"accent": "us_general"},
                    "b": {"accent": "gb_scottish"},
                }
            ],
        }
    )
    terms = level_terms(campaign, load_catalogue())
    scrub = Scrubber(set(), drop_urls=True, mask_levels=True, level_terms=terms)
    said = "SCOTTISH_bot, scottish-2, Scottishness, a calm male voice in General English, it is en-us"
    assert scrub.text(said) == (
        f"{LEVEL_MASK}_bot, {LEVEL_MASK}-2, Scottishness, a calm male voice in General English, it is {LEVEL_MASK}"
    )
    assert scrub.text("accent=gb_scottish; voice_profile=male_adult") == (
        f"accent={LEVEL_MASK}; voice_profile={LEVEL_MASK}"
    )
    assert scrub.tree({"gb_scottish": 1, "scottish": 2}) == {LEVEL_MASK: 1, f"{LEVEL_MASK} (2)": 2}
