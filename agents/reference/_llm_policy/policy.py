"""The dialogue of the LLM reference agent: a chat model chooses each step, the code keeps the rules.

Per caller turn the model gets the conversation so far (system prompt with the scenario's tools and
the facts a deployment would show it, the caller's words as the recogniser heard them, earlier
steps and tool results) and answers with one JSON step: a tool to call with its arguments, or a
reply, plus the words to say. Tool calls run against the call's `ToolFixture`. Steps are asked for
with a JSON schema (structured output on an endpoint, a grammar in-process), so every backend
speaks the same protocol, and the schema only offers the tools allowed at that point.

What lives in code, because small models skip it (measured): identity is verified before any
remedy tool (the remedy tools are not offered, and refused if called anyway, until
`verify_identity` accepted `required_challenges` facts); tool arguments the caller spoke (dates,
digits) come from the caller's words through the agent's slot parsers; a request for a person is
honoured at once; a turn the recogniser could not use is re-asked without asking the model;
silence and runaway calls end the call. Nothing here, and
nothing in the prompt, depends on the caller's condition.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Mapping
from typing import Any

from voice_audit.agents.app_tools import AppToolFixture
from voice_audit.agents.reference import _nlu as nlu
from voice_audit.agents.reference._llm_policy.client import ChatBackend, LLMConfig, _token_costs
from voice_audit.agents.reference._llm_policy.prompt import (
    ModelStep,
    parse_step,
    spoken,
    step_grammar,
    step_schema,
    system_prompt,
)
from voice_audit.agents.reference._policy import (
    REPAIR,
    SILENCE,
    Hangup,
    Heard,
    SayStep,
    StateStep,
    Step,
    ToolStep,
    listening_vocabulary,
)
from voice_audit.agents.reference._remedy import Remedy, remedy_for
from voice_audit.harness.llm import (
    ChatRequest,
    Message,
)
from voice_audit.harness.tools import ToolFixture, ToolOutcome
from voice_audit.scenarios import Facts

log = logging.getLogger("voice_audit.agents.reference.llm")
"""Every model exchange at DEBUG: the messages new since the last request and the model's answer
(no credential is ever in a message: an endpoint's key lives only in the client's header)."""

GREETING = "Thank you for calling customer care. How can I help you today?"
FALLBACK = "I'm sorry, could you say that again?"
REMEDY_TOOLS = frozenset({"issue_refund", "issue_credit", "change_plan", "open_ticket"})
"""Tools that change the account: never offered or run before identity is verified."""
IDENTITY_FIELDS = ("holder_name", "date_of_birth", "postcode", "email")


class LLMPolicy:
    """One call's conversation, driven by the model, guarded by the code (see the module docstring)."""

    def __init__(
        self,
        facts: Facts,
        tools: ToolFixture,
        client: ChatBackend,
        cfg: LLMConfig,
        *,
        crm: bool = False,
        required_challenges: int = 2,
        max_repairs: int = 3,
        max_silences: int = 3,
        max_turns: int = 30,
        repair_below_confidence: float | None = 0.3,
        contextual_asr: bool = True,
        switch_fact_after: int | None = 1,
    ) -> None:
        self.facts = facts
        self.tools = tools
        self.client = client
        self.cfg = cfg
        self.crm = crm
        self.required = required_challenges
        self.max_repairs = max_repairs
        self.max_silences = max_silences
        self.max_turns = max_turns
        self.repair_below = repair_below_confidence
        self.contextual_asr = contextual_asr
        self.switch_fact_after = switch_fact_after
        self.remedy: Remedy | None = remedy_for(facts) if crm else None
        """The hybrid's remedy, from the facts (never the caller's words): run in code on consent."""
        self.remedied = False
        self.misses: dict[str, int] = {}
        """Answers to an asked identity fact that did not verify it (unheard, unparsed or mismatched)."""
        available = tools.available()
        self.tool_names = tuple(n for n in available if crm or n != "crm_lookup")
        self.remedy_tools = REMEDY_TOOLS | {
            t.name for t in facts.tools if t.realises
        }  # and the scenario's own
        self.messages: list[Message] = [
            Message(
                role="system",
                content=system_prompt(facts, self.tool_names, crm=crm, required=required_challenges),
            )
        ]
        self.state = "start"
        self.turn = 0
        self.verified: set[str] = set()
        self.silences = 0
        self.repairs = 0
        self.last_says: list[SayStep] = []
        self.model_calls = 0
        self.compute_ms = 0.0
        self.usage: dict[str, float] = {}
        """Tokens the model reported since the last `take_usage` (for the run's usage ledger)."""
        self.usage_unknown = False
        self._token_costs = _token_costs(cfg)
        self._logged = 0
        self._tool_n = 0

    @property
    def ended(self) -> bool:
        return self.state in ("ended", "escalated")

    @property
    def identity_ok(self) -> bool:
        return len(self.verified) >= self.required

    def actions(self) -> tuple[str, ...]:
        """What the model may choose now: remedy tools only once identity is verified."""
        tools = [
            n
            for n in self.tool_names
            if self.identity_ok or (n not in self.remedy_tools and n != "crm_lookup")
        ]
        return (*tools, "reply", "end_call")

    def greet(self) -> list[Step]:
        self.state = "listening"
        self.messages.append(
            Message(
                role="assistant", content=json.dumps({"action": "reply", "arguments": {}, "say": GREETING})
            )
        )
        out: list[Step] = [StateStep("start", "listening"), SayStep(GREETING, "greeting")]
        self.last_says = [SayStep(GREETING, "greeting")]
        return out

    def expecting(self) -> str | None:
        """The identity fact the agent's last spoken line asked for, if any."""
        low = " ".join(s.text for s in self.last_says).lower()
        return next(
            (
                f
                for f, w in (
                    ("holder_name", "name"),
                    ("date_of_birth", "birth"),
                    ("postcode", "zip"),
                    ("email", "email"),
                )
                if w in low
            ),
            None,
        )

    def listening_context(self) -> str | None:
        if not self.contextual_asr:
            return None
        last = " ".join(s.text for s in self.last_says)
        return " ".join(p for p in (listening_vocabulary(self.facts, self.expecting()), last) if p)

    async def respond(
        self, heard: Heard, detected: Mapping[str, str] | None = None, *, asks_for_human: bool | None = None
    ) -> list[Step]:
        """One caller turn. `detected` and `asks_for_human` steer planted knobs in the rule agents;
        this agent has none, so it ignores them."""
        del detected, asks_for_human
        if self.ended:
            return []
        self.turn += 1
        out: list[Step] = []
        if self.turn > self.max_turns:
            await self._transfer(
                out, "max_turns", "I'm sorry this is taking so long. I'm transferring you to a colleague."
            )
            return self._finish(out)
        if not heard.speech:
            self.silences += 1
            if self.silences >= self.max_silences:
                out.append(SayStep("I can't hear anything, so I will end the call now. Goodbye.", "closing"))
                self._end(out, "silence_timeout")
            else:
                out.append(SayStep(SILENCE, "repair_request"))
            return self._finish(out)
        self.silences = 0
        text = heard.text.strip()
        low_conf = (
            heard.confidence is not None
            and self.repair_below is not None
            and heard.confidence < self.repair_below
        )
        if heard.noise or nlu.understand(text).empty or low_conf:
            self.repairs += 1
            if self.repairs > self.max_repairs:
                await self._transfer(
                    out,
                    "repairs",
                    "I'm sorry, I'm having trouble hearing you. I'm transferring you to a colleague.",
                )
            else:
                out.append(SayStep(REPAIR, "repair_request"))
            return self._finish(out)
        self.repairs = 0
        self.messages.append(Message(role="user", content=text))
        if nlu.understand(text).has("human"):
            await self._transfer(
                out, "caller_request", "Of course. I'm transferring you to a human agent now."
            )
            return self._finish(out)
        asked = self.expecting()
        if self.crm:
            await self._code_steps(out, text)
            if self._consented(text):
                await self._run_remedy(out, caller_text=text)
                return self._finish(out)
        await self._steps(out, text)
        if asked is not None and asked not in self.verified and not self.identity_ok:
            self.misses[asked] = self.misses.get(asked, 0) + 1
        return self._finish(out)

    # ---- the hybrid's code steps ----

    async def _code_steps(self, out: list[Step], caller_text: str) -> None:
        """What the hybrid runs in code before asking the model (a deployment's slot-filling flow
        beside the model): the identity fact the agent just asked for (or a name the caller
        offers) goes to `verify_identity` from the caller's words, and once verified the account is
        read with `crm_lookup`. Each call and result is in the
        model's messages, as its own tool calls are."""
        if not self.identity_ok:
            asked = self.expecting()
            said_name = "name" in caller_text.lower()
            wanted = [
                k
                for k in IDENTITY_FIELDS
                if k not in self.verified and (k == asked or (k == "holder_name" and said_name))
            ]
            args = self._identity_args({k: "?" for k in wanted}, caller_text) if wanted else {}
            if args:
                await self._code_tool(out, "verify_identity", args, caller_text)
        if self.identity_ok and not any(c[0] == "crm_lookup" for c in self.tools.calls):
            await self._code_tool(
                out, "crm_lookup", {"account_id": self.facts.account.account_id}, caller_text
            )

    def _consented(self, caller_text: str) -> bool:
        """The caller said yes to the agent's own offer of this case's remedy (a question naming it)."""
        r = self.remedy
        if r is None or not r.eligible or self.remedied or not self.identity_ok:
            return False
        last = " ".join(s.text for s in self.last_says)
        u = nlu.understand(caller_text)
        stems = {*r.kind.split("_"), *(name.split("_")[-1] for name, _ in r.actions)}
        names_it = r.named_in(last) or any(re.search(rf"\b{re.escape(w)}", last.lower()) for w in stems)
        return "?" in last and names_it and u.has("yes") and not u.has("no")

    async def _run_remedy(self, out: list[Step], caller_text: str) -> None:
        """The remedy the facts allow, its tools and arguments from the facts, then its confirmation."""
        r = self.remedy
        assert r is not None
        self.remedied = True
        for name, args in r.actions:
            step = ModelStep(action=name, arguments=dict(args))
            self.messages.append(Message(role="assistant", content=step.model_dump_json()))
            outcome = await self._run_tool(out, step, caller_text)
            self._tool_result(name, outcome)
            if not outcome.ok:
                await self._transfer(
                    out,
                    "tool_failure",
                    "I'm sorry, I wasn't able to complete that. I'm transferring you to a colleague.",
                )
                return
        done = ModelStep(action="reply", say=f"{r.done} Is there anything else I can help you with?")
        self.messages.append(Message(role="assistant", content=done.model_dump_json()))
        out.append(SayStep(r.done, "confirmation"))
        self._to(out, "wrapup", r.done_flags)
        out.append(SayStep("Is there anything else I can help you with?", "closing"))

    async def _code_tool(self, out: list[Step], name: str, args: dict[str, Any], caller_text: str) -> None:
        step = ModelStep(action=name, arguments=args)
        self.messages.append(Message(role="assistant", content=step.model_dump_json()))
        outcome = await self._run_tool(out, step, caller_text)
        self._tool_result(name, outcome)

    def _tool_result(self, name: str, outcome: ToolOutcome) -> None:
        result = {"ok": outcome.ok, "error": outcome.error, **_visible(name, outcome)}
        self.messages.append(
            Message(
                role="user", content=f"[tool {name} result] {json.dumps(result, sort_keys=True, default=str)}"
            )
        )

    # ---- model steps ----

    def status(self) -> str:
        """Where the call stands, from the code's own state, shown to the model before each step
        (a deployment's dialogue state in the prompt): it guides, the guards still decide."""
        if not self.identity_ok:
            left = [f for f in ("holder_name", "date_of_birth", "postcode") if f not in self.verified]
            limit = self.switch_fact_after
            fresh = [f for f in left if limit is None or self.misses.get(f, 0) <= limit]
            fact = (fresh or sorted(left, key=lambda f: self.misses.get(f, 0)))[0]
            ask = {"holder_name": "full name", "date_of_birth": "date of birth", "postcode": "zip code"}[fact]
            instead = " instead (the earlier answers could not be used)" if fact != left[0] else ""
            return (f"Status: identity not verified ({len(self.verified)} of {self.required} checks). "
                    f"Ask for the caller's {ask}{instead}; when they say it, call verify_identity.")  # fmt: skip
        first = (
            " Call crm_lookup first."
            if self.crm and not any(c[0] == "crm_lookup" for c in self.tools.calls)
            else ""
        )
        return ("Status: identity verified." + first + " Offer what the policy allows and ask for consent; "
                "when the caller agrees, call the remedy tool. When they are done, end_call.")  # fmt: skip

    async def _ask(self, actions: tuple[str, ...]) -> ModelStep:
        req = ChatRequest(
            messages=(*self.messages, Message(role="system", content=self.status())),
            temperature=self.cfg.temperature,
            seed=self.cfg.seed,
            max_tokens=self.cfg.max_tokens,
            json_schema=step_schema(actions),
            schema_name="agent_step",
            grammar=step_grammar(self.facts, actions) if self.cfg.backend == "local" else None,
        )
        self.model_calls += 1
        if log.isEnabledFor(logging.DEBUG):
            new = [m.model_dump(exclude_defaults=True) for m in req.messages[self._logged :]]
            log.debug("llm %s request %d: %s", self.cfg.label, self.model_calls, json.dumps(new, default=str))
        self._logged = len(self.messages)
        if (
            self.cfg.backend == "local"
        ):  # a worker thread cannot be cancelled: waiting is the only honest choice
            resp = await self.client.chat(req)
        else:
            resp = await asyncio.wait_for(self.client.chat(req), self.cfg.timeout_s)
        if resp.usage.reported:
            u = resp.usage
            for meter, n in (
                ("input_tokens", u.prompt_tokens),
                ("output_tokens", u.completion_tokens),
                ("cached_input_tokens", u.cached_tokens),
            ):
                self.usage[meter] = self.usage.get(meter, 0.0) + n
        else:
            self.usage_unknown = True
        if self.cfg.backend == "local":
            u = resp.usage
            prompt_ms, completion_ms = self._token_costs
            self.compute_ms += (
                u.prompt_tokens - u.cached_tokens
            ) * prompt_ms + u.completion_tokens * completion_ms
        else:
            self.compute_ms += resp.elapsed_ms
        log.debug("llm %s answer %d: %s", self.cfg.label, self.model_calls, resp.content)
        return parse_step(resp, actions)

    def take_usage(self) -> tuple[dict[str, float], tuple[str, ...]] | None:
        """Tokens since the last call and the meters an answer left unreported, for a `UsageOut`;
        None when there is nothing to say. Once an answer came without usage, the call's tokens
        are unknown (never the sum of the answers that had it)."""
        usage, self.usage = self.usage, {}
        unknown = ("input_tokens", "output_tokens", "cached_input_tokens") if self.usage_unknown else ()
        if not usage and not unknown:
            return None
        return usage, unknown

    def take_compute_ms(self) -> float:
        """Model compute since the last call (added to the turn's `TurnEnd.compute_ms`)."""
        ms, self.compute_ms = self.compute_ms, 0.0
        return ms

    async def _steps(self, out: list[Step], caller_text: str) -> None:
        for _ in range(self.cfg.max_steps):
            actions = self.actions()
            step = await self._ask(actions)
            self.messages.append(Message(role="assistant", content=step.model_dump_json()))
            say = spoken(step.say)
            if step.action == "end_call":
                out.append(SayStep(say or "Thank you for calling. Goodbye.", "closing"))
                self._end(out, "completed")
                return
            if step.action == "reply" or step.action not in self.tool_names:
                out.append(SayStep(say or FALLBACK, "question"))
                return
            outcome = await self._run_tool(out, step, caller_text)
            self._tool_result(step.action, outcome)
            if step.action == "escalate_to_human" and outcome.ok:
                out.append(SayStep(say or "I'm transferring you to a human agent now.", "handoff"))
                self._to(out, "escalated", ("escalation:model",))
                out.append(Hangup("handoff"))
                return
            if outcome.ok and say and step.action not in ("crm_lookup", "policy_lookup", "outage_status"):
                out.append(SayStep(say, "other"))
                return
        out.append(SayStep(FALLBACK, "repair_request"))

    async def _run_tool(self, out: list[Step], step: ModelStep, caller_text: str) -> ToolOutcome:
        name = step.action
        args = dict(step.arguments)
        if (name in self.remedy_tools and not self.identity_ok) or (
            name == "crm_lookup" and not self.identity_ok
        ):
            outcome = ToolOutcome(False, {}, "identity_not_verified")
        elif name not in self.tool_names:
            outcome = ToolOutcome(False, {}, "permission_denied")
        else:
            if name == "verify_identity":
                args = self._identity_args(args, caller_text)
            outcome = await self._call(name, args)
        self._tool_n += 1
        out.append(ToolStep(f"tc-{self._tool_n}", name, args, outcome))
        if name == "verify_identity" and outcome.ok:
            before = self.identity_ok
            self.verified |= {k for k in outcome.result.get("checked", ())}
            if self.identity_ok and not before:
                self._to(out, "verified", ("identity_verified",))
        return outcome

    def _identity_args(self, args: dict[str, Any], caller_text: str) -> dict[str, Any]:
        """Identity answers from the caller's own words, through the agent's slot parsers; the
        model's arguments only say which facts to check (a small model invents values, and an
        invented value must never verify anyone). A matched answer is submitted in the record's
        spelling, as an agent reading the screen would; a fact the caller did not say is dropped."""
        acc = self.facts.account
        asked = [k for k in IDENTITY_FIELDS if str(args.get(k) or "").strip()] or list(IDENTITY_FIELDS)
        fixed: dict[str, Any] = {}
        for key in asked:
            if key == "date_of_birth":
                day = nlu.parse_dob(caller_text)
                if day is not None:
                    fixed[key] = day.isoformat()
            elif key == "holder_name":
                name = nlu.parse_name(caller_text) if "name" in caller_text.lower() or key in args else None
                if name:
                    fixed[key] = acc.holder_name if nlu.name_matches(name, acc.holder_name) else name
            elif key == "postcode":
                code = nlu.parse_postcode(caller_text)
                if code:
                    fixed[key] = acc.postcode if nlu.postcode_matches(code, acc.postcode) else code
            else:
                email = nlu.parse_email_slot(caller_text)
                if email:
                    fixed[key] = acc.email if nlu.email_matches(email, acc.email) else email
        return fixed

    # ---- endings ----

    def _to(self, out: list[Step], state: str, flags: tuple[str, ...] = ()) -> None:
        out.append(StateStep(self.state, state, flags))
        self.state = state

    def _end(self, out: list[Step], reason: str) -> None:
        self._to(out, "ended", (reason,))
        out.append(Hangup(reason))

    async def _call(self, name: str, args: dict[str, Any]) -> ToolOutcome:
        """Run a tool: on the call's fixture, or, served to an app that runs it, the app's answer
        (`voice_audit.agents.app_tools`), awaited here on the event loop."""
        if isinstance(self.tools, AppToolFixture):
            return await self.tools.acall(name, args)
        return self.tools.call(name, args)

    async def _transfer(self, out: list[Step], reason: str, line: str) -> None:
        self._tool_n += 1
        outcome = await self._call("escalate_to_human", {"reason": reason})
        out.append(ToolStep(f"tc-{self._tool_n}", "escalate_to_human", {"reason": reason}, outcome))
        out.append(SayStep(line, "handoff"))
        self._to(out, "escalated", (f"escalation:{reason}",))
        out.append(Hangup("handoff"))

    def _finish(self, out: list[Step]) -> list[Step]:
        says = [s for s in out if isinstance(s, SayStep)]
        if says:
            self.last_says = says
        return out


def _visible(name: str, outcome: ToolOutcome) -> dict[str, Any]:
    """The result the model reads: what the tool returned (verification says only what mismatched)."""
    if name == "verify_identity":
        return {"mismatched": outcome.result.get("mismatched", [])}
    if name == "policy_lookup":
        return {"policy_id": outcome.result.get("policy_id")}
    return dict(outcome.result)
