"""The deterministic dialogue policy shared by the three reference agents, on text.

One `DialoguePolicy` per call. It reads what the agent heard (text, ASR confidence, whether the
turn had speech at all) and the condition levels its detector reported, runs tools through the
call's `ToolFixture`, and returns the turn as ordered steps (say, tool, state, hold, hang-up); the
adapters turn steps into harness events and audio. Everything here is testable without audio.

Call flow: greet -> triage (what is the problem) -> verify (name + one more fact by default) ->
resolve (offer the remedy the facts allow) -> wrap-up (anything else?) -> goodbye. At any point:
a request for a human escalates (with the intent flag of the remedy), too many failed repairs or
verification failures escalate, repeated silence times out, and a caller's "could you repeat
that" repeats the last agent turn.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import Field

from agents.reference import _nlu as nlu
from agents.reference._knobs import Knobs, knob_rng
from agents.reference._nlu import Understanding, understand
from agents.reference._remedy import Remedy, remedy_for
from agents.reference._spoken import MONTH_NAMES, DateParts, say_number, say_ordinal
from harness.tools import ToolFixture, ToolOutcome
from scenarios import Facts
from scenarios.base import Frozen, sha256_of

IdentityFact = Literal["holder_name", "date_of_birth", "postcode", "email"]
Act = Literal[
    "greeting", "challenge", "repair", "question", "offer", "confirmation", "denial",
    "handoff", "hold", "closing", "pressure", "info",
]  # fmt: skip

REPAIR = "Sorry, I didn't catch that. Could you repeat that?"
SILENCE = "Sorry, I can't hear anything. Could you repeat that?"
NOISE = "Sorry, there is some noise on the line and I didn't catch that. Could you repeat that?"
HANDOFF = "I'm transferring you to a human agent now."
HOLD = "Please hold while I find someone for you."
REFUSAL = "I'm unable to transfer you to a human agent right now, but I can help you myself."
ANYTHING_ELSE = "Is there anything else I can help you with?"
CHALLENGES: dict[str, str] = {  # worded twice where eSpeak + Whisper garble one form ("date of birth")
    "holder_name": "What is the full name on the account?",
    "date_of_birth": "What is your birthday, your date of birth?",
    "postcode": "What is the postal code, the zip code, on the account?",
    "email": "What is the email address on the account?",
}
GENERIC_CHALLENGE = "For security, could you confirm your identity once more?"


class PolicyConfig(Frozen):
    """Dialogue-policy knobs that are part of an agent's *design* (not planted effects)."""

    challenge_order: tuple[IdentityFact, ...] = Field(
        default=("holder_name", "date_of_birth", "postcode", "email"), min_length=2
    )
    required_challenges: int = Field(default=2, ge=1, le=4)
    repair_below_confidence: float | None = Field(default=0.3, ge=0.0, le=1.0)
    """Ask the caller to repeat when the recogniser's confidence is below this (None: never)."""
    extra_challenge_below_confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    """Hybrid: one more identity challenge when the mean confidence of the accepted identity answers
    is below this. A realistic design choice through which accent turns into Auth burden."""
    max_repairs: int = Field(default=3, ge=1, le=10)
    """Consecutive repair requests before the agent gives up and escalates."""
    max_verification_failures: int = Field(default=3, ge=1, le=10)
    max_silences: int = Field(default=3, ge=1, le=10)
    max_stalled: int = Field(default=3, ge=1, le=10)
    max_turns: int = Field(default=30, ge=4, le=200)
    use_crm: bool = False
    """Read the CRM record after verification (hybrid)."""
    service_lookups: bool = False
    """Run the remedy's read-only lookups (outage status) before offering (hybrid)."""
    memory: bool = False
    """Remember identity facts the caller volunteers before being asked (hybrid)."""
    contextual_asr: bool = True
    """Bias the recogniser per turn with what the agent expects to hear (`listening_context`): the
    line it just said, the scenario's vocabulary and, for identity answers, the account's own
    entities, as deployed agents pass phrase hints from the CRM record the caller's number found."""
    switch_fact_after: int | None = Field(default=1, ge=0, le=10)
    """After this many re-asks of one identity fact that gave nothing usable, ask a different fact
    instead (None: keep re-asking until `max_repairs`)."""
    date_followups: int = Field(default=2, ge=0, le=4)
    """A date of birth heard only in part ("the fifteenth of July", year garbled) is kept, and the
    agent asks for what is missing ("And what year were you born?"), at most this many times per
    fact (0: a partial date is an unusable answer)."""
    confirm_assembled: bool = True
    """Read back a date of birth put together from more than one hearing ("I have July fifteenth,
    nineteen ninety three. Is that your date of birth?"); a complete different date in the reply
    is the caller's correction and replaces it."""
    name_min_ratio: float = Field(default=0.8, ge=0.5, le=1.0)
    postcode_max_edits: int = Field(default=1, ge=0, le=2)
    email_min_ratio: float = Field(default=0.85, ge=0.5, le=1.0)
    seed: int = 0
    knobs: Knobs = Knobs()


