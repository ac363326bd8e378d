"""Bounded line sets: a disfluency level says each scripted line in `line_variants` variants drawn
from the campaign seed, so a voice's line list grows with scenarios, not with replicates; both
calls of a pair say the same variant, and a wording contrast changes only the framing."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from voice_audit.harness.caller.lines import planned_lines
from voice_audit.harness.planning import LoadedCampaign, load_campaign, plan_campaign
from voice_audit.personas import CallerCondition, load_catalogue, render_utterance
from voice_audit.scenarios import ConfigError

CAMPAIGN = """
name: variants
seed: 7
scenarios: [refund_duplicate_charge]
agents: [{{name: a1, adapter: hybrid}}, {{name: a2, adapter: hybrid}}]
pairs:
  - name: "disfluency: fluent vs heavy"
    contrast: [disfluency]
    base: {{accent: us_general, voice_profile: male_adult, affect: calm, wording: plain}}
    a: {{disfluency: none}}
    b: {{disfluency: heavy}}
voices: 3
replicates: {replicates}
tts: {{name: espeak}}
{extra}
"""


def _load(tmp_path: Path, replicates: int, extra: str = "") -> LoadedCampaign:
    path = tmp_path / f"c{replicates}{len(extra)}.yaml"
    path.write_text(CAMPAIGN.format(replicates=replicates, extra=extra), encoding="utf-8")
    return load_campaign(path)


def _per_voice(loaded: LoadedCampaign) -> Counter[str]:
    return Counter(v.voice for v in planned_lines(loaded))


def test_the_line_set_grows_with_variants_not_replicates(tmp_path: Path) -> None:
    one, three, nine = (_per_voice(_load(tmp_path, r)) for r in (1, 3, 9))
    assert set(one) == set(three) == set(nine) and len(nine) == 3
    assert nine == three  # six more replicates: not one more line
    fluent = _per_voice(_load(tmp_path, 9, "line_variants: 1"))
    for voice, n in nine.items():
        assert one[voice] < n  # one replicate says one variant; three say all three
        # the fluent lines, plus at most three renderings of each for the heavy condition
        base = fluent[voice] // 2
        assert n <= base * (1 + 3)
        assert n < 100


def test_pairs_say_the_variant_of_their_replicate(tmp_path: Path) -> None:
    loaded = _load(tmp_path, 7)
    pairs = {e.pair.pair_id: e.pair for e in loaded.plan.episodes}.values()
    seeds: dict[int, set[int]] = {}
    for p in pairs:
        assert p.line_variant == p.replicate % loaded.campaign.line_variants
        assert p.line_seed is not None
        seeds.setdefault(p.line_variant, set()).add(p.line_seed)
    # one seed per variant, shared by every voice, agent and replicate saying it; three different ones
    assert all(len(s) == 1 for s in seeds.values()) and len({next(iter(s)) for s in seeds.values()}) == 3
    # both calls of a pair are one MatchedPair: the same variant and seed on each side by construction
    sides = Counter(e.pair.pair_id for e in loaded.plan.episodes)
    assert set(sides.values()) == {2}


def test_line_variants_is_hashed_and_bounded(tmp_path: Path) -> None:
    a, b = _load(tmp_path, 3), _load(tmp_path, 3, "line_variants: 2")
    assert a.campaign.line_variants == 3 and b.campaign.line_variants == 2
    assert a.campaign.sha256 != b.campaign.sha256
    with pytest.raises(ConfigError, match="line_variants"):
        _load(tmp_path, 3, "line_variants: 0")


def test_a_wording_contrast_changes_only_the_framing() -> None:
    catalogue = load_catalogue()
    plain = CallerCondition(
        accent="us_general", voice_profile="male_adult", affect="calm", disfluency="heavy", wording="plain"
    )
    framed = plain.model_copy(update={"wording": "loyalty"})
    template = "I was charged twice for my subscription and I would like my money back please."
    differ = 0
    for seed in range(40):
        a = render_utterance(template, {}, plain, catalogue, seed=seed, key="k")
        b = render_utterance(template, {}, framed, catalogue, seed=seed, key="k")
        opener = catalogue.wording["loyalty"].opener.split()[0]
        assert b.text.startswith(opener) and b.text != a.text
        # the scripted words carry the same fillers and restarts on both sides (a filler may join the
        # framing to the first scripted word, which the unframed side has no place for)
        body_a = a.text.split(" ", 1)[1]
        assert body_a in b.text, (seed, a.text, b.text)
        differ += a.text != render_utterance(template, {}, plain, catalogue, seed=seed + 1000, key="k").text
    assert differ > 30  # the seed does change the draws


def test_replanning_gives_the_same_variants(tmp_path: Path) -> None:
    loaded = _load(tmp_path, 4)
    from voice_audit.scenarios.yamlsrc import load_yaml

    again = plan_campaign(load_yaml(loaded.path), loaded.campaign, loaded.scenarios, loaded.catalogue)
    assert again.sha256 == loaded.plan.sha256
