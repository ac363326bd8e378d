"""Identity verification, the verify phase of the dialogue: which fact to ask for next, hearing the
answer (slot parsers, a date of birth put together over several hearings and read back), checking it
against the account through `verify_identity`, and the challenges the design or a planted knob adds.

`IdentityVerification` is mixed into `DialoguePolicy` (`phases`), which owns the turn and supplies
the step primitives declared under TYPE_CHECKING below.
"""

from __future__ import annotations

import datetime as dt
import statistics
from typing import TYPE_CHECKING, Any

from voice_audit.agents.reference import _nlu as nlu
from voice_audit.agents.reference._nlu import Understanding
from voice_audit.agents.reference._policy.config import PolicyConfig
from voice_audit.agents.reference._policy.memory import Memory
from voice_audit.agents.reference._policy.steps import Act, Heard, Step
from voice_audit.agents.reference._policy.wording import CHALLENGES, GENERIC_CHALLENGE, REPAIR
from voice_audit.agents.reference._spoken import MONTH_NAMES, DateParts, say_number, say_ordinal
from voice_audit.scenarios import Facts

if TYPE_CHECKING:
    from voice_audit.harness.tools import ToolOutcome


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


class IdentityVerification:
    """The verify phase of `DialoguePolicy`: its state and its steps."""

    facts: Facts
    cfg: PolicyConfig
    detected: dict[str, str]
    memory: Memory
    consecutive_repairs: int

    if TYPE_CHECKING:  # supplied by DialoguePolicy

        def _say(self, out: list[Step], text: str, act: Act) -> None: ...
        def _tool(self, out: list[Step], name: str, arguments: dict[str, Any]) -> ToolOutcome: ...
        def _repair(self, out: list[Step], text: str) -> None: ...
        def _escalate(self, out: list[Step], reason: str) -> None: ...
        def _verified(self, out: list[Step]) -> None: ...
        def _rng_draw(self, knob: str) -> float: ...

    def _init_verification(self) -> None:
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
        self.verification_failures = 0

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
