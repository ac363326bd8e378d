"""The LLM agent's dialogue on text, with a scripted chat backend standing in for the model: the
rules that live in code (verify before any remedy, identity values only from the caller's words),
the step protocol, and the requests it sends (deterministic, the schema offers only allowed tools)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from voice_audit.agents.reference._llm_policy import (
    REMEDY_TOOLS,
    LLMConfig,
    LLMPolicy,
    parse_step,
    spoken,
    system_prompt,
)
from voice_audit.agents.reference._policy import Hangup, Heard, SayStep, StateStep, Step, ToolStep
from voice_audit.harness.llm import ChatRequest, ChatResponse, ToolCall, Usage
from voice_audit.harness.tools import ToolFixture
from voice_audit.scenarios import BUNDLED_LIBRARY, Facts, load_scenario_file


def facts(scenario: str = "refund_duplicate_charge") -> Facts:
    return load_scenario_file(Path(BUNDLED_LIBRARY) / f"{scenario}.yaml").facts


class Scripted:
    """Answers each request with the next scripted step and keeps every request it got."""

    name = "scripted"

    def __init__(self, steps: Sequence[dict[str, Any] | ChatResponse]) -> None:
        self.steps = list(steps)
        self.requests: list[ChatRequest] = []

    async def chat(self, req: ChatRequest) -> ChatResponse:
        self.requests.append(req)
        step = self.steps.pop(0) if self.steps else {"action": "reply", "arguments": {}, "say": "Okay."}
        return step if isinstance(step, ChatResponse) else ChatResponse(content=json.dumps(step))


def policy(
    steps: Sequence[dict[str, Any] | ChatResponse], scenario: str = "refund_duplicate_charge", **kw: Any
) -> tuple[LLMPolicy, Scripted, ToolFixture]:
    f = facts(scenario)
    tools = ToolFixture(f)
    client = Scripted(steps)
    p = LLMPolicy(f, tools, client, LLMConfig(seed=7), **kw)
    p.greet()
    return p, client, tools


def tools_of(steps: list[Step]) -> list[tuple[str, bool]]:
    return [(s.name, s.outcome.ok) for s in steps if isinstance(s, ToolStep)]


def said(steps: list[Step]) -> list[str]:
    return [s.text for s in steps if isinstance(s, SayStep)]


async def test_remedy_tools_are_not_offered_before_verification() -> None:
    p, client, _ = policy([{"action": "reply", "arguments": {}, "say": "What is your full name?"}])
    await p.respond(Heard("I was charged twice.", 0.9))
    enum = client.requests[0].json_schema["properties"]["action"]["enum"]  # type: ignore[index]
    assert not REMEDY_TOOLS & set(enum)
    assert {"verify_identity", "escalate_to_human", "reply", "end_call"} <= set(enum)


async def test_a_refund_asked_for_before_verification_is_refused_in_code() -> None:
    p, _, tools = policy(
        [
            {"action": "issue_refund", "arguments": {"amount": "24.99"}, "say": "Done."},
            {"action": "reply", "arguments": {}, "say": "First, what is your full name?"},
        ]
    )
    steps = await p.respond(Heard("Please refund the duplicate charge.", 0.9))
    refused = [s for s in steps if isinstance(s, ToolStep)]
    assert [(s.name, s.outcome.ok, s.outcome.error) for s in refused] == [
        ("issue_refund", False, "identity_not_verified")
    ]
    assert not [c for c in tools.calls if c[0] == "issue_refund"], (
        "the refused call never reached the fixture"
    )
    assert said(steps) == ["First, what is your full name?"]


async def test_identity_values_come_from_the_callers_words_not_the_model() -> None:
    p, _, _ = policy(
        [
            {"action": "verify_identity", "arguments": {"date_of_birth": "1988-03-04"}, "say": "Thanks."},
            {"action": "reply", "arguments": {}, "say": "Sorry, what is your date of birth?"},
        ]
    )
    steps = await p.respond(Heard("I'm not sure, I would have to check.", 0.9))
    assert tools_of(steps) == [("verify_identity", False)]
    assert not p.verified


async def test_whole_refund_call() -> None:
    p, client, tools = policy(
        [
            {"action": "reply", "arguments": {}, "say": "I can help. What is your full name?"},
            {
                "action": "verify_identity",
                "arguments": {"holder_name": "jordan lee"},
                "say": "Thank you. What is your date of birth?",
            },
            {
                "action": "verify_identity",
                "arguments": {"date_of_birth": "4 March 1988"},
                "say": "You are verified. Shall I refund the duplicate charge?",
            },
            {
                "action": "issue_refund",
                "arguments": {"amount": "24.99"},
                "say": "I have refunded twenty four dollars ninety nine.",
            },
            {"action": "end_call", "arguments": {}, "say": "Goodbye."},
        ]
    )
    turns = [
        "I was charged twice for my subscription.",
        "My name is Jordan Avery Lee.",
        "I was born on the 4th of March 1988.",
        "Yes, please go ahead.",
        "That is all, goodbye.",
    ]
    steps: list[Step] = []
    for text in turns:
        steps += await p.respond(Heard(text, 0.9))
    assert tools_of(steps) == [
        ("verify_identity", True),
        ("verify_identity", True),
        ("issue_refund", True),
    ]
    verify = [s.arguments for s in steps if isinstance(s, ToolStep) and s.name == "verify_identity"]
    assert verify == [{"holder_name": "Jordan Avery Lee"}, {"date_of_birth": "1988-03-04"}]
    assert [s.to_state for s in steps if isinstance(s, StateStep)] == ["verified", "ended"]
    assert isinstance(steps[-1], Hangup) and steps[-1].reason == "completed"
    assert p.ended
    assert "issue_refund" in client.requests[3].json_schema["properties"]["action"]["enum"]  # type: ignore[index]
    assert [c[0] for c in tools.calls] == ["verify_identity", "verify_identity", "issue_refund"]


async def test_model_sees_tool_results_and_the_next_step_replies() -> None:
    p, client, _ = policy(
        [
            {"action": "verify_identity", "arguments": {"holder_name": "x"}, "say": "Thanks."},
            {
                "action": "reply",
                "arguments": {},
                "say": "That name does not match. What is your date of birth?",
            },
        ]
    )
    steps = await p.respond(Heard("My name is Morgan Smith.", 0.9))
    assert tools_of(steps) == [("verify_identity", False)]
    assert said(steps) == ["That name does not match. What is your date of birth?"]
    second = client.requests[1].messages[-2]
    assert second.role == "user" and "[tool verify_identity result]" in (second.content or "")
    assert "holder_name" in (second.content or "") and "Morgan" not in (
        client.requests[1].messages[0].content or ""
    )


async def test_the_models_escalation_hands_off() -> None:
    p, _, _ = policy(
        [
            {
                "action": "escalate_to_human",
                "arguments": {"reason": "frustrated"},
                "say": "Transferring you now.",
            }
        ]
    )
    steps = await p.respond(Heard("This is useless, I have had enough of this.", 0.9))
    assert tools_of(steps) == [("escalate_to_human", True)]
    assert isinstance(steps[-1], Hangup) and steps[-1].reason == "handoff"
    assert p.state == "escalated"


async def test_a_request_for_a_person_is_honoured_in_code() -> None:
    p, client, _ = policy([{"action": "reply", "arguments": {}, "say": "How can I help?"}])
    steps = await p.respond(Heard("Can I speak to a human agent please?", 0.9))
    assert client.requests == []
    assert tools_of(steps) == [("escalate_to_human", True)] and p.state == "escalated"


async def test_unusable_turns_are_reasked_without_the_model() -> None:
    p, client, _ = policy([], max_repairs=2)
    for _ in range(2):
        steps = await p.respond(Heard("", 0.9))
        assert said(steps) and "repeat" in said(steps)[0]
    await p.respond(Heard("mumble", 0.1))
    assert client.requests == []
    assert p.state == "escalated"


async def test_requests_are_deterministic_and_temperature_zero() -> None:
    script = [
        {"action": "reply", "arguments": {}, "say": "What is your full name?"},
        {"action": "verify_identity", "arguments": {"holder_name": "a"}, "say": "Thanks."},
    ]

    async def run() -> str:
        p, client, _ = policy(script)
        await p.respond(Heard("I was charged twice.", 0.9))
        await p.respond(Heard("My name is Jordan Avery Lee.", 0.9))
        assert all(r.temperature == 0.0 and r.seed == 7 for r in client.requests)
        return hashlib.sha256("".join(r.model_dump_json() for r in client.requests).encode()).hexdigest()

    assert await run() == await run()


def test_prompt_never_shows_identity_answers() -> None:
    f = facts()
    for crm in (False, True):
        text = system_prompt(f, ToolFixture(f).available(), crm=crm, required=2)
        acc = f.account
        for secret in (acc.holder_name, acc.date_of_birth.isoformat(), acc.postcode, acc.email, acc.phone):
            assert secret not in text
    assert "24.99" in system_prompt(f, (), crm=False, required=2)
    assert "24.99" not in system_prompt(f, (), crm=True, required=2)


def test_hybrid_reads_the_record_only_after_verification() -> None:
    p, _, _ = policy([], crm=True)
    assert "crm_lookup" not in p.actions()
    p.verified = {"holder_name", "date_of_birth"}
    assert "crm_lookup" in p.actions() and "issue_refund" in p.actions()


@pytest.mark.parametrize(
    ("resp", "action", "args"),
    [
        (ChatResponse(content='{"action": "end_call", "arguments": {}, "say": "Bye."}'), "end_call", {}),
        (
            ChatResponse(
                content='Sure! {"action":"verify_identity","arguments":{"holder_name":"A"},"say":"ok"}'
            ),
            "verify_identity",
            {"holder_name": "A"},
        ),
        (
            ChatResponse(
                content=None, tool_calls=(ToolCall(id="c1", name="issue_refund", arguments={"amount": "1"}),)
            ),
            "issue_refund",
            {"amount": "1"},
        ),
        (ChatResponse(content="just words"), "reply", {}),
    ],
)
def test_parse_step(resp: ChatResponse, action: str, args: dict[str, Any]) -> None:
    step = parse_step(resp, ("verify_identity", "reply", "end_call"))
    assert (step.action, step.arguments) == (action, args)


async def test_local_model_compute_is_counted_per_token() -> None:
    f = facts()
    client = Scripted(
        [
            ChatResponse(
                content='{"action":"reply","arguments":{},"say":"Hi."}',
                usage=Usage(prompt_tokens=100, completion_tokens=10),
            )
        ]
    )
    p = LLMPolicy(f, ToolFixture(f), client, LLMConfig(prompt_ms_per_token=2.0, completion_ms_per_token=10.0))
    p.greet()
    await p.respond(Heard("I was charged twice.", 0.9))
    assert p.take_compute_ms() == 300.0
    assert p.take_compute_ms() == 0.0


def test_a_step_cut_off_by_the_token_budget_is_salvaged_without_reading_json_aloud() -> None:
    cut = '{"action": "reply", "arguments": {}, "say": "Thank you. I am sorry for the trouble. I am sorry for the tr'
    step = parse_step(ChatResponse(content=cut), ("reply",))
    assert (step.action, step.say) == ("reply", "Thank you. I am sorry for the trouble.")
    bare = parse_step(ChatResponse(content='{"action": "verify_identity", "argu'), ("reply",))
    assert (bare.action, bare.say) == ("verify_identity", "")


def test_spoken_drops_repeats_and_long_tails() -> None:
    loop = "I'm sorry. I can help. I'm sorry. I can help. I'm sorry."
    assert spoken(loop) == "I'm sorry. I can help."
    assert spoken("One. Two. Three. Four.") == "One. Two. Three."


async def test_status_guides_the_model_from_the_codes_state() -> None:
    p, client, _ = policy([{"action": "reply", "arguments": {}, "say": "What is your full name?"}])
    await p.respond(Heard("I was charged twice.", 0.9))
    last = client.requests[0].messages[-1]
    assert (
        last.role == "system"
        and "not verified (0 of 2" in (last.content or "")
        and "full name" in (last.content or "")
    )
    assert all(m.role != "system" or "Status" not in (m.content or "") for m in p.messages), (
        "status is not kept in the history"
    )


async def test_cached_prompt_tokens_cost_nothing_on_the_virtual_clock() -> None:
    f = facts()
    usage = Usage(prompt_tokens=700, cached_tokens=650, completion_tokens=20)
    client = Scripted([ChatResponse(content='{"action":"reply","arguments":{},"say":"Hi."}', usage=usage)])
    p = LLMPolicy(f, ToolFixture(f), client, LLMConfig(prompt_ms_per_token=2.0, completion_ms_per_token=10.0))
    p.greet()
    await p.respond(Heard("I was charged twice.", 0.9))
    assert p.take_compute_ms() == 50 * 2.0 + 20 * 10.0


def test_default_model_is_the_15b_and_its_figures_are_used() -> None:
    from voice_audit.harness.llm import PACKAGED

    cfg = LLMConfig()
    assert cfg.model == "qwen2.5-coder-1.5b" and PACKAGED[cfg.model].default
    p = LLMPolicy(facts(), ToolFixture(facts()), Scripted([]), cfg)
    assert p._token_costs == (
        PACKAGED[cfg.model].prompt_ms_per_token,
        PACKAGED[cfg.model].completion_ms_per_token,
    )


def test_step_grammar_offers_only_the_allowed_actions_and_their_own_arguments() -> None:
    from voice_audit.agents.reference._llm_policy import step_grammar

    p, _, _ = policy([])
    g = step_grammar(p.facts, p.actions())
    assert '"verify_identity\\",\\"arguments\\":"' in g and '\\"holder_name\\":' in g
    assert "issue_refund" not in g and "amount" not in g  # not before verification
    p.verified = {"holder_name", "date_of_birth"}
    g = step_grammar(p.facts, p.actions())
    assert '"issue_refund\\",\\"arguments\\":"' in g and '\\"amount\\":' in g
    llama = pytest.importorskip("llama_cpp")
    llama.LlamaGrammar.from_string(g, verbose=False)  # a grammar llama.cpp accepts


async def test_only_local_requests_carry_the_grammar() -> None:
    p, client, _ = policy([{"action": "reply", "arguments": {}, "say": "Your name?"}])
    await p.respond(Heard("I was charged twice.", 0.9))
    assert client.requests[0].grammar is not None and client.requests[0].json_schema is not None
    f = facts()
    remote = Scripted([{"action": "reply", "arguments": {}, "say": "Your name?"}])
    q = LLMPolicy(f, ToolFixture(f), remote, LLMConfig(backend="openai", model="m", base_url="http://x"))
    q.greet()
    await q.respond(Heard("I was charged twice.", 0.9))
    assert remote.requests[0].grammar is None and remote.requests[0].json_schema is not None


async def test_hybrid_verifies_the_asked_fact_in_code_then_reads_the_record() -> None:
    p, client, tools = policy(
        [{"action": "reply", "arguments": {}, "say": "Thanks. What is your date of birth?"},
         {"action": "reply", "arguments": {}, "say": "You are verified. I can refund 24.99. Shall I?"}],
        crm=True,
    )  # fmt: skip
    p.last_says = [SayStep("What is your full name?", "question")]
    steps = await p.respond(Heard("Jordan Avery Lee.", 0.9))
    assert tools_of(steps) == [("verify_identity", True)]
    assert tools.calls[0][1] == {"holder_name": "Jordan Avery Lee"}
    # only the asked fact is checked: the year in a date is never read as a zip code
    steps = await p.respond(Heard("It is the fourth of March, nineteen eighty eight.", 0.9))
    assert tools_of(steps) == [("verify_identity", True), ("crm_lookup", True)]
    assert tools.calls[1][1] == {"date_of_birth": "1988-03-04"} and p.identity_ok
    assert any(
        m.content and m.content.startswith("[tool crm_lookup result]") for m in client.requests[-1].messages
    )
    # a turn that answers nothing asked is left to the model
    before = len(tools.calls)
    await p.respond(Heard("When will I see the money on my card?", 0.9))
    assert len(tools.calls) == before


async def test_the_models_exchanges_are_logged(caplog: pytest.LogCaptureFixture) -> None:
    import logging

    caplog.set_level(logging.DEBUG, logger="voice_audit.agents.reference.llm")
    p, _, _ = policy([{"action": "reply", "arguments": {}, "say": "What is your full name?"}])
    await p.respond(Heard("I was charged twice.", 0.9))
    logged = [r.getMessage() for r in caplog.records]
    assert any("request 1:" in m and "I was charged twice." in m and "Account ACC-40817" in m for m in logged)
    assert any("answer 1:" in m and "What is your full name?" in m for m in logged)


async def test_after_unusable_answers_the_status_asks_for_another_fact() -> None:
    ask_dob = {"action": "reply", "arguments": {}, "say": "And your date of birth?"}
    p, client, _ = policy([ask_dob, ask_dob, ask_dob], crm=True)
    p.verified = {"holder_name"}
    p.last_says = [SayStep("And your date of birth?", "question")]
    await p.respond(Heard("I went born on the ID88.", 0.9))  # nothing usable
    assert "date of birth" in (client.requests[-1].messages[-1].content or "")
    await p.respond(Heard("The ID88, I said.", 0.9))
    await p.respond(Heard("Eighty eight.", 0.9))
    status = client.requests[-1].messages[-1].content or ""
    assert "zip code instead" in status, status


async def test_hybrid_runs_the_facts_remedy_in_code_when_the_caller_accepts_its_offer() -> None:
    offer = {
        "action": "reply",
        "arguments": {},
        "say": "I can refund the 24.99 dollars now. Shall I go ahead?",
    }
    p, client, tools = policy([offer], crm=True)
    asked = await p.respond(Heard("Yes please, go ahead.", 0.9))  # not verified: no remedy, the model answers
    assert not [c for c in tools.calls if c[0] == "issue_refund"] and said(asked) == [offer["say"]]
    p.verified = {"holder_name", "date_of_birth"}
    n = len(client.requests)
    steps = await p.respond(Heard("Yes please, go ahead.", 0.9))
    assert len(client.requests) == n, "the consent is handled in code"
    assert [(c[0], c[1]) for c in tools.calls if c[0] == "issue_refund"] == [
        ("issue_refund", {"amount": "24.99"})
    ]
    assert any(isinstance(s, StateStep) and s.to_state == "wrapup" for s in steps)
    p.last_says = [SayStep("I can refund that. Shall I?", "offer")]
    await p.respond(Heard("Yes.", 0.9))  # never twice
    assert len([c for c in tools.calls if c[0] == "issue_refund"]) == 1
