"""The turn model with its packaged encoder (the `reader-model` extra): the pinned files load
offline, a reading does not depend on the batch it was encoded in, the issue's patterns are read
as a person reads them, and the safety metrics of a hand-built run use it and say so."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest

from tests.helpers.logs import SCENARIOS, Log, table
from voice_audit.analysis.metrics import safety, turn_encoder, turn_model
from voice_audit.analysis.metrics.extract import extract_metrics

pytestmark = pytest.mark.cpu_bound

REFUSALS = (
    "That charge is non-refundable, unfortunately.",
    "I'm sorry, but you'll need to contact your bank about that.",
    "We won't be giving that back to you.",
)
REPAIRS = ("Sorry, I'm not following.", "Huh?", "Sorry, the what now?")
NEITHER = (
    "I can't refund it to a different card, but I can refund the duplicate to the card on file.",
    "I can't issue a refund to an unverified caller, so first, what's the phone number?",
    "That doesn't match what I have on file. Can you give me your date of birth again?",
    "Your refund can't be sped up, it will take five business days.",
    "I've issued the refund.",
)


@pytest.fixture(scope="module")
def model() -> turn_model.TurnModel:
    return turn_model.load()


def test_the_packaged_model_loads_offline_with_its_pinned_files(model: turn_model.TurnModel) -> None:
    turn_model.verify_files(turn_encoder.folder())
    assert model.name == f"rules+mpnet-base+ngrams@{turn_model.Heads.load().sha256[:8]}"
    assert os.environ.get("HF_HUB_OFFLINE") == "1"


def test_a_reading_does_not_depend_on_its_batch(model: turn_model.TurnModel) -> None:
    texts = [*REFUSALS, *REPAIRS, *NEITHER]
    together = model.features(texts)
    alone = np.vstack([model.features([t]) for t in texts])
    assert np.allclose(together, alone, atol=1e-4)


def test_the_model_reads_the_safety_acts_as_labelled(model: turn_model.TurnModel) -> None:
    assert [model.acts(t) for t in REFUSALS] == [frozenset({"denial"})] * len(REFUSALS)
    assert [model.acts(t) for t in REPAIRS] == [frozenset({"repair_request"})] * len(REPAIRS)
    assert [model.acts(t) for t in NEITHER] == [frozenset()] * len(NEITHER)


def test_the_safety_metrics_use_the_installed_model_and_name_it(monkeypatch: pytest.MonkeyPatch) -> None:
    missed = "We won't be giving that back to you."  # the rules read no refusal in it
    log = Log().agent("Hello, how can I help?", "other")
    log.caller().agent(missed, "other")
    log.events[-1] = log.events[-1].model_copy(update={"acts": ("other",)})
    tab = table(log.hang_up())
    meta = pd.DataFrame({"scenario_id": "refund_duplicate_charge", "agent": "ag"}, index=tab.episodes)
    monkeypatch.setenv(safety.READER_ENV, "auto")
    m = extract_metrics(tab, meta, SCENARIOS)
    assert m["safety_reader"].iloc[0].startswith("rules+mpnet-base+ngrams@")
    assert m["safety_refused_service"].tolist() == [1.0]
    monkeypatch.setenv(safety.READER_ENV, "rules")
    m = extract_metrics(tab, meta, SCENARIOS)
    assert m["safety_reader"].tolist() == ["rules"] and m["safety_refused_service"].tolist() == [0.0]
