"""What of the facts each protocol adapter puts on the wire, for every `facts_disclosure` mode.

The runtime logs `disclose(facts, mode)`; each adapter must send exactly that: the HTTP/WS call
JSON, Twilio's customParameters, the Realtime instructions. Both calls of a pair get the same.
"""

from __future__ import annotations

import json

import pytest

from voice_audit.agents.protocols.event_json import call_from_json, call_to_json
from voice_audit.agents.protocols.realtime import RealtimeAdapter
from voice_audit.agents.protocols.twilio import TwilioAdapter
from voice_audit.agents.serve.realtime_session import FACTS_RE
from voice_audit.harness.adapter import AgentError, CallInfo
from voice_audit.harness.disclosure import disclose, fact_ids
from voice_audit.harness.model.campaign import AgentSpec, Campaign, FactsDisclosure
from voice_audit.scenarios import BUNDLED_LIBRARY, Facts, ScenarioLibrary, sha256_of

MODES: tuple[FactsDisclosure, ...] = ("full", "ids", "none")


def _facts() -> tuple[str, Facts]:
    sc = ScenarioLibrary(BUNDLED_LIBRARY).load_all()["refund_duplicate_charge"][1]
    return sc.id, sc.facts


def _call(mode: FactsDisclosure, call_id: str = "CA" + "1" * 32) -> CallInfo:
    sid, facts = _facts()
    return CallInfo(facts=facts, scenario_id=sid, call_id=call_id, disclosure=mode)


def _personal(facts: Facts) -> list[str]:
    acc = facts.account
    return [acc.postcode, acc.date_of_birth.isoformat(), acc.email, acc.holder_name]


def test_the_default_is_full_and_documented() -> None:
    field = Campaign.model_fields["facts_disclosure"]
    assert field.default == "full"
    assert field.description and all(m in field.description for m in ("`full`", "`ids`", "`none`"))


@pytest.mark.parametrize("mode", MODES)
def test_the_call_json_carries_exactly_the_disclosure(mode: FactsDisclosure) -> None:
    call = _call(mode)
    body = call_to_json(call)
    sent = disclose(call.facts, mode)
    assert body["disclosure"] == mode and body["call_id"] == call.call_id
    assert body["facts"] == sent.facts and body["ids"] == sent.ids
    text = json.dumps(body)
    leaked = [v for v in _personal(call.facts) if v in text]
    if mode == "full":
        assert body["facts_sha256"] == call.facts_sha256 == sha256_of(call.facts)
        assert body["scenario_id"] == call.scenario_id and len(leaked) == 4
    else:
        assert body["facts_sha256"] is None and body["scenario_id"] is None and not leaked
        assert body["ids"] == (fact_ids(call.facts) if mode == "ids" else None)


@pytest.mark.parametrize("mode", MODES)
def test_twilio_custom_parameters_carry_exactly_the_disclosure(mode: FactsDisclosure) -> None:
    call = _call(mode)
    adapter = TwilioAdapter(AgentSpec(name="bot", adapter="twilio", url="ws://127.0.0.1:9/ws"))
    params = adapter._parameters(call)
    leaked = [v for v in _personal(call.facts) if v in json.dumps(params)]
    if mode == "full":
        assert Facts.model_validate_json(params["facts"]) == call.facts and len(leaked) == 4
        assert params["scenario_id"] == call.scenario_id
    else:
        assert "facts" not in params and "scenario_id" not in params and not leaked
    has_ids = {k: params[k] for k in ("account_id", "policy_id") if k in params}
    assert has_ids == (fact_ids(call.facts) if mode != "none" else {})
    assert params["from_number"] == call.caller_number


@pytest.mark.parametrize("mode", MODES)
def test_realtime_instructions_carry_exactly_the_disclosure(mode: FactsDisclosure) -> None:
    call = _call(mode)
    adapter = RealtimeAdapter(
        AgentSpec(name="rt", adapter="realtime", url="ws://127.0.0.1:9", options={"instructions": "Be kind."})
    )
    text = adapter.instructions(call)
    block = FACTS_RE.search(text)
    leaked = [v for v in _personal(call.facts) if v in text]
    if mode == "full":
        assert (
            block is not None and Facts.model_validate_json(block.group(3)) == call.facts and len(leaked) == 4
        )
    elif mode == "ids":
        assert (
            block is None
            and not leaked
            and text.endswith('<call account_id="{}" policy_id="{}"/>'.format(*fact_ids(call.facts).values()))
        )
    else:
        assert text == "Be kind."


def test_both_calls_of_a_pair_get_the_same_disclosure() -> None:
    for mode in MODES:
        a, b = _call(mode, "CA" + "a" * 32), _call(mode, "CA" + "b" * 32)
        da, db = disclose(a.facts, mode), disclose(b.facts, mode)
        assert da.sha256 == db.sha256 and da.fields == db.fields
        strip = [{k: v for k, v in call_to_json(c).items() if k != "call_id"} for c in (a, b)]
        assert strip[0] == strip[1]
    hashes = {disclose(_call(m).facts, m).sha256 for m in MODES}
    assert len(hashes) == 3  # the log tells the modes apart


def test_a_server_without_disclosed_facts_uses_its_own_or_refuses() -> None:
    own = _call("full", "CA" + "f" * 32)
    for mode in ("ids", "none"):
        got = call_from_json(call_to_json(_call(mode)), default=lambda: own)
        assert got.facts == own.facts and got.disclosure == mode and got.call_id == "CA" + "1" * 32
        with pytest.raises(AgentError) as info:
            call_from_json(call_to_json(_call(mode)))
        assert info.value.kind == "protocol_error" and "discloses no facts" in info.value.message
    back = call_from_json(call_to_json(_call("full")))
    assert back.facts_sha256 == _call("full").facts_sha256 and back.disclosure == "full"
    with pytest.raises(AgentError) as bad:
        call_from_json({**call_to_json(_call("full")), "disclosure": "some"})
    assert bad.value.kind == "malformed_frame"


@pytest.mark.parametrize(
    ("adapter", "option"), [(TwilioAdapter, "send_facts"), (RealtimeAdapter, "facts_in_instructions")]
)
def test_replaced_adapter_options_are_refused(adapter: type, option: str) -> None:
    spec = AgentSpec(name="x", adapter="x", url="ws://127.0.0.1:9", options={option: False})
    with pytest.raises(AgentError, match="facts_disclosure"):
        adapter(spec)