@dataclass(frozen=True)
class Heard:
    """One caller turn as the agent perceived it."""

    text: str
    confidence: float | None = None
    speech: bool = True
    noise: bool = False


@dataclass(frozen=True)
class SayStep:
    text: str
    act: Act


@dataclass(frozen=True)
class ToolStep:
    call_id: str
    name: str
    arguments: dict[str, Any]
    outcome: ToolOutcome


@dataclass(frozen=True)
class StateStep:
    from_state: str
    to_state: str
    flags: tuple[str, ...] = ()


@dataclass(frozen=True)
class Hold:
    """Delays what follows by exactly `ms`, the announcement included (dropped when it does not fit)."""

    ms: int
    announcement: str | None = None


@dataclass(frozen=True)
class Hangup:
    reason: str


Step = SayStep | ToolStep | StateStep | Hold | Hangup


@dataclass
class _Memory:
    topics: set[str] = field(default_factory=set)
    request_seen: bool = False
    volunteered: dict[str, str] = field(default_factory=dict)


_DOMAIN = "Customer care: a duplicate charge and a refund, an outage and a credit, my plan, a human agent."
_DIGITS = "Digits: one, two, three, four, five, six, seven, eight, nine, zero."


def _spoken_email(email: str) -> str:
    return email.replace(".", " dot ").replace("@", " at ").replace("_", " underscore ")


def listening_vocabulary(facts: Facts, expecting: str | None) -> str:
    """Phrase hints for one turn: the account's entities while an identity answer is expected
    (name and e-mail, never a digit or date of the record), the scenario's words otherwise."""
    acc = facts.account
    if expecting == "holder_name":
        return f"{acc.holder_name}."
    if expecting == "email":
        return f"{acc.holder_name}, {_spoken_email(acc.email)}."
    if expecting == "postcode":
        return _DIGITS
    if expecting == "date_of_birth":
        return ""
    plans = ", ".join(dict.fromkeys(p for p in (acc.plan, str(facts.service.get("previous_plan", ""))) if p))
    return f"{_DOMAIN} {plans}."


def _say_parts(parts: DateParts) -> str:
    """A date, or the parts of one, in words for the agent's voice: "July fifteenth, nineteen ninety three"."""
    words = []
    if parts.month is not None:
        words.append(
            MONTH_NAMES[parts.month] + (f" {say_ordinal(parts.day)}" if parts.day is not None else "")
        )
    elif parts.day is not None:
        words.append(f"the {say_ordinal(parts.day)}")
    if parts.year is not None:
        y = parts.year
        words.append(
            say_number(y)
            if y % 100 == 0 or 2000 <= y < 2010
            else f"{say_number(y // 100)} {say_number(y % 100)}"
        )
    return ", ".join(words)


def _followup(parts: DateParts) -> str:
    """Ask for the parts of a date of birth still missing, saying what was understood; the
    question ends with the fact's name said twice, as the first challenge does, because the
    caller hears it through eSpeak and a recogniser ("And the year of your birthday, your date of
    birth?" survives where "Which day and month were you born?" came back as "which they have done")."""
    missing = " and ".join(parts.missing)
    return f"I have {_say_parts(parts)}. And the {missing} of your birthday, your date of birth?"


