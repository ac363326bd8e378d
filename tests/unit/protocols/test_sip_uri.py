"""The pure parts of the SIP adapter: target URIs, what may go in a request, what a failure means."""

from __future__ import annotations

import json

import numpy as np
import pytest

from voice_audit.agents.protocols.sip import (
    SpeechGate,
    _bye_event,
    sip_adapter,
)
from voice_audit.agents.protocols.sip_uri import (
    check_headers,
    check_identity,
    condition_words,
    failure_for_status,
    parse_target,
    target_problem,
)
from voice_audit.agents.protocols.sip_wire import (
    CALL_ID_HEADER,
    FACTS_HEADER,
    facts_headers,
    read_facts_header,
)
from voice_audit.harness.adapter import AgentError, CallInfo, ErrorOut, HangupOut
from voice_audit.harness.disclosure import disclose
from voice_audit.harness.model.campaign import AgentSpec
from voice_audit.harness.model.failures import FAILURE_SIDE, non_service_flag
from voice_audit.scenarios import BUNDLED_LIBRARY, ScenarioLibrary, canonical_json


def test_targets_parse_and_rebuild() -> None:
    t = parse_target("sip:bot@127.0.0.1:5070;transport=tcp")
    assert (t.user, t.host, t.port, t.transport) == ("bot", "127.0.0.1", 5070, "tcp")
    assert t.uri == "sip:bot@127.0.0.1:5070;transport=tcp"
    assert parse_target("sip:+15550100@pbx.example.com").uri == "sip:+15550100@pbx.example.com;transport=udp"
    assert parse_target("SIP:agent@[::1]:5060").address == ("::1", 5060)
    assert parse_target("sip:example.org").address == ("example.org", 5060)


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://127.0.0.1:5060", "sip:user@host"),
        ("sips:bot@127.0.0.1", "TLS"),
        ("sip:bot@127.0.0.1;transport=tls", "tls"),
        ("sip:bot@127.0.0.1;transport=sctp", "udp or tcp"),
        ("sip://bot@127.0.0.1", "no '//'"),
        ("sip:bot:secret@127.0.0.1", "password"),
        ("sip:bot@127.0.0.1:0", "out of range"),
        ("sip:bot@127.0.0.1:99999", "out of range"),
        ("sip:bot@127.0.0.1:50x", "invalid port"),
        ("sip:bot@", "no host"),
        ("sip:bot@127.0.0.1?X-Accent=gb", "headers in the URI"),
        ("sip:bot@127.0.0.1;lr", "not accepted"),
        ("sip:b ot@127.0.0.1", "invalid user"),
    ],
)
def test_bad_targets_say_why(url: str, why: str) -> None:
    problem = target_problem(url)
    assert problem is not None and why in problem
    assert sip_adapter.url_problem(url) == problem


def test_extra_headers_are_checked() -> None:
    words = condition_words()
    assert {"accent", "gb_rp", "frustrated", "female_older"} <= words
    ok = check_headers({"X-Tenant": "acme-support", "User-Agent": "audit/1"}, words)
    assert ok == {"X-Tenant": "acme-support", "User-Agent": "audit/1"}
    for headers, why in (
        ({"X-Accent": "x"}, "accent"),
        ({"X-Tag": "caller is frustrated"}, "frustrated"),
        ({"X-Tag": "gb_rp"}, "gb_rp"),
        ({"X-Persona": "b"}, "persona"),
        ({"From": "sip:x@y"}, "written by the SIP stack"),
        ({CALL_ID_HEADER: "x"}, "written by the SIP stack"),
        ({"Call-ID": "x"}, "written by the SIP stack"),
        ({"X-Bad Name": "x"}, "not a SIP token"),
        ({"X-Tag": "a\r\nX-Injected: 1"}, "one printable line"),
    ):
        with pytest.raises(ValueError, match=why):
            check_headers(headers, words)


def test_caller_identity_is_checked() -> None:
    words = condition_words()
    check_identity("+15550100000", "Audit Caller", words)
    with pytest.raises(ValueError, match="older"):
        check_identity("+15550100000", "Older caller", words | {"older"})
    with pytest.raises(ValueError, match="user part"):
        check_identity("bad user", "", words)
    with pytest.raises(ValueError, match="display_name"):
        check_identity("+1555", 'x" <sip:evil>', words)


