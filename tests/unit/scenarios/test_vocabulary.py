"""Scenario-defined tools and outcomes: validation with positions, the fixture, and the shared rule table."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fixtures.cancel_scenario import CANCEL_SUBSCRIPTION, cancel_library
from voice_audit.harness.model.events import CallerDecision, ToolCall, ToolResult
from voice_audit.harness.model.outcome import judge_outcome
from voice_audit.harness.tools import ToolFixture
from voice_audit.scenarios import (
    BUNDLED_LIBRARY,
    ConfigError,
    ScenarioLibrary,
    load_scenario_file,
    outcome_rules,
)


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "s.yaml"
    p.write_text(text, encoding="utf-8")
    return p


def _line_of(text: str, needle: str, nth: int = 0) -> int:
    lines = [i for i, line in enumerate(text.splitlines(), start=1) if needle in line]
    return lines[nth]


def test_cancel_scenario_loads_and_locks(tmp_path: Path) -> None:
    sc = cancel_library(tmp_path / "lib").get_locked("cancel_subscription")
    assert [r.describe() for r in sc.outcome_rules.rules][:1] == [
        "cancelled <- ok result of cancel_subscription"
    ]
    assert sc.is_acceptable("cancelled") and not sc.is_acceptable("escalated")
    assert "cancelled" in sc.outcome_rules.producible


def test_unknown_acceptable_outcome_is_refused_with_its_position(tmp_path: Path) -> None:
    text = CANCEL_SUBSCRIPTION.replace("outcome: cancelled,", "outcome: canceled,")
    with pytest.raises(ConfigError) as err:
        load_scenario_file(_write(tmp_path, text))
    line = _line_of(text, "outcome: canceled")
    assert f"s.yaml:{line}:" in str(err.value) and "unknown outcome 'canceled'" in str(err.value)


def test_unreachable_acceptable_outcome_is_refused(tmp_path: Path) -> None:
    # the tool that realises `cancelled` is not permitted and no words rule names it
    text = CANCEL_SUBSCRIPTION.replace(
        "    escalate_to_human: true\n  tools:",
        "    escalate_to_human: true\n    cancel_subscription: false\n  tools:",
    ).replace(", words: confirmation", "")
    with pytest.raises(ConfigError) as err:
        load_scenario_file(_write(tmp_path, text))
    msg = str(err.value)
    assert "acceptable outcome 'cancelled' cannot be produced" in msg
    assert f"s.yaml:{_line_of(text, 'outcome: cancelled')}:" in msg


def test_builtin_acceptable_outcome_without_its_tool_is_refused(tmp_path: Path) -> None:
    src = (BUNDLED_LIBRARY / "outage_support.yaml").read_text(encoding="utf-8")
    text = src.replace("    open_ticket: true\n", "    open_ticket: false\n")
    assert text != src
    with pytest.raises(ConfigError, match="'partial_credit' cannot be produced"):
        load_scenario_file(_write(tmp_path, text))


def test_outcome_without_a_rule_is_refused(tmp_path: Path) -> None:
    text = CANCEL_SUBSCRIPTION.replace("      realises: cancelled\n", "").replace(", words: confirmation", "")
    with pytest.raises(ConfigError) as err:
        load_scenario_file(_write(tmp_path, text))
    assert "outcome 'cancelled' has no rule" in str(err.value)
    assert f"s.yaml:{_line_of(text, 'id: cancelled')}:" in str(err.value)


def test_unknown_references_are_refused_with_their_positions(tmp_path: Path) -> None:
    cases = [
        ("realises: cancelled", "realises: closed", "realises: closed", "unknown outcome 'closed'"),
        (
            "fact: account.account_id",
            "fact: account.acount_id",
            "fact: account.acount_id",
            "account.acount_id",
        ),
        (
            "    crm_lookup: true\n",
            "    crm_lookup: true\n    refund_everything: true\n",
            "refund_everything",
            "unknown tool 'refund_everything'",
        ),
        ("- name: cancel_subscription", "- name: issue_refund", "- name: issue_refund", "is built in"),
        ("{id: cancelled,", "{id: denied,", "{id: denied,", "'denied' is built in"),
    ]
    for old, new, where, message in cases:
        text = CANCEL_SUBSCRIPTION.replace(old, new)
        assert text != CANCEL_SUBSCRIPTION, old
        with pytest.raises(ConfigError) as err:
            load_scenario_file(_write(tmp_path, text))
        assert message in str(err.value), (old, str(err.value))
        assert f"s.yaml:{_line_of(text, where)}:" in str(err.value), (old, str(err.value))


def test_bundled_library_keeps_its_locked_hashes() -> None:
    assert ScenarioLibrary(BUNDLED_LIBRARY).verify() == []


def test_declared_tool_fixture_checks_arguments_against_the_facts(tmp_path: Path) -> None:
    sc = cancel_library(tmp_path / "lib").get_locked("cancel_subscription")
    fx = ToolFixture(sc.facts)
    assert "cancel_subscription" in fx.available()
    schema = next(s for s in fx.schemas() if s["name"] == "cancel_subscription")
    assert schema["parameters"]["required"] == ["account_id"]
    assert fx.call("cancel_subscription", {}).error == "missing_argument:account_id"
    assert fx.call("cancel_subscription", {"account_id": "ACC-1"}).error == "argument_mismatch:account_id"
    ok = fx.call("cancel_subscription", {"account_id": "acc 51230"})
    assert ok.ok and ok.result == {"cancellation_id": "CX-51230", "effective": "2026-12-15"}


def test_scenario_outcome_from_tool_or_words(tmp_path: Path) -> None:
    sc = cancel_library(tmp_path / "lib").get_locked("cancel_subscription")
    rules = sc.outcome_rules
    tool = [
        ToolCall(t_ms=1, call_id="c1", name="cancel_subscription", arguments={"account_id": "ACC-51230"}),
        ToolResult(
            t_ms=2, call_id="c1", name="cancel_subscription", ok=True, result_keys=("cancellation_id",)
        ),
    ]
    assert judge_outcome(tool, rules) == ("cancelled", (), "tool_trace")
    said = [
        CallerDecision(
            t_ms=3,
            turn=2,
            heard="It is cancelled.",
            classification="confirmation",
            action="close",
            reason="done",
        )
    ]
    assert judge_outcome(said, rules) == ("cancelled", (), "agent_words")
    assert judge_outcome(said, "account") == (
        "unresolved",
        (),
        "agent_words",
    )  # the built-in table has no remedy
    assert outcome_rules("billing").rules[-2].outcome == "refund_issued"