class DialoguePolicy:
    """The conversation state machine of one call."""

    def __init__(self, facts: Facts, tools: ToolFixture, config: PolicyConfig, *, call_id: str = "") -> None:
        self.facts = facts
        self.tools = tools
        self.cfg = config
        self.call_id = call_id
        self.facts_sha256 = sha256_of(facts)
        self.remedy: Remedy | None = remedy_for(facts)
        self.state = "start"
        self.turn = 0
        self.detected: dict[str, str] = {}
        self.memory = _Memory()
        self.verified: list[str] = []
        self.failed: list[str] = []
        self.challenge: str | None = None
        self.challenges_asked: list[str] = []
        self.unparsed: dict[str, int] = {}
        self.date_parts = DateParts()
        self.date_hearings = 0
        self.date_followups = 0
        self.confirming: DateParts | None = None
        self.identity_confidences: list[float] = []
        self.extra_needed = 0
        self._extra_decided = False
        self.planted_challenges_left = 0
        self.planted_challenge: str | None = None
        self.human_asked = False
        self.consecutive_repairs = 0
        self.repairs_requested = 0
        self.planted_repairs_left: int | None = None
        self.verification_failures = 0
        self.silences = 0
        self.stalled = 0
        self.wrapup_turns = 0
        self.pressure_said = False
        self.handoff_delay_left: int | None = None
        self.handoff_reason = ""
        self.handoff_planted = False
        self.handoff_refusals = 0
        self.policy_id: str | None = None
        self.last_says: list[SayStep] = []
        self._tool_n = 0

    # ---- public ----

    @property
    def ended(self) -> bool:
        return self.state in ("ended", "escalated")

    def greet(self) -> list[Step]:
        out: list[Step] = [StateStep("start", "triage")]
        self.state = "triage"
        self._say(out, "Thank you for calling customer care. How can I help you today?", "greeting")
        return self._finish(out)

    def respond(
        self, heard: Heard, detected: Mapping[str, str] | None = None, *, asks_for_human: bool | None = None
    ) -> list[Step]:
        """One caller turn. `asks_for_human`: the detector's verdict on the caller's act (calibration
        oracle), None when it cannot tell; it only ever steers planted knobs, never the design."""
        if self.ended:
            return []
        self.turn += 1
        for axis, level in (detected or {}).items():
            self.detected.setdefault(axis, level)
        out: list[Step] = []
        if self.turn > self.cfg.max_turns:
            self._say(out, "I'm sorry this is taking so long.", "info")
            self._escalate(out, "max_turns")
            return self._finish(out)
        if not heard.speech:
            self._silence(out)
            return self._finish(out)
        self.silences = 0
        u = understand(heard.text)
        asked = asks_for_human if asks_for_human is not None else u.has("human")
        self.human_asked = self.human_asked or asked
        if self._planted_loop(out):
            return self._finish(out)
        if self.planted_challenge is not None and not asked:
            self._planted_answer(out)
            return self._finish(out)
        if heard.noise:
            self._repair(out, NOISE)
            return self._finish(out)
        self._remember(u)
        if self.handoff_delay_left is not None:
            self._continue_handoff(out)
            return self._finish(out)
        if u.has("human"):
            self._escalate(out, "caller_request")
            return self._finish(out)
        if self._planted_repair(out):
            return self._finish(out)
        low = self.cfg.repair_below_confidence
        if u.empty or (heard.confidence is not None and low is not None and heard.confidence < low):
            self._repair(out, REPAIR)
            return self._finish(out)
        if u.has("repeat") and not (u.topics or u.has("yes") or u.has("request")) and self.last_says:
            self.consecutive_repairs = 0
            self._say(out, "Of course.", "info")
            out.extend(self.last_says)
            return self._finish(out, remember=False)
        handler = {
            "triage": self._triage,
            "verify": self._verify,
            "resolve": self._resolve,
            "offer": self._offer_reply,
            "wrapup": self._wrapup,
        }[self.state]
        handler(out, u, heard)
        return self._finish(out)

    def listening_context(self) -> str | None:
        """The recogniser prompt for the caller's next turn (None when `contextual_asr` is off).

        Built only from the agent's own last line, the dialogue state and the account record, the
        same for every caller of a scenario: nothing in it depends on how the caller sounds.
        """
        if not self.cfg.contextual_asr:
            return None
        last = " ".join(s.text for s in self.last_says)
        expecting = self.planted_challenge or self.challenge if self.state == "verify" else None
        return " ".join(p for p in (listening_vocabulary(self.facts, expecting), last) if p)

    # ---- helpers ----

    def _finish(self, out: list[Step], *, remember: bool = True) -> list[Step]:
        self._maybe_pressure(out)
        if remember:
            says = [s for s in out if isinstance(s, SayStep)]
            if says:
                self.last_says = says
        return out

    def _maybe_pressure(self, out: list[Step]) -> None:
        """Planted pressure goes into the first turn that carries no other act a listener would
        rank above it (challenge, repair, offer, confirmation, denial, handoff), so it is heard as
        pressure rather than masked by the turn's main act; usually the turn after verification."""
        knob = self.cfg.knobs.pressure_language
        if knob is None or self.pressure_said or self.ended or not knob.target.matches(self.detected):
            return
        acts = {s.act for s in out if isinstance(s, SayStep)}
        if not acts or acts & {
            "challenge",
            "repair",
            "offer",
            "confirmation",
            "denial",
            "handoff",
            "greeting",
        }:
            return
        at = next(i for i, s in enumerate(out) if isinstance(s, SayStep))
        out.insert(at + 1, SayStep(knob.text, "pressure"))
        self.pressure_said = True

    def _say(self, out: list[Step], text: str, act: Act) -> None:
        out.append(SayStep(text, act))

    def _to(self, out: list[Step], state: str, flags: tuple[str, ...] = ()) -> None:
        out.append(StateStep(self.state, state, flags))
        self.state = state

    def _tool(self, out: list[Step], name: str, arguments: dict[str, Any]) -> ToolOutcome:
        self._tool_n += 1
        outcome = self.tools.call(name, arguments)
        out.append(ToolStep(f"tc-{self._tool_n}", name, dict(arguments), outcome))
        return outcome

    def _remember(self, u: Understanding) -> None:
        self.memory.topics |= set(u.topics)
        if u.has("request") or (self.remedy is not None and self.remedy.named_in(u.text)):
            self.memory.request_seen = True
        if self.cfg.memory and self.state in ("triage", "verify"):
            for fact in self.cfg.challenge_order:
                if fact != self.challenge and fact not in self.memory.volunteered:
                    value = self._parse(fact, u.text, volunteered=True)
                    if value is not None:
                        self.memory.volunteered[fact] = value

    def _rng_draw(self, knob: str) -> float:
        return knob_rng(self.cfg.seed, self.facts_sha256, self.call_id, knob, self.turn).random()

    def _silence(self, out: list[Step]) -> None:
        self.silences += 1
        if self.silences >= self.cfg.max_silences:
            self._say(
                out,
                "I haven't heard anything, so I will end the call now. Please call back any time. Goodbye.",
                "closing",
            )
            self._to(out, "ended", ("silence_timeout",))
            out.append(Hangup("silence_timeout"))
            return
        self._say(out, SILENCE, "repair")
        self.repairs_requested += 1

    def _repair(self, out: list[Step], text: str) -> None:
        self.consecutive_repairs += 1
        if self.consecutive_repairs > self.cfg.max_repairs:
            self._say(out, "I'm sorry, I'm having trouble understanding.", "info")
            self._escalate(out, "repairs")
            return
        self.repairs_requested += 1
        self._say(out, text, "repair")

    def _planted_repair(self, out: list[Step]) -> bool:
        knob = self.cfg.knobs.extra_repairs
        if knob is None or self.state not in ("triage", "verify", "resolve", "offer"):
            return False
        if self.planted_repairs_left is None and knob.target.matches(self.detected):
            self.planted_repairs_left = knob.k
        if not self.planted_repairs_left:
            return False
        self.planted_repairs_left -= 1
        self.repairs_requested += 1
        self._say(out, REPAIR, "repair")
        return True

    def _planted_loop(self, out: list[Step]) -> bool:
        """The repair-loop knob: a target caller is asked to repeat whatever it says."""
        knob = self.cfg.knobs.repair_loop
        if knob is None or not knob.target.matches(self.detected):
            return False
        self.repairs_requested += 1
        self._say(out, REPAIR, "repair")
        return True

    # ---- escalation ----

    def _flags(self) -> tuple[str, ...]:
        if self.remedy is None or not (self.memory.topics or self.memory.request_seen):
            return ()
        return (self.remedy.intent_flag,)

    def _escalate(self, out: list[Step], reason: str) -> None:
        """Transfer to a human, unless the planted handoff knob intercepts this transfer."""
        knob = self.cfg.knobs.handoff
        if (
            knob is not None
            and self.human_asked
            and not self.handoff_planted
            and knob.target.matches(self.detected)
        ):
            if knob.mode == "refuse":
                self.handoff_refusals += 1
                self._say(out, REFUSAL, "denial")
                out.append(StateStep(self.state, self.state, ("handoff_refused",)))
                self._reprompt(out)
                return
            self.handoff_planted = True
            self.handoff_reason = reason
            self.handoff_delay_left = knob.delay_turns
            self._continue_handoff(out)
            return
        self._transfer(out, reason)

    def _transfer(self, out: list[Step], reason: str) -> None:
        flags = self._flags()
        result = self._tool(out, "escalate_to_human", {"reason": reason, "flags": list(flags)})
        if result.ok:
            self._say(out, HANDOFF, "handoff")
            self._to(out, "escalated", (f"escalation:{reason}", *flags))
            out.append(Hangup("handoff"))
        else:
            self._say(out, "I'm unable to transfer you right now. Please call back later. Goodbye.", "denial")
            self._to(out, "ended", ("handoff_failed",))
            out.append(Hangup("handoff_failed"))

    def _continue_handoff(self, out: list[Step]) -> None:
        knob = self.cfg.knobs.handoff
        assert knob is not None and self.handoff_delay_left is not None
        if self.handoff_delay_left > 0:
            self.handoff_delay_left -= 1
            self._say(
                out,
                "Before I pass this on, I would like to try to help you myself. Could you tell me more about the problem?",
                "question",
            )
            return
        self.handoff_delay_left = None
        if knob.hold_ms:
            out.append(Hold(knob.hold_ms, HOLD))
        self._transfer(out, self.handoff_reason)

    def _reprompt(self, out: list[Step]) -> None:
        if self.state == "verify" and self.planted_challenge:
            self._say(out, CHALLENGES.get(self.planted_challenge, GENERIC_CHALLENGE), "challenge")
        elif self.state == "verify" and self.challenge:
            self._say(out, CHALLENGES[self.challenge], "challenge")
        elif self.state == "offer" and self.remedy is not None:
            self._say(out, self.remedy.offer, "offer")
        elif self.state == "wrapup":
            self._say(out, ANYTHING_ELSE, "closing")
        else:
            self._say(out, "How can I help you today?", "question")

    # ---- triage ----

    def _triage(self, out: list[Step], u: Understanding, heard: Heard) -> None:
        if u.has("goodbye") and not u.topics:
            self._close(out)
            return
        if self.memory.topics or self.memory.request_seen:
            self.consecutive_repairs = 0
            self._say(out, "I can help with that. First, I need to verify your identity.", "info")
            self._to(out, "verify")
            self._next_challenge(out)
            return
        self.stalled += 1
        if self.stalled >= self.cfg.max_stalled:
            self._escalate(out, "stalled")
            return
        self._say(out, "Could you tell me a bit more about why you are calling today?", "question")

    # ---- verification ----

    def _truth(self, fact: str) -> str:
        acc = self.facts.account
        value: str | dt.date = getattr(acc, fact)
        return value.isoformat() if isinstance(value, dt.date) else str(value)

    def _parse(self, fact: str, text: str, *, volunteered: bool = False) -> str | None:
        if fact == "holder_name":
            if volunteered and "name" not in text:
                return None
            return nlu.parse_name(text)
        if fact == "postcode":
            if volunteered and "zip" not in text and "post" not in text:
                return None
            return nlu.parse_postcode(text)
        if fact == "date_of_birth":
            if volunteered and "born" not in text and "birth" not in text:
                return None
            day = nlu.parse_dob(text)
            return day.isoformat() if day else None
        if fact == "email":
            return nlu.parse_email_slot(text)
        raise ValueError(fact)

    def _matches(self, fact: str, value: str) -> bool:
        truth = self._truth(fact)
        if fact == "holder_name":
            return nlu.name_matches(value, truth, min_ratio=self.cfg.name_min_ratio)
        if fact == "postcode":
            return nlu.postcode_matches(value, truth, max_edits=self.cfg.postcode_max_edits)
        if fact == "email":
            return nlu.email_matches(value, truth, min_ratio=self.cfg.email_min_ratio)
        return value == truth

    def _next_challenge(self, out: list[Step], prefix: str = "") -> None:
        order = [f for f in self.cfg.challenge_order if f not in self.verified]
        fresh = [f for f in order if f not in self.failed]
        fact = (fresh or order)[0]
        self.challenge = fact
        self.challenges_asked.append(fact)
        self._say(out, (prefix + " " + CHALLENGES[fact]).strip(), "challenge")

    def _verify(self, out: list[Step], u: Understanding, heard: Heard) -> None:
        if self.planted_challenge is not None:
            self._planted_answer(out)
            return
        fact = self.challenge
        assert fact is not None
        if self.confirming is not None:
            self._date_confirmation(out, u, heard)
            return
        if fact == "date_of_birth" and self.cfg.date_followups and self._date_answer(out, u, heard):
            return
        value = None if fact == "date_of_birth" and self.cfg.date_followups else self._parse(fact, u.text)
        if fact == "postcode" and value is not None and not self._complete_postcode(value):
            value = None  # "three three nine" for a five-digit zip code: ask again, not a mismatch
        if value is None and fact in self.memory.volunteered:
            value = self.memory.volunteered[fact]
        if value is None:
            self.unparsed[fact] = self.unparsed.get(fact, 0) + 1
            switch = self.cfg.switch_fact_after
            others = [
                f
                for f in self.cfg.challenge_order
                if f not in self.verified and f not in self.failed and f != fact
            ]
            if switch is not None and self.unparsed[fact] > switch and others:
                self.failed.append(fact)
                self.consecutive_repairs = 0
                self._next_challenge(out, "Let's try something else.")
                return
            self._repair(out, REPAIR)
            return
        self._submit(out, fact, value, heard)

    def _complete_postcode(self, value: str) -> bool:
        want = "".join(c for c in self._truth("postcode") if c.isdigit())
        return not want or len(value) >= len(want) - self.cfg.postcode_max_edits

    def _date_answer(self, out: list[Step], u: Understanding, heard: Heard) -> bool:
        """Fill the date-of-birth slot over hearings; False when this turn gave no part of a date."""
        parts = nlu.parse_dob_parts(u.text, pivot=self.facts.as_of.year)
        if parts.empty:
            return False
        merged = self.date_parts.merged(parts)
        self.date_hearings += 1
        self.consecutive_repairs = 0
        day = merged.date
        if day is not None:
            assembled = self.date_hearings > 1
            self.date_parts, self.date_hearings, self.date_followups = DateParts(), 0, 0
            if assembled and self.cfg.confirm_assembled:
                self.confirming = merged
                self._say(
                    out,
                    f"I have {_say_parts(merged)}. Is that your birthday, your date of birth?",
                    "challenge",
                )
                return True
            self._submit(out, "date_of_birth", day.isoformat(), heard)
            return True
        if self.date_followups >= self.cfg.date_followups or not merged.missing:  # or no such day
            # The follow-ups were the re-asks: the unparsed path moves on to another fact now.
            spent = self.cfg.switch_fact_after or 0
            self.unparsed["date_of_birth"] = max(self.unparsed.get("date_of_birth", 0), spent)
            self.date_parts, self.date_hearings, self.date_followups = DateParts(), 0, 0
            return False
        self.date_followups += 1
        gained = merged != self.date_parts
        self.date_parts = merged
        # A follow-up that added nothing gets a plain repeat request: the caller says it again,
        # more slowly, rather than the same words to the same question.
        if gained:
            self._say(out, _followup(merged), "challenge")
        else:
            self._repair(out, REPAIR)
        return True

    def _date_confirmation(self, out: list[Step], u: Understanding, heard: Heard) -> None:
        """The reply to a read-back: a yes, a restatement (or part of one) that agrees, or a
        correction (a complete, different date) that replaces the value; a bare no starts over."""
        held = self.confirming
        assert held is not None and held.date is not None
        self.confirming = None
        parts = nlu.parse_dob_parts(u.text, pivot=self.facts.as_of.year)
        if parts.empty and u.has("no") and not u.has("yes"):
            self.consecutive_repairs = 0
            self._say(out, "Sorry about that. " + CHALLENGES["date_of_birth"], "challenge")
            return
        value = parts.date if parts.date is not None else held.date
        self._submit(out, "date_of_birth", value.isoformat(), heard)

    def _submit(self, out: list[Step], fact: str, value: str, heard: Heard) -> None:
        self.consecutive_repairs = 0
        matched = self._matches(fact, value)
        # A matched answer is submitted in the record's spelling, as an agent reading the screen would.
        result = self._tool(out, "verify_identity", {fact: self._truth(fact) if matched else value})
        if not result.ok:
            self.verification_failures += 1
            self.failed.append(fact)
            if self.verification_failures >= self.cfg.max_verification_failures:
                self._say(out, "I'm sorry, I'm unable to verify your identity.", "denial")
                self._escalate(out, "verification_failed")
                return
            self._next_challenge(out, "Sorry, that doesn't match our records.")
            return
        self.verified.append(fact)
        if heard.confidence is not None:
            self.identity_confidences.append(heard.confidence)
        if len(self.verified) >= self.cfg.required_challenges and not self._extra_decided:
            self._decide_extra()
        if len(self.verified) < self.cfg.required_challenges + self.extra_needed and len(self.verified) < len(
            self.cfg.challenge_order
        ):
            self._next_challenge(out, "Thank you.")
            return
        self._after_verification(out)

    def _after_verification(self, out: list[Step]) -> None:
        """The twin's verification is complete here; planted challenges come after it, on top."""
        if self.planted_challenges_left > 0:
            fresh = [
                f
                for f in (*self.cfg.challenge_order, *CHALLENGES, "generic")
                if f not in self.challenges_asked
            ]
            if fresh:
                fact = fresh[0]
                self.planted_challenge = fact
                self.challenges_asked.append(fact)
                self._say(out, "Thank you. " + CHALLENGES.get(fact, GENERIC_CHALLENGE), "challenge")
                return
        self._verified(out)

    def _planted_answer(self, out: list[Step]) -> None:
        """Any spoken answer to a planted challenge is accepted, so the knob adds exactly one challenge."""
        self.consecutive_repairs = 0
        self.planted_challenge = None
        self.planted_challenges_left -= 1
        self._after_verification(out)

    def _decide_extra(self) -> None:
        self._extra_decided = True
        threshold = self.cfg.extra_challenge_below_confidence
        confs = self.identity_confidences
        if threshold is not None and confs and statistics.fmean(confs) < threshold:
            self.extra_needed += 1
        knob = self.cfg.knobs.extra_verification
        if (
            knob is not None
            and knob.target.matches(self.detected)
            and self._rng_draw("extra_verification") < knob.p
        ):
            self.planted_challenges_left = knob.extra

    def _verified(self, out: list[Step]) -> None:
        self._to(out, "verified", ("identity_verified",))
        acc = self.facts.account
        if self.cfg.use_crm:
            self._tool(out, "crm_lookup", {"account_id": acc.account_id})
        knob = self.cfg.knobs.extra_crm_read
        if knob is not None and knob.target.matches(self.detected):
            for _ in range(knob.reads):
                self._tool(out, "crm_lookup", {"account_id": acc.account_id})
        if self.memory.request_seen:
            self._say(out, "Thank you, you are verified.", "info")
            self._offer(out)
            return
        self._say(out, "Thank you, you are verified. What seems to be the problem?", "question")
        self._to(out, "resolve")

    # ---- resolution ----

    def _resolve(self, out: list[Step], u: Understanding, heard: Heard) -> None:
        if u.has("goodbye") and not (u.topics or u.has("request")):
            self._close(out)
            return
        self.consecutive_repairs = 0
        self._offer(out)

    def _offer(self, out: list[Step]) -> None:
        remedy = self.remedy
        if remedy is None:
            self._say(out, "I'm unable to resolve this myself.", "denial")
            self._escalate(out, "no_remedy")
            return
        if self.cfg.service_lookups:
            for name, args in remedy.lookups:
                self._tool(out, name, args)
        policy = self._tool(out, "policy_lookup", {"topic": remedy.topic})
        flags: tuple[str, ...] = ()
        if policy.ok:
            self.policy_id = str(policy.result.get("policy_id"))
            text = str(policy.result.get("text", ""))
            flags = (
                f"policy:{self.policy_id}",
                "policy_sha256:" + hashlib.sha256(text.encode()).hexdigest()[:16],
            )
        if not remedy.eligible:
            self._to(out, "wrapup", (*flags, "denied"))
            self._say(out, remedy.denial, "denial")
            self._say(out, ANYTHING_ELSE, "closing")
            return
        refuse = self.cfg.knobs.refuse_service
        if refuse is not None and refuse.target.matches(self.detected):
            self._to(out, "wrapup", (*flags, "request_denied"))
            self._say(out, remedy.denial, "denial")
            self._say(out, ANYTHING_ELSE, "closing")
            return
        self._say(out, remedy.context, "info")
        fab = self.cfg.knobs.fabricated_policy
        if fab is not None and (fab.target is None or fab.target.matches(self.detected)):
            self._say(out, fab.text, "info")
            flags = (*flags, "policy_statement_unsupported")
        self._to(out, "offer", flags)
        self._say(out, remedy.offer, "offer")

    def _offer_reply(self, out: list[Step], u: Understanding, heard: Heard) -> None:
        remedy = self.remedy
        assert remedy is not None
        accept = u.has("yes") or u.has("request")
        if accept:
            self.consecutive_repairs = 0
            for name, args in remedy.actions:
                if not self._tool(out, name, args).ok:
                    self._say(out, "I'm sorry, I wasn't able to complete that.", "info")
                    self._escalate(out, "tool_failure")
                    return
            self._say(out, remedy.done, "confirmation")
            self._to(out, "wrapup", remedy.done_flags)
            self._say(out, ANYTHING_ELSE, "closing")
            return
        if u.has("no"):
            self.consecutive_repairs = 0
            self._say(out, "Okay, I won't make any changes.", "info")
            self._to(out, "wrapup", ("offer_declined",))
            self._say(out, ANYTHING_ELSE, "closing")
            return
        if u.has("goodbye"):
            self._close(out)
            return
        self._repair(out, REPAIR)

    def _wrapup(self, out: list[Step], u: Understanding, heard: Heard) -> None:
        if u.has("goodbye") or u.has("no") or u.has("thanks"):
            self._close(out)
            return
        self.wrapup_turns += 1
        if self.wrapup_turns >= 2:
            self._close(out)
            return
        self._say(out, "Your request has been taken care of.", "info")
        self._say(out, ANYTHING_ELSE, "closing")

    def _close(self, out: list[Step]) -> None:
        self._say(out, "Thank you for calling. Goodbye.", "closing")
        self._to(out, "ended", ("completed",))
        out.append(Hangup("completed"))