def test_adapter_refuses_bad_options() -> None:
    pytest.importorskip("pjsua2")  # the adapter refuses to exist without its stack

    def build(**options: object) -> None:
        sip_adapter(AgentSpec(name="a", adapter="sip", url="sip:bot@127.0.0.1:5060", options=options))

    build(headers={"X-Tenant": "acme"}, display_name="Audit")
    for options, why in (
        ({"headers": {"X-Affect": "calm"}}, "caller condition"),
        ({"auth_username_env": "U"}, "both"),
        ({"dtmf": "inband"}, "rfc4733 or info"),
        ({"password": "x"}, "unknown sip option"),
    ):
        with pytest.raises(AgentError, match=why):
            build(**options)
    with pytest.raises(AgentError, match="sip:"):
        sip_adapter(AgentSpec(name="a", adapter="sip", url="ws://127.0.0.1:1"))


@pytest.mark.parametrize(
    ("code", "kind", "words"),
    [
        (486, "connect_failed", "busy"),
        (600, "connect_failed", "busy"),
        (480, "connect_failed", "unavailable"),
        (404, "connect_failed", "not found"),
        (410, "connect_failed", "unavailable"),
        (408, "connect_failed", "no answer"),
        (503, "rate_limited", "service unavailable"),
        (500, "agent_error", "server error"),
        (488, "protocol_error", "no common codec"),
        (403, "harness_error", "authentication refused"),
    ],
)
def test_final_responses_map_to_kinds(code: int, kind: str, words: str) -> None:
    got, message = failure_for_status(code, "Reason", credentials=False)
    assert got == kind and words in message and str(code) in message


def test_sides_of_sip_failures() -> None:
    """Busy, unavailable, unanswered or failing agents did not serve the caller (an outcome);
    refused credentials are the harness's configuration (missing data)."""
    for code in (486, 480, 404, 408, 500):
        kind, _ = failure_for_status(code, "", credentials=False)
        assert FAILURE_SIDE[kind] == "agent" and non_service_flag(kind) is not None
    assert failure_for_status(401, "Unauthorized", credentials=True)[1].startswith("authentication refused")
    assert "auth_username_env" in failure_for_status(407, "Proxy Auth", credentials=False)[1]
    assert FAILURE_SIDE[failure_for_status(401, "", credentials=True)[0]] == "harness"
    timeout = failure_for_status(408, "Request Timeout", credentials=False, local=True)
    assert timeout == (
        "connect_failed",
        "transaction timeout: nothing answered the INVITE (SIP 408 Request Timeout)",
    )
    assert failure_for_status(503, "Connection refused", credentials=False, local=True)[0] == "connect_failed"
    kind, message = failure_for_status(487, "Request Terminated", credentials=False, answer_timeout=True)
    assert kind == "connect_failed" and message.startswith("no answer")


def test_agent_bye_is_a_hang_up_unless_its_reason_says_5xx() -> None:
    assert isinstance(_bye_event(""), HangupOut)
    assert isinstance(_bye_event("Q.850;cause=16"), HangupOut)
    err = _bye_event('SIP ;cause=500 ;text="agent error"')
    assert isinstance(err, ErrorOut) and err.kind == "agent_error"


def test_disclosed_facts_travel_in_headers() -> None:
    sc = ScenarioLibrary(BUNDLED_LIBRARY).load_all()["refund_duplicate_charge"][1]
    full = CallInfo(facts=sc.facts, scenario_id=sc.id, disclosure="full")
    h = facts_headers(full)
    assert json.loads(read_facts_header(h[FACTS_HEADER])) == disclose(sc.facts, "full").facts
    assert read_facts_header(h[FACTS_HEADER]).decode() == canonical_json(disclose(sc.facts, "full").facts)
    assert len(h[FACTS_HEADER]) < 1000  # compressed: the INVITE stays a single UDP datagram
    assert h["X-Voice-Audit-Account-Id"] == sc.facts.account.account_id
    ids = facts_headers(CallInfo(facts=sc.facts, scenario_id=sc.id, disclosure="ids"))
    assert set(ids) == {"X-Voice-Audit-Account-Id", "X-Voice-Audit-Policy-Id"}
    assert facts_headers(CallInfo(facts=sc.facts, scenario_id=sc.id, disclosure="none")) == {}
    pytest.importorskip("pjsua2")
    spec = AgentSpec(name="a", adapter="sip", url="sip:bot@127.0.0.1", options={"headers": {"X-Tenant": "t"}})
    sent = sip_adapter(spec).request_headers(full)
    assert sent[CALL_ID_HEADER] == full.call_id and sent["X-Tenant"] == "t"


def test_speech_gate_passes_speech_and_its_tail_only() -> None:
    gate = SpeechGate(-50.0, 60)
    silence = bytes(640)
    hiss = (np.full(320, 20, dtype="<i2")).tobytes()  # about -64 dBFS
    tone = (3000 * np.sin(np.arange(320) / 3)).astype("<i2").tobytes()
    assert [gate(f) for f in (silence, hiss, tone, silence, silence, silence, silence)] == [
        False,
        False,
        True,
        True,
        True,
        True,
        False,
    ]
