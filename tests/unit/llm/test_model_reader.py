"""The model reader's parsing and the reader selection, over a stand-in chat backend."""

from __future__ import annotations

import json

import pytest

from voice_audit.harness.caller import ACTS, CallerPolicy, RuleReader
from voice_audit.harness.caller.model_reader import (
    EXAMPLES,
    ModelReader,
    ReaderError,
    answer_schema,
    fact_names,
    parse_answer,
)
from voice_audit.harness.caller.readers import Readers, ReaderSet
from voice_audit.harness.llm import ChatRequest, ChatResponse, LLMError
from voice_audit.harness.model.campaign import ModelReaderSpec, ReaderSpec
from voice_audit.scenarios import BUNDLED_LIBRARY, ConfigError, Scenario, ScenarioLibrary


@pytest.fixture(scope="module")
def scenario() -> Scenario:
    return ScenarioLibrary(BUNDLED_LIBRARY).load_all()["refund_duplicate_charge"][1]


class Backend:
    name = "stub"

    def __init__(self, answers: dict[str, str | Exception]) -> None:
        self.answers = answers
        self.requests: list[ChatRequest] = []

    async def chat(self, req: ChatRequest) -> ChatResponse:
        self.requests.append(req)
        text = str(req.messages[-1].content).removeprefix("Agent turn: ")
        ans = self.answers[text]
        if isinstance(ans, Exception):
            raise ans
        return ChatResponse(content=ans)


def test_parse_answer_accepts_only_the_vocabularies() -> None:
    facts = ("holder_name", "postcode")
    assert parse_answer('{"acts": ["repair_request", "challenge"], "facts": ["postcode"]}', facts) == (
        ["repair_request", "challenge"],
        ["postcode"],
    )
    assert parse_answer('noise {"acts": "offer", "facts": []} trailing', facts) == (["offer"], [])
    for bad in ["", "no json", '{"acts": []}', '{"acts": ["dance"], "facts": []}', '{"acts": ["challenge"], "facts": ["pin"]}',
                '{"acts": [1], "facts": []}', "[1, 2]"]:  # fmt: skip
        with pytest.raises(ValueError):
            parse_answer(bad, facts)


def test_request_is_constrained_deterministic_and_blind(scenario: Scenario) -> None:
    reader = ModelReader(Backend({}), seed=7)
    req = reader.request("What is your zip code?", scenario)
    assert req.temperature == 0.0 and req.seed == 7
    assert req.json_schema == answer_schema(fact_names(scenario))
    assert req.json_schema["properties"]["acts"]["items"]["enum"] == list(ACTS)
    prompt = " ".join(str(m.content) for m in req.messages)
    assert "holder_name" in prompt and "postcode" in prompt
    for level in ("accent", "us_general", "l2_spanish", "frustrated", "condition"):
        assert level not in prompt


async def test_reading_keeps_every_act_and_memoises(scenario: Scenario) -> None:
    text = "Sorry, I didn't catch that. What is the full name on the account?"
    backend = Backend({text: json.dumps({"acts": ["repair_request", "challenge"], "facts": ["holder_name"]})})
    reader = ModelReader(backend)
    r = await reader.aread(text, scenario)
    assert r.classification == "repair_request" and r.primary == "repair_request"
    assert r.act_names == ("repair_request", "challenge") and r.challenge_facts == ("holder_name",)
    assert r.reader == "model:stub" and r.rule == "model:stub"
    assert await reader.aread("  " + text + " ", scenario) == r
    assert len(backend.requests) == 1
    assert (await reader.aread("   ", scenario)).classification == "silence"


async def test_unusable_answers_and_endpoint_failures_are_reader_errors(scenario: Scenario) -> None:
    reader = ModelReader(
        Backend({"a": '{"acts": ["dance"], "facts": []}', "b": LLMError("llm_timeout", "slow")})
    )
    with pytest.raises(ReaderError) as exc:
        await reader.aread("a", scenario)
    assert exc.value.kind == "bad_answer"
    with pytest.raises(ReaderError) as exc:
        await reader.aread("b", scenario)
    assert exc.value.kind == "llm_timeout"


