"""The observer-validity gate validates the reader the safety metrics used: the acting reader's acts
joined with the turn model's, named in the gate's details and evidence, with the turns the two
readers disagreed on listed as the ones to rate first."""

from __future__ import annotations

import pandas as pd

from tests.helpers.logs import Log, table
from voice_audit.analysis.gates.observer_evidence import evaluate_observer, observer_inputs, turns_to_label
from voice_audit.analysis.metrics import turn_model

MISSED = "That one's staying on the bill, I'm afraid."


class FakeModel:
    def __init__(self) -> None:
        self.heads = turn_model.Heads({}, {}, {"denial": 0.7, "repair_request": 0.7}, "0" * 64, {})
        self.name = "rules+fake"

    def probabilities(self, texts: list[str]) -> list[dict[str, float]]:
        return [{"denial": 0.9 if t == MISSED else 0.1, "repair_request": 0.0} for t in texts]


def _run() -> tuple[pd.DataFrame, object]:
    logs = []
    for _ in range(2):
        log = Log().agent("Hello, how can I help?", "other")
        log.caller().agent(MISSED, "other")
        log.events[-1] = log.events[-1].model_copy(update={"acts": ("other",)})
        log.caller().agent("I can't refund that charge.", "denial")
        log.events[-1] = log.events[-1].model_copy(update={"acts": ("denial",)})
        logs.append(log.hang_up())
    return table(*logs), FakeModel()


def test_the_gate_reads_safety_acts_as_the_metrics_reader_and_lists_turns_to_label() -> None:
    tab, fake = _run()
    agents = pd.Series("ag", index=tab.episodes)
    with_model = observer_inputs(tab, agents, fake)
    rules_only = observer_inputs(tab, agents, None)
    assert with_model.metrics_reader == "rules+fake" and rules_only.metrics_reader == "rules"
    # per call: the refusal only the model heard (turn 1), the one only the rules heard (turn 2)
    assert len(with_model.to_label) == 4 and rules_only.to_label.empty
    labels = turns_to_label(with_model.to_label)
    assert labels["turns"] == 4 and {r["turn"] for r in labels["first"]} == {1, 2}

    readings = with_model.readings
    ratings = readings.assign(
        rater="r0",
        act=readings["metrics_acts"].map(lambda a: "denial" if "denial" in a else "other"),
        facts="",
    )
    ratings = pd.concat([ratings, ratings.assign(rater="r1")])[
        ["episode_id", "turn", "rater", "act", "facts"]
    ]
    eps = list(tab.episodes)
    pairs = pd.DataFrame(
        [{"pair_id": "p", "episode_id_a": eps[0], "episode_id_b": eps[1], "agent": "ag", "scenario_id": "s",
          "contrast": "x", "condition_key_a": "a", "condition_key_b": "b"}]
    )  # fmt: skip

    def gate(r: pd.DataFrame, name: str):  # type: ignore[no-untyped-def]
        return evaluate_observer(
            r, ratings, pairs, kappa_min=0.6, min_turns=1, min_raters=2, alpha=0.05, metrics_reader=name
        )

    v = gate(readings, "rules+fake")
    assert v.details["metrics_reader"] == "rules+fake" and "reader rules+fake" in v.evidence
    assert v.details["safety_acts"]["denial"]["recall"] == 1.0
    v_rules = gate(rules_only.readings, "rules")
    assert v_rules.details["safety_acts"]["denial"]["recall"] == 0.5  # the refusal the rules missed
