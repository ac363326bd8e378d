"""What the LLM agent asks its model and how it reads the answer: the system prompt (the case as a
deployment's screen shows it), the JSON step as a schema and as a grammar, and the parser that
salvages a step from a truncated or malformed answer."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from pydantic import Field

from voice_audit.harness.llm import (
    ChatResponse,
)
from voice_audit.harness.tools import TOOL_SCHEMAS, tool_schema
from voice_audit.scenarios import Facts
from voice_audit.scenarios.base import Frozen


def case_text(facts: Facts, *, with_record: bool) -> str:
    """The case as the agent's screen shows it: never the identity answers it must check."""
    acc = facts.account
    lines = [f"Account {acc.account_id}."]
    if with_record:
        lines.append(f"Plan {acc.plan}, {acc.monthly_fee} {acc.currency} a month, standing {acc.standing}.")
        charge = facts.charge
        if charge is not None:
            lines.append(
                f"Charge: {charge.kind}, {charge.amount} {charge.currency} on {charge.date}, {charge.description}."
            )
        for key, value in facts.service.items():
            lines.append(f"{key}: {value}.")
    lines.append(f"Policy {facts.policy.id}: {' '.join(facts.policy.text.split())}")
    eligible = [k for k, v in facts.eligibility.items() if v]
    lines.append("Eligible: " + (", ".join(eligible) if eligible else "nothing") + ".")
    return " ".join(lines)


def crm_text(record: Mapping[str, Any]) -> str:
    return json.dumps(record, sort_keys=True, default=str, separators=(",", ":"))


EXAMPLE = (
    "Example (another caller, another account):\n"
    "Caller: I was charged twice this month.\n"
    'You: {"action":"reply","arguments":{},"say":"I\'m sorry about that, I can help. What is your full name?"}\n'
    "Caller: My name is Sam Park.\n"
    'You: {"action":"verify_identity","arguments":{"holder_name":"Sam Park"},"say":"Thank you. And your date of birth?"}\n'
    "Caller: June second, nineteen eighty.\n"
    'You: {"action":"verify_identity","arguments":{"date_of_birth":"1980-06-02"},"say":"Thank you, you are verified."}\n'
    'You: {"action":"reply","arguments":{},"say":"I can refund the duplicate charge of 10.00 dollars now. Shall I go ahead?"}\n'
    "Caller: Yes please.\n"
    'You: {"action":"issue_refund","arguments":{"amount":"10.00"},"say":"Done, the refund of 10.00 dollars is on its way."}\n'
    "Caller: That's all, thanks.\n"
    'You: {"action":"end_call","arguments":{},"say":"Thank you for calling. Goodbye."}\n'
)
"""One worked call in the system prompt (few-shot; a 1.5B model follows an example far better
than rules). A fictitious caller; it names no condition and no scenario."""


def system_prompt(facts: Facts, tools: tuple[str, ...], *, crm: bool, required: int) -> str:
    tool_lines = "\n".join(f"- {n}: {tool_schema(facts, n)['description']}" for n in tools)
    asks = ", then ".join(("full name", "date of birth", "zip code")[: max(required, 1)])
    return (
        "You are a phone agent for customer care. Answer with one JSON object: action, arguments, say "
        "(one or two short spoken sentences).\n"
        f"1. First verify identity: ask for the {asks}, one at a time; call verify_identity with what the caller said.\n"
        + ("Once verified, call crm_lookup to read the account.\n" if crm else "")
        + "2. Then offer the remedy the policy allows; when the caller agrees, call the remedy tool with the amount.\n"
        "3. If the caller asks for a person, call escalate_to_human. 4. When the caller is done, end_call.\n"
        "Be warm and brief; never say you cannot help.\n"
        f"Tools:\n{tool_lines}\n- reply: only speak.\n- end_call: say goodbye and hang up.\n"
        + EXAMPLE
        + f"Case: {case_text(facts, with_record=not crm)}"
    )


