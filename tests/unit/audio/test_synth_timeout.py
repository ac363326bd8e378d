"""The synthesis time limit scales with the text, and its error survives the trip between processes."""

from __future__ import annotations

import pickle

import pytest
from pydantic import ValidationError

from voice_audit.harness.audio.synth import SynthesisTimeout, SynthesisTimeoutError
from voice_audit.harness.audio.tts_pool import first_words


def test_limit_grows_with_text_and_a_cold_worker_gets_its_allowance() -> None:
    t = SynthesisTimeout()
    short, long = (
        t.for_text("Yes."),
        t.for_text("I would like to check the balance on my account, please. " * 4),
    )
    assert t.base_s < short < long
    assert long - short == pytest.approx(t.per_char_s * (228 - 4))
    assert t.for_text("Yes.", cold=True) == pytest.approx(short + t.cold_start_s)
    assert t.for_text("x" * 300) < 300.0, "must fire before a call's default 300 s limit blames the agent"


@pytest.mark.parametrize("bad", [{"base_s": 0}, {"per_char_s": -1}, {"cold_start_s": -0.5}, {"seconds": 3}])
def test_bad_limits_are_refused(bad: dict[str, float]) -> None:
    with pytest.raises(ValidationError):
        SynthesisTimeout(**bad)


def test_timeout_error_pickles_with_its_fields() -> None:
    err = SynthesisTimeoutError(
        "espeak", "en-us+f2", first_words("one two three four five six seven"), 12.5, "killed"
    )
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is SynthesisTimeoutError and str(back) == str(err)
    assert (back.backend, back.voice, back.words, back.timeout_s, back.stopped) == (
        "espeak",
        "en-us+f2",
        "one two three four five six ...",
        12.5,
        "killed",
    )
