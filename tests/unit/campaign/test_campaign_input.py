"""Bad campaign input: one clear line with file, line and column; a non-zero exit; nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.campaign_input import GOOD, write
from voice_audit.harness.planning import load_campaign
from voice_audit.scenarios import ConfigError

ESPEAK = GOOD + "tts: {name: espeak}\n"
"""GOOD voiced by eSpeak: its levels (l2_spanish, gb_rp, female callers) are beyond the default voice."""


def test_good_campaign_plans_matched_pairs(tmp_path: Path) -> None:
    loaded = load_campaign(write(tmp_path, ESPEAK))
    pairs = loaded.plan.pairs()
    assert len(pairs) == 2 * 2 * 3 * 2
    for a, b in pairs:
        assert a.pair == b.pair and a.side == "a" and b.side == "b"
        assert a.caller_id[:-1] == b.caller_id[:-1]
    again = load_campaign(write(tmp_path, ESPEAK))
    assert again.plan.sha256 == loaded.plan.sha256
    assert len({e.episode_id for e in loaded.plan.episodes}) == len(loaded.plan.episodes)


def test_same_caller_meets_every_agent(tmp_path: Path) -> None:
    text = ESPEAK.replace(
        '  - {name: s, adapter: "voice_audit.agents.fakes.scripted:scripted"}\n',
        '  - {name: s, adapter: "voice_audit.agents.fakes.scripted:scripted"}\n  - {name: t, adapter: "voice_audit.agents.fakes.scripted:scripted"}\n',
    )
    loaded = load_campaign(write(tmp_path, text))
    by_agent: dict[str, set[tuple[str, int]]] = {}
    for e in loaded.plan.episodes:
        by_agent.setdefault(e.agent, set()).add((e.caller_id, e.pair.seed))
    assert by_agent["s"] == by_agent["t"]


CASES = [
    ("malformed", GOOD.replace("seed: 3", "seed: [3"), "invalid YAML", None),
    (
        "unknown axis",
        GOOD.replace("affect: calm, disfluency", "mood: calm, affect: calm, disfluency", 1),
        "unknown persona axis 'mood'",
        8,
    ),
    ("unknown level", GOOD.replace("l2_spanish", "klingon"), "unknown level 'klingon' for axis 'accent'", 10),
    (
        "undeclared axis",
        GOOD.replace("b: {accent: l2_spanish}", "b: {accent: l2_spanish, affect: anxious}"),
        "undeclared axis affect",
        7,
    ),
    (
        "unknown agent",
        GOOD.replace('adapter: "voice_audit.agents.fakes.scripted:scripted"', "adapter: nosuchagent"),
        "unknown agent adapter 'nosuchagent'",
        5,
    ),
    ("unknown tts", GOOD + "tts: {name: nosuchtts}\n", "unknown TTS backend 'nosuchtts'", 15),
    (
        "unknown scenario",
        GOOD.replace("outage_support]", "outage_suport]"),
        "unknown scenario 'outage_suport'",
        3,
    ),
    ("missing axis", GOOD.replace("wording: plain}\n    a:", "}\n    a:"), "no level for axis wording", 7),
    ("unknown field", GOOD + "concurency: 3\n", "unknown field 'concurency'", 15),
    ("duplicate key", GOOD + "seed: 4\n", "duplicate key 'seed'", 15),
    ("too many voices", GOOD.replace("voices: 3", "voices: 4"), "only 3 realisations", 13),
]


@pytest.mark.parametrize(("name", "text", "message", "line"), CASES, ids=[c[0] for c in CASES])
def test_bad_campaign_gives_one_positioned_line(
    tmp_path: Path, name: str, text: str, message: str, line: int | None
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        load_campaign(path)
    rendered = str(err.value)
    assert message in rendered, rendered
    assert rendered.startswith(str(path) + ":")
    assert "\n" not in rendered
    if line is not None:
        assert err.value.line == line, rendered