def step_schema(actions: tuple[str, ...]) -> dict[str, Any]:
    props: dict[str, Any] = {}
    for name in actions:
        for key, spec in TOOL_SCHEMAS.get(name, {}).get("parameters", {}).get("properties", {}).items():
            props.setdefault(key, {"type": "string"} if spec.get("type") != "array" else spec)
    return {
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": list(actions)},
            "arguments": {"type": "object", "properties": props},
            "say": {"type": "string"},
        },
        "required": ["action", "arguments", "say"],
    }


SAY_CHARS = 160
"""Longest spoken line the grammar lets the model write (two short sentences)."""


def _gbnf_literal(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def step_grammar(facts: Facts, actions: tuple[str, ...]) -> str:
    """The step as a GBNF grammar for the in-process model: compact JSON (no whitespace, so no
    tokens are spent on layout), `action` one of `actions`, `arguments` only that tool's own
    parameters, `say` at most `SAY_CHARS` characters. Same shape as `step_schema`."""
    rules = [
        'root ::= "{\\"action\\":\\"" step ",\\"say\\":\\"" say "\\"}"',
        'str ::= "\\"" [^"\\\\\\x00-\\x1f]{0,48} "\\""',
        'strs ::= "[" (str ("," str){0,3})? "]"',
        f'say ::= [^"\\\\\\x00-\\x1f]{{0,{SAY_CHARS}}}',
    ]
    alts = []
    for i, name in enumerate(actions):
        props = (
            {}
            if name in ("reply", "end_call")
            else tool_schema(facts, name).get("parameters", {}).get("properties", {})
        )
        pairs = [
            f"{_gbnf_literal(json.dumps(key) + ':')} {'strs' if spec.get('type') == 'array' else 'str'}"
            for key, spec in sorted(props.items())
        ]
        if pairs:
            rules.append(f"pair{i} ::= " + " | ".join(pairs))
            args = f'"{{" (pair{i} ("," pair{i}){{0,{len(pairs) - 1}}})? "}}"'
        else:
            args = '"{}"'
        alts.append(f"{_gbnf_literal(name + chr(34) + ',' + chr(34) + 'arguments' + chr(34) + ':')} {args}")
    rules.insert(1, "step ::= " + " | ".join(alts))
    return "\n".join(rules) + "\n"


class ModelStep(Frozen):
    action: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    say: str = ""


_ACTION = re.compile(r'"action"\s*:\s*"([A-Za-z0-9_-]+)"')
_SAY = re.compile(r'"say"\s*:\s*"((?:[^"\\]|\\.)*)')
_SENTENCE_END = re.compile(r"^(.*[.?!])")


def _salvage(text: str) -> ModelStep:
    """A step cut off by the token budget: its action, and what it says up to the last full
    sentence (never the JSON itself: the agent must not read its protocol aloud)."""
    action = _ACTION.search(text)
    say = _SAY.search(text)
    words = ""
    if say:
        cut = _SENTENCE_END.match(say.group(1).replace('\\"', '"'))
        words = cut.group(1) if cut else ""
    return ModelStep(action=action.group(1) if action else "reply", say=words)


def spoken(text: str, *, max_sentences: int = 3) -> str:
    """What the agent says of a step: repeated sentences dropped (small models loop), at most
    `max_sentences`, as a deployment's output filter before TTS would."""
    seen: list[str] = []
    for sentence in re.split(r"(?<=[.?!])\s+", " ".join(text.split())):
        if sentence and sentence.lower() not in (x.lower() for x in seen):
            seen.append(sentence)
    return " ".join(seen[:max_sentences])


def parse_step(resp: ChatResponse, actions: tuple[str, ...]) -> ModelStep:
    """The model's step; a native tool call counts as one, plain words are a reply."""
    del actions
    if resp.tool_calls:
        call = resp.tool_calls[0]
        return ModelStep(action=call.name, arguments=dict(call.arguments), say=resp.content or "")
    text = (resp.content or "").strip()
    if "{" not in text:
        return ModelStep(action="reply", say=text)
    try:
        data = json.loads(text[text.index("{") : text.rindex("}") + 1])
    except ValueError:
        return _salvage(text)
    if not isinstance(data, dict):
        return _salvage(text)
    args = data.get("arguments") if isinstance(data.get("arguments"), dict) else {}
    return ModelStep(action=str(data.get("action", "reply")), arguments=args, say=str(data.get("say") or ""))
