"""The usage ledger: what each call consumed, unknown kept apart from zero, and priced under the
user's own table (most specific rate, `per` units, unpriced meters named, unknown -> lower bound)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from voice_audit.agents.protocols.realtime_wire import exhausted_wait_s, usage_quantities
from voice_audit.harness.adapter import retry_after_seconds
from voice_audit.harness.model import BackendInfo, EpisodeHeader, EpisodeOutcome, EpisodeRecord, parse_event
from voice_audit.harness.model.campaign import Campaign
from voice_audit.harness.model.usage import (
    AGENT_USAGE,
    CALL_MINUTES,
    PriceTable,
    UsageItem,
    UsageRecord,
    cost_of,
)
from voice_audit.harness.runlog import USAGE_JSONL, UsageLedger, call_usage, read_usage
from voice_audit.personas import CallerCondition, SpeechParams

COND = CallerCondition(
    accent="us_general", voice_profile="female_adult", affect="calm", disfluency="none", wording="plain"
)


def record(duration_ms: int = 90_000, agent: str = "bot") -> EpisodeRecord:
    header = EpisodeHeader(
        episode_id="e1", run_id="r", pair_id="p", caller_id="ca", side="a", scenario_id="s", scenario_version=1,
        scenario_sha256="0" * 64, facts_sha256="1" * 64, campaign_sha256="2" * 64, plan_sha256="3" * 64,
        agent=agent, architecture="nat", adapter="realtime", condition=COND, contrast=("accent",), voice_index=0,
        speech=SpeechParams(voice="en-us", variant="f1"), seed=1, replicate=0, run_batch="b", pacing="realtime",
        tts=BackendInfo(name="espeak", version="1"),
    )  # fmt: skip
    outcome = EpisodeOutcome(
        status="completed", termination="done", terminal_outcome="refund_issued", duration_ms=duration_ms, turns=2,
        n_events=0, events_sha256="4" * 64,
    )  # fmt: skip
    return EpisodeRecord(header=header, outcome=outcome, finished_at=dt.datetime(2026, 12, 4, tzinfo=dt.UTC))


CALLER = [
    {"type": "call_started", "t_ms": 0, "pacing": "realtime", "protocol": "realtime"},
    {"type": "caller_utterance_start", "t_ms": 10, "turn": 1, "kind": "anchor", "text": "Hello there", "duration_ms": 900},
    {"type": "caller_utterance_start", "t_ms": 20, "turn": 2, "kind": "anchor", "text": "Refund, please", "duration_ms": 900},
]  # fmt: skip
USAGE = [
    {"type": "usage", "t_ms": 30, "source": "realtime.response.done", "model": "rt", "quantities": {"input_tokens": 100, "output_audio_tokens": 40}},
    {"type": "usage", "t_ms": 40, "source": "realtime.response.done", "model": "rt", "quantities": {"input_tokens": 50}},
]  # fmt: skip


def _usage(events: list[dict[str, object]], asr_seconds: float | None = 3.5) -> UsageRecord:
    return call_usage(
        record(), [parse_event(e) for e in events], pair_id="p", tts_model="espeak", asr_model="tiny",
        asr_seconds=asr_seconds,
    )  # fmt: skip


def test_agent_usage_nobody_reported_is_unknown_with_a_reason_never_zero() -> None:
    u = _usage(CALLER)
    agent = [i for i in u.items if i.side == "agent"]
    assert [(i.meter, i.quantity) for i in agent] == [(AGENT_USAGE, None)]
    assert agent[0].reason and "realtime" in agent[0].reason
    assert u.quantity(AGENT_USAGE) is None  # not 0.0
    assert u.protocol == "realtime" and u.call_minutes == pytest.approx(1.5)
    assert u.quantity("tts_characters") == len("Hello there") + len("Refund, please")
    assert u.quantity("asr_audio_seconds") == pytest.approx(3.5)


def test_reported_usage_is_summed_per_meter_and_model() -> None:
    u = _usage(CALLER + USAGE, asr_seconds=None)
    assert u.quantity("input_tokens") == 150 and u.quantity("output_audio_tokens") == 40
    assert all(i.meter != AGENT_USAGE for i in u.items)
    assert u.quantity("asr_audio_seconds") is None  # no recogniser ran: no such meter, not a zero
    assert {i.model for i in u.items if i.side == "agent"} == {"rt"}


def test_an_unknown_quantity_needs_a_reason() -> None:
    with pytest.raises(ValidationError, match="needs a reason"):
        UsageItem(meter="input_tokens", quantity=None, side="agent", source="x")


TABLE = PriceTable.model_validate(
    {
        "currency": "EUR",
        "rates": [
            {"meter": "call_minutes", "price": 0.01},
            {"meter": "call_minutes", "protocol": "realtime", "price": 0.05},
            {"meter": "input_tokens", "agent": "bot", "price": 4.0, "per": 1_000_000},
            {"meter": "output_audio_tokens", "price": 80.0, "per": 1_000_000},
        ],
    }
)


def test_price_picks_the_most_specific_rate_and_per_units() -> None:
    c = cost_of(_usage(CALLER + USAGE), TABLE)
    expected = 1.5 * 0.05 + 150 * 4.0 / 1e6 + 40 * 80.0 / 1e6
    assert c.amount == pytest.approx(expected)
    assert not c.lower_bound and not c.unknown
    assert c.unpriced == {"tts_characters", "asr_audio_seconds"}  # used, no rate: named, not priced at 0


def test_unknown_usage_makes_the_cost_a_lower_bound_not_a_zero() -> None:
    known = cost_of(_usage(CALLER + USAGE), TABLE)
    unknown = cost_of(_usage(CALLER), TABLE)
    assert unknown.lower_bound and unknown.unknown == {AGENT_USAGE}
    assert unknown.amount == pytest.approx(1.5 * 0.05)  # the known part only
    assert known.amount > unknown.amount


def test_ledger_appends_whole_lines_and_the_reader_drops_a_torn_tail(tmp_path: Path) -> None:
    ledger = UsageLedger(tmp_path)
    first, second = _usage(CALLER), _usage(CALLER + USAGE)
    ledger.append(first)
    ledger.append(second)
    ledger.close()
    path = tmp_path / USAGE_JSONL
    with open(path, "ab") as fh:
        fh.write(b'{"schema_version": 1, "run_id": "r", "epis')  # a kill mid-write
    got = read_usage(path)
    assert got.records == [first, second] and got.problems == []


def test_reader_refuses_a_newer_schema_line_by_name(tmp_path: Path) -> None:
    path = tmp_path / USAGE_JSONL
    line = json.loads(_usage(CALLER).model_dump_json())
    path.write_text(json.dumps({**line, "schema_version": 99}) + "\n" + json.dumps(line) + "\n")
    got = read_usage(path)
    assert len(got.records) == 1
    assert len(got.problems) == 1 and f"{USAGE_JSONL}:1" in got.problems[0] and "newer" in got.problems[0]
    assert read_usage(tmp_path / "absent.jsonl").records == []


def test_realtime_usage_keeps_only_what_the_server_sent() -> None:
    usage = {
        "total_tokens": 300, "input_tokens": 200, "output_tokens": 100,
        "input_token_details": {"text_tokens": 20, "audio_tokens": 180, "cached_tokens": 64},
        "output_token_details": {"audio_tokens": 90},
    }  # fmt: skip
    got = usage_quantities(usage)
    assert got == {
        "input_tokens": 200.0, "output_tokens": 100.0, "input_text_tokens": 20.0, "input_audio_tokens": 180.0,
        "cached_input_tokens": 64.0, "output_audio_tokens": 90.0,
    }  # fmt: skip
    assert "output_text_tokens" not in got  # absent in the report: unknown, not 0
    assert usage_quantities(None) == {}


def test_realtime_rate_limits_at_zero_ask_for_a_wait() -> None:
    limits = [
        {"name": "requests", "limit": 100, "remaining": 0, "reset_seconds": 2.5},
        {"name": "tokens", "limit": 1000, "remaining": 900, "reset_seconds": 9.0},
    ]
    assert exhausted_wait_s(limits) == 2.5
    assert exhausted_wait_s([{**limits[0], "remaining": 3}]) is None


def test_retry_after_reads_seconds_and_dates() -> None:
    assert retry_after_seconds("7") == 7.0
    assert retry_after_seconds(None) is None and retry_after_seconds("soon") is None
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # in the past: no wait


BASE = {
    "name": "c",
    "scenarios": ["refund_duplicate_charge"],
    "agents": [{"name": "bot", "adapter": "hybrid"}],
    "pairs": [{"contrast": ["accent"], "a": {"accent": "us_general"}, "b": {"accent": "l2_spanish"}}],
}


def test_prices_budget_and_vendor_limits_leave_the_campaign_hash_alone() -> None:
    plain = Campaign.model_validate(BASE)
    limited = Campaign.model_validate(
        {
            **BASE,
            "agents": [
                {"name": "bot", "adapter": "hybrid", "max_concurrent_calls": 2, "calls_per_minute": 30}
            ],
            "prices": {"rates": [{"meter": CALL_MINUTES, "price": 0.01}]},
            "budget": {"max_calls": 10},
        }
    )
    assert limited.sha256 == plain.sha256  # a resume may raise the budget
    assert (
        Campaign.model_validate({**BASE, "voices": 2}).sha256 != plain.sha256
    )  # what is called still counts


def test_a_cost_limit_needs_prices_and_a_budget_needs_a_limit() -> None:
    with pytest.raises(ValidationError, match="needs a price table"):
        Campaign.model_validate({**BASE, "budget": {"max_cost": 5}})
    with pytest.raises(ValidationError, match="at least one of"):
        Campaign.model_validate({**BASE, "budget": {}})


CAMPAIGN = """\
name: c
scenarios: [refund_duplicate_charge]
agents: [{name: bot, adapter: hybrid}]
pairs:
  - contrast: [accent]
    base: {voice_profile: female_adult, affect: calm, disfluency: none, wording: plain}
    a: {accent: us_general}
    b: {accent: l2_spanish}
