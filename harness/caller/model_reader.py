"""A second, independent reader of agent turns: a chat model asked which acts a turn performs.

It answers the same question as the rule reader (which dialogue acts, which facts asked for) in
the same `Reading`, so the two compare act by act. The model sees only the agent's words and the
scenario's fact names, never the caller's condition. Its answer is constrained to one JSON object
over the closed act and fact vocabularies (JSON schema or grammar), at temperature 0 with a fixed
seed; an answer outside them is a reader failure, not a guess.
"""

from __future__ import annotations

import asyncio
import json
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, Protocol

from voice_audit.harness.caller.reading import ActHit, Reading, make_reading
from voice_audit.harness.llm import (
    ChatRequest,
    ChatResponse,
    LLMError,
    LocalChatClient,
    Message,
    packaged_model,
)
from voice_audit.harness.model.dialogue_acts import ACT_MEANING, ACTS
from voice_audit.scenarios import Scenario

CACHE_SIZE = 4096

EXAMPLES: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("Hi, thanks for calling, this is Sam. What can I do for you today?", ("greeting", "question"), ()),
    (
        "Sorry, you broke up a bit there. What was the name on the account?",
        ("repair_request", "challenge"),
        ("holder_name",),
    ),
    ("Okay, and just to make sure it's you, what's the zip on file?", ("challenge",), ("postcode",)),
    ("Give me one second while I pull that up.", ("hold",), ()),
    ("I can put that money back on your card right now if that works for you?", ("offer",), ()),
    ("Alright, that's done, you'll see the credit in three to five days.", ("confirmation",), ()),
    ("Unfortunately that's not something we're able to do on this plan.", ("denial",), ()),
    ("I'm afraid there's nobody I can pass you to at the moment.", ("handoff_refused",), ()),
)
"""Few-shot answers, written for this prompt (not taken from any evaluation corpus); their facts
are ones every bundled scenario holds, and an example naming a fact a scenario lacks is dropped."""


class ChatBackend(Protocol):
    name: str

    async def chat(self, req: ChatRequest) -> ChatResponse: ...


class ReaderError(RuntimeError):
    """The model reader could not read a turn (endpoint down, answer outside the vocabulary)."""

    def __init__(self, reader: str, kind: str, message: str) -> None:
        super().__init__(f"{reader}: {message}")
        self.reader = reader
        self.kind = kind


def fact_names(scenario: Scenario, extra: Sequence[str] = ()) -> tuple[str, ...]:
    """The facts a turn may ask for: the scenario's own, then any further names (an ontology)."""
    names = [c.fact for c in scenario.caller.challenges]
    return tuple(dict.fromkeys([*names, *extra]))


def answer_schema(facts: Sequence[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "acts": {
                "type": "array",
                "items": {"type": "string", "enum": list(ACTS)},
                "minItems": 1,
                "maxItems": 3,
            },
            "facts": {"type": "array", "items": {"type": "string", "enum": list(facts)}, "maxItems": 3},
        },
        "required": ["acts", "facts"],
        "additionalProperties": False,
    }


def system_prompt(scenario: Scenario, facts: Sequence[str]) -> str:
    cues = {c.fact: ", ".join(c.cues) for c in scenario.caller.challenges}
    act_lines = "\n".join(f"- {a}: {ACT_MEANING[a]}" for a in ACTS)
    fact_lines = "\n".join(f"- {f}" + (f" (e.g. {cues[f]})" if f in cues else "") for f in facts)
    return (
        "You label one turn of a customer-care agent on a phone call. List every act the turn performs, "
        "most important first, and the personal facts it asks the caller for (only for a challenge).\n"
        f"Acts:\n{act_lines}\nFacts:\n{fact_lines}\n"
        'Answer with one JSON object: {"acts": [...], "facts": [...]}.'
    )