async def test_readers_act_on_the_rules_and_log_the_model(scenario: Scenario) -> None:
    text = "Could you confirm your zip code for me?"
    model = ModelReader(
        Backend({text: '{"acts": ["question"], "facts": []}', "x": LLMError("llm_unreachable", "down")})
    )
    readers = Readers(scenario, RuleReader(), model)
    turn = await readers.read(text)
    assert turn.acting == RuleReader().read(text, scenario)
    assert (
        turn.acting_reader == "rules" and turn.other is not None and turn.other.classification == "question"
    )
    fields = turn.event_fields()
    assert fields is not None
    assert (
        fields["reader"] == "model:stub"
        and fields["acting_reader"] == "rules"
        and fields["classification"] == "question"
    )
    failed = await readers.read("x")
    assert failed.other is None and failed.other_error is not None and "llm_unreachable" in failed.other_error
    assert failed.event_fields()["classification"] is None  # type: ignore[index]
    # the model as the acting reader: its failure is the caller's own
    acting_model = Readers(scenario, model, RuleReader())
    assert (await acting_model.read(text)).acting.classification == "question"
    with pytest.raises(ReaderError):
        await acting_model.read("x")
    assert (await Readers(scenario, RuleReader()).read(text)).event_fields() is None


def test_campaign_reader_options() -> None:
    assert ReaderSpec().acting == "rules" and ReaderSpec().model is None
    with pytest.raises(ValueError, match="needs a model reader"):
        ReaderSpec(acting="model")
    with pytest.raises(ValueError, match="base_url"):
        ModelReaderSpec(model="m")
    with pytest.raises(ValueError, match="sha256"):
        ModelReaderSpec(backend="local", model="m", model_path="/x.gguf")
    with pytest.raises(ValueError):
        ModelReaderSpec(model="m", base_url="http://h/v1", api_key_env="not a variable")
    spec = ReaderSpec(model=ModelReaderSpec(model="m", base_url="http://127.0.0.1:1/v1"), acting="model")
    rs = ReaderSet(spec)
    assert rs.model is not None and rs.model.name == "model:openai:m"


async def test_the_policy_decides_on_the_acting_reading(scenario: Scenario) -> None:
    text = "Sure. Could you please confirm the name on the account?"
    model = ModelReader(Backend({text: '{"acts": ["hold"], "facts": []}'}))
    readers = Readers(scenario, model, RuleReader())
    policy = CallerPolicy(scenario, reader=readers.policy_reader)
    turn = await readers.read(text)
    decision = policy.decide(text)
    assert decision.reading == turn.acting and decision.classification == "hold"
    assert turn.other is not None and turn.other.classification == "challenge"
    with pytest.raises(RuntimeError, match="did not read first"):
        policy.decide("an unread turn")


def test_few_shot_examples_use_the_vocabularies(scenario: Scenario) -> None:
    facts = fact_names(scenario)
    for text, acts, asked in EXAMPLES:
        assert text and acts and set(acts) <= set(ACTS) and set(asked) <= set(facts)
    req = ModelReader(Backend({})).request("Anything else?", scenario)
    assert len(req.messages) == 2 + 2 * len(EXAMPLES)
    assert [m.role for m in req.messages[:3]] == ["system", "user", "assistant"]


def test_a_reader_that_cannot_start_is_one_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VOICE_AUDIT_NO_SUCH_KEY", raising=False)
    spec = ReaderSpec(
        model=ModelReaderSpec(
            model="m", base_url="http://127.0.0.1:1/v1", api_key_env="VOICE_AUDIT_NO_SUCH_KEY"
        )
    )
    with pytest.raises(
        ConfigError, match=r"campaign reader\.model: environment variable VOICE_AUDIT_NO_SUCH_KEY"
    ):
        ReaderSet(spec)
    with pytest.raises(ConfigError, match="unknown packaged model"):
        ReaderSet(ReaderSpec(model=ModelReaderSpec(backend="local", model="nope")))