prices: prices.yaml
tts: {name: espeak}
"""


def test_a_price_file_is_read_beside_the_campaign_and_its_errors_name_its_line(tmp_path: Path) -> None:
    from voice_audit.harness.planning import load_campaign
    from voice_audit.scenarios import ConfigError

    (tmp_path / "c.yaml").write_text(CAMPAIGN)
    (tmp_path / "prices.yaml").write_text("currency: EUR\nrates:\n  - {meter: call_minutes, price: 0.02}\n")
    loaded = load_campaign(tmp_path / "c.yaml")
    assert loaded.campaign.prices is not None and loaded.campaign.prices.currency == "EUR"
    assert loaded.campaign.prices.rates[0].price == 0.02
    (tmp_path / "prices.yaml").write_text("currency: EUR\nrates:\n  - {meter: call_minutes, price: -1}\n")
    with pytest.raises(ConfigError) as err:
        load_campaign(tmp_path / "c.yaml")
    assert "prices.yaml:3" in str(err.value)
    (tmp_path / "prices.yaml").write_text("rates:\n  - {meter: call_minutes, agent: nobody, price: 1}\n")
    with pytest.raises(ConfigError, match="agent 'nobody'"):
        load_campaign(tmp_path / "c.yaml")


def test_a_rate_limit_is_the_harness_side_never_the_agents_non_service() -> None:
    from voice_audit.agents.protocols._stream import closed_event
    from voice_audit.harness.model.events import failure_side, non_service_flag

    assert failure_side("rate_limited") == "harness"  # missing data the differential-failure gate weighs
    assert non_service_flag("rate_limited") is None
    from websockets.exceptions import ConnectionClosedError
    from websockets.frames import Close

    ev = closed_event(None, ConnectionClosedError(Close(1013, "try again later"), None))  # type: ignore[arg-type]
    assert ev.kind == "rate_limited"  # type: ignore[union-attr]
    other = closed_event(None, ConnectionClosedError(Close(1011, "boom"), None))  # type: ignore[arg-type]
    assert other.kind == "agent_error"  # type: ignore[union-attr]


def test_a_ledger_line_validates_against_the_written_usage_schema() -> None:
    import jsonschema

    from voice_audit.harness.schemas import schema_documents

    schema = schema_documents()["usage"]
    jsonschema.validate(json.loads(_usage(CALLER + USAGE).model_dump_json()), schema)
    bad = json.loads(_usage(CALLER).model_dump_json())
    bad["items"][0]["quantity"] = -1
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)
