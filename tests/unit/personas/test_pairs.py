"""Persona catalogue, speech parameters, matched pairs and the text transforms."""

from __future__ import annotations

import itertools

import pytest
from pydantic import ValidationError

from voice_audit.personas import (
    AXES,
    CallerCondition,
    MatchedPair,
    load_catalogue,
    render_utterance,
    speech_params,
)

CAT = load_catalogue()
BASE = CallerCondition(
    accent="us_general", voice_profile="female_adult", affect="calm", disfluency="none", wording="plain"
)


def test_catalogue_covers_the_axes_with_three_voices_per_profile() -> None:
    for axis in AXES:
        assert len(CAT.levels(axis)) >= 2
    assert {"calm", "frustrated", "anxious"} <= set(CAT.levels("affect"))
    assert {"none", "mild", "heavy"} <= set(CAT.levels("disfluency"))
    kinds = {lvl.kind for lvl in CAT.accent.values()}
    assert kinds == {"dialect", "second_language"}
    for level in CAT.voice_profile.values():
        assert len(set(level.realisations)) >= 3
    assert not {"hi", "ar", "ru", "ja"} & {lvl.voice for lvl in CAT.accent.values()}


def test_speech_params_differ_only_on_the_contrasted_axis() -> None:
    b = BASE.model_copy(update={"accent": "l2_spanish"})
    pa, pb = speech_params(CAT, BASE, 1), speech_params(CAT, b, 1)
    diff = {k for k in type(pa).model_fields if getattr(pa, k) != getattr(pb, k)}
    assert diff == {"voice"}
    c = BASE.model_copy(update={"affect": "frustrated"})
    diff = {k for k in type(pa).model_fields if getattr(pa, k) != getattr(speech_params(CAT, c, 1), k)}
    assert diff and "voice" not in diff and "variant" not in diff
    voices = {speech_params(CAT, BASE, i) for i in range(3)}
    assert len(voices) == 3


def test_pair_refuses_undeclared_axis() -> None:
    b = BASE.model_copy(update={"accent": "l2_spanish", "affect": "anxious"})
    with pytest.raises(ValidationError, match="undeclared axis affect"):
        MatchedPair(
            pair_id="p",
            scenario_id="s",
            contrast=("accent",),
            condition_a=BASE,
            condition_b=b,
            voice_index=0,
            seed=1,
            replicate=0,
            run_batch="b",
        )
    with pytest.raises(ValidationError, match="same level"):
        MatchedPair(
            pair_id="p",
            scenario_id="s",
            contrast=("accent",),
            condition_a=BASE,
            condition_b=BASE,
            voice_index=0,
            seed=1,
            replicate=0,
            run_batch="b",
        )
    aa = MatchedPair(
        pair_id="p",
        scenario_id="s",
        contrast=(),
        condition_a=BASE,
        condition_b=BASE,
        voice_index=0,
        seed=1,
        replicate=0,
        run_batch="b",
    )
    assert aa.contrast == ()


TEMPLATE = "I was charged twice, {amount}, {when}, for my {service} plan."
SLOTS = {
    "amount": "twenty four dollars and ninety nine cents",
    "when": "three days ago",
    "service": "Streaming Plus",
}


@pytest.mark.parametrize(
    ("disfluency", "wording"),
    list(itertools.product(["none", "mild", "heavy"], ["plain", "loyalty", "urgency"])),
)
def test_transforms_keep_every_fact_span_intact(disfluency: str, wording: str) -> None:
    cond = BASE.model_copy(update={"disfluency": disfluency, "wording": wording})
    for seed in range(40):
        utt = render_utterance(TEMPLATE, SLOTS, cond, CAT, seed=seed, key="issue")
        for fact in SLOTS.values():
            assert fact in utt.text, (seed, utt.text)
        assert utt.protected == tuple(SLOTS[k] for k in ("amount", "when", "service"))


def test_transforms_are_deterministic_and_shared_across_an_accent_pair() -> None:
    heavy = BASE.model_copy(update={"disfluency": "heavy"})
    other_accent = heavy.model_copy(update={"accent": "l2_german"})
    u1 = render_utterance(TEMPLATE, SLOTS, heavy, CAT, seed=7, key="k")
    u2 = render_utterance(TEMPLATE, SLOTS, heavy, CAT, seed=7, key="k")
    u3 = render_utterance(TEMPLATE, SLOTS, other_accent, CAT, seed=7, key="k")
    assert u1 == u2
    assert u1.text == u3.text and u1.ssml == u3.ssml
    assert render_utterance(TEMPLATE, SLOTS, BASE, CAT, seed=7, key="k").text == u1.base_text


def test_heavy_disfluency_adds_fillers_and_breaks() -> None:
    heavy = BASE.model_copy(update={"disfluency": "heavy"})
    texts = [render_utterance(TEMPLATE, SLOTS, heavy, CAT, seed=s, key="k") for s in range(20)]
    assert any(f in u.text.split() or f + "," in u.text.split() for u in texts for f in ("um", "uh", "er"))
    assert all(("<break" in u.ssml) == (u.text != u.base_text) for u in texts)


def test_ssml_escapes_markup() -> None:
    utt = render_utterance("Fish & chips <now>", {}, BASE, CAT, seed=1, key="k")
    assert "&amp;" in utt.ssml and "&lt;now&gt;" in utt.ssml