def parse_answer(content: str | None, facts: Sequence[str]) -> tuple[list[str], list[str]]:
    """Acts and facts from the model's JSON; raises ValueError on anything outside the vocabularies."""
    if not content:
        raise ValueError("empty answer")
    start, end = content.find("{"), content.rfind("}")
    if start < 0 or end < start:
        raise ValueError("no JSON object in the answer")
    data = json.loads(content[start : end + 1])
    if not isinstance(data, dict):
        raise ValueError("answer is not an object")
    acts, asked = data.get("acts"), data.get("facts", [])
    if isinstance(acts, str):
        acts = [acts]
    if not isinstance(acts, list) or not acts or not all(isinstance(a, str) for a in acts):
        raise ValueError("acts must be a non-empty list of names")
    if not isinstance(asked, list) or not all(isinstance(f, str) for f in asked):
        raise ValueError("facts must be a list of names")
    bad = [a for a in acts if a not in ACTS] + [f for f in asked if f not in facts]
    if bad:
        raise ValueError(f"outside the vocabulary: {', '.join(bad)}")
    return list(dict.fromkeys(acts)), list(dict.fromkeys(asked))


class ModelReader:
    """Reads turns through any chat backend; readings are memoised per (scenario, text)."""

    def __init__(
        self,
        backend: ChatBackend,
        *,
        seed: int = 0,
        max_tokens: int = 96,
        extra_facts: Sequence[str] = (),
        examples: Sequence[tuple[str, Sequence[str], Sequence[str]]] = EXAMPLES,
    ) -> None:
        self.backend = backend
        self.name = f"model:{backend.name}"
        self.seed = seed
        self.max_tokens = max_tokens
        self.extra_facts = tuple(extra_facts)
        self.examples = tuple((t, tuple(a), tuple(f)) for t, a, f in examples)
        self._cache: OrderedDict[tuple[str, str], Reading] = OrderedDict()

    def request(self, text: str, scenario: Scenario) -> ChatRequest:
        facts = fact_names(scenario, self.extra_facts)
        messages = [Message(role="system", content=system_prompt(scenario, facts))]
        for ex_text, ex_acts, ex_facts in self.examples:
            if not set(ex_facts) <= set(facts):
                continue
            messages.append(Message(role="user", content=f"Agent turn: {ex_text}"))
            messages.append(
                Message(
                    role="assistant", content=json.dumps({"acts": list(ex_acts), "facts": list(ex_facts)})
                )
            )
        messages.append(Message(role="user", content=f"Agent turn: {text}"))
        return ChatRequest(
            messages=tuple(messages),
            temperature=0.0,
            seed=self.seed,
            max_tokens=self.max_tokens,
            json_schema=answer_schema(facts),
            schema_name="turn_reading",
        )

    def _reading(self, text: str, scenario: Scenario, resp: ChatResponse) -> Reading:
        facts = fact_names(scenario, self.extra_facts)
        try:
            acts, asked = parse_answer(resp.content, facts)
        except ValueError as exc:
            raise ReaderError(self.name, "bad_answer", f"unusable answer ({exc})") from None
        rule = self.name
        hits = [ActHit(act=a, rule=rule, facts=tuple(asked) if a == "challenge" else ()) for a in acts]
        return make_reading(text, hits, reader=self.name)

    async def aread(self, text: str, scenario: Scenario) -> Reading:
        clean = " ".join(text.split())
        if not clean:
            return make_reading("", [], reader=self.name)
        key = (scenario.sha256, clean)
        if key in self._cache:
            self._cache.move_to_end(key)
            return self._cache[key]
        try:
            resp = await self.backend.chat(self.request(clean, scenario))
        except LLMError as exc:
            raise ReaderError(self.name, exc.kind, str(exc)) from None
        reading = self._reading(clean, scenario, resp)
        self._cache[key] = reading
        while len(self._cache) > CACHE_SIZE:
            self._cache.popitem(last=False)
        return reading

    async def _read_once(self, text: str, scenario: Scenario) -> Reading:
        try:
            return await self.aread(text, scenario)
        finally:
            await self.close()

    async def close(self) -> None:
        close = getattr(self.backend, "close", None)
        if close is not None:
            await close()

    def read(self, text: str, scenario: Scenario) -> Reading:
        """The `Reader` protocol, for callers without an event loop (benchmarks, notebooks)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self._read_once(text, scenario))
        raise RuntimeError("ModelReader.read blocks; inside an event loop await aread() instead")


def packaged_reader(model: str = "smollm2-135m", threads: int | None = None) -> ModelReader:
    """A model reader on a packaged local model (default: the tiny SmolLM2), e.g. for
    `benchmarks/observer.py --reader voice_audit.harness.caller.model_reader:packaged_reader`."""
    return ModelReader(LocalChatClient(packaged_model(model), n_threads=threads))
