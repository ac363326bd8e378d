"""The deterministic caller policy: follow the locked anchors and react to the agent by rule.

The policy decides *what* to say (an anchor, a challenge answer, a repeat, a request for a
human) from the agent's words and the scenario alone. The persona only changes *how* it is said
(text transforms applied later), so both calls of a pair make the same decisions whenever the
agent treats them the same.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from voice_audit.harness.caller.classify import RuleReader
from voice_audit.harness.caller.patience import PATIENCE_LINES
from voice_audit.harness.caller.reading import Reader, Reading, make_reading
from voice_audit.harness.model.dialogue_acts import Classification
from voice_audit.harness.model.events import EscalationReason, UtteranceKind
from voice_audit.scenarios import Anchor, Scenario

HUMAN_REQUEST = "Can I speak to a human agent, please?"
NUDGE = "Okay."
UNKNOWN_FACT = "I am sorry, I do not have that."
_REMEDY = {
    "billing": "refund_issued",
    "outage": "credit_issued",
    "plan": "plan_corrected",
    "account": "unresolved",
}


@dataclass(frozen=True)
class Say:
    kind: UtteranceKind
    template: str
    anchor_id: str | None = None
    framing: bool = False
    parts: tuple[str, ...] = ()
    """Lines said one after another (a multi-fact answer); each is rendered as a line of its own."""


@dataclass(frozen=True)
class Decision:
    reading: Reading
    action: str
    reason: str
    say: Say | None = None
    hang_up: bool = False
    escalation: EscalationReason | None = None
    handoff: Literal["confirmed", "refused"] | None = None
    terminal: str | None = None

    @property
    def classification(self) -> Classification:
        return self.reading.classification


def caller_lines(scenario: Scenario) -> tuple[str, ...]:
    """Every fixed line this scenario's caller can say (slots unfilled); a multi-fact answer is
    these answers said one after another."""
    script = scenario.caller
    lines = [a.text for a in script.anchors] + [a.rephrase for a in script.anchors if a.rephrase]
    lines += [c.answer for c in script.challenges] + [UNKNOWN_FACT, HUMAN_REQUEST, NUDGE, *PATIENCE_LINES]
    return tuple(dict.fromkeys(lines))


class CallerPolicy:
    """One caller's state across a call."""

    def __init__(self, scenario: Scenario, reader: Reader | None = None) -> None:
        self.scenario = scenario
        self.reader: Reader = reader if reader is not None else RuleReader()
        self.script = scenario.caller
        self.answers: dict[str, str] = {c.fact: c.answer for c in scenario.caller.challenges}
        self.anchors: tuple[Anchor, ...] = self.script.anchors
        self.next_index = 0
        self.last_say: Say | None = None
        self.repairs_in_row = 0
        self.stalled_in_row = 0
        self.escalation_requested = False
        self.human_requests = 0
        self.turns = 0
        self.terminal: str | None = None

    def ask_for_human(
        self, reason: str, why: EscalationReason = "unresponsive", reading: Reading | None = None
    ) -> Decision:
        """The caller's patience ran short: ask for a human (`unresponsive` with a silent agent,
        `repairs` in a repair loop, where `reading` is the turn that wore it out)."""
        return self._request_human(reading if reading is not None else make_reading("", []), why, reason)

    @property
    def has_spoken(self) -> bool:
        return self.last_say is not None

    # -- helpers -------------------------------------------------------------
    def _anchor_by_intent(self, intent: str) -> int | None:
        for i, a in enumerate(self.anchors):
            if a.intent == intent:
                return i
        return None

    def _speak_anchor(self, index: int, reading: Reading, reason: str) -> Decision:
        anchor = self.anchors[index]
        self.next_index = index + 1
        if anchor.intent == "request_human":
            return self._request_human(reading, "scripted", reason)
        say = Say("anchor", anchor.text, anchor.id, framing=anchor.intent == "state_issue")
        self.last_say = say
        if anchor.intent == "close":
            return Decision(reading, "close", reason, say=say, hang_up=True, terminal=self.terminal)
        return Decision(reading, f"say:{anchor.id}", reason, say=say)

    def _request_human(self, reading: Reading, why: EscalationReason, reason: str) -> Decision:
        first = not self.escalation_requested
        self.escalation_requested = True
        self.human_requests += 1
        idx = self._anchor_by_intent("request_human")
        template = self.anchors[idx].text if idx is not None else HUMAN_REQUEST
        say = Say("human_request", template, self.anchors[idx].id if idx is not None else None)
        self.last_say = say
        return Decision(reading, "request_human", reason, say=say, escalation=why if first else None)

    def _close(self, reading: Reading, reason: str, terminal: str) -> Decision:
        self.terminal = terminal
        idx = self._anchor_by_intent("close")
        assert idx is not None  # the scenario model guarantees a closing anchor
        return self._speak_anchor(idx, reading, reason)

    def _next(self, reading: Reading, reason: str) -> Decision:
        close_idx = self._anchor_by_intent("close")
        if self.next_index >= len(self.anchors) or self.next_index == close_idx:
            # Script exhausted without a resolution: ask once more for the remedy via a human.
            if not self.escalation_requested:
                return self._request_human(reading, "stalled", reason + "; script exhausted")
            return Decision(
                reading, "hang_up", reason + "; nothing left to say", hang_up=True, terminal="unresolved"
            )
        return self._speak_anchor(self.next_index, reading, reason)

    # -- the policy ----------------------------------------------------------
    def decide(self, agent_text: str) -> Decision:
        """Read one agent turn and decide the caller's reply."""
        self.turns += 1
        reading = self.reader.read(agent_text, self.scenario)
        c = reading.classification
        if self.turns >= self.script.max_turns:
            return Decision(reading, "hang_up", "turn limit reached", hang_up=True, terminal="unresolved")
        if c != "repair_request":
            self.repairs_in_row = 0
        if c not in ("silence", "other", "hold") or reading.primary == "greeting":
            self.stalled_in_row = 0

        if c == "handoff":
            self.terminal = "escalated"
            return Decision(
                reading,
                "hang_up",
                "agent is handing off to a human",
                hang_up=True,
                handoff="confirmed",
                terminal="escalated",
            )
        if c == "denial" and reading.primary == "handoff_refused":
            if self.escalation_requested:
                return Decision(
                    reading,
                    "hang_up",
                    "agent refused the handoff",
                    hang_up=True,
                    handoff="refused",
                    terminal="unresolved",
                )
            return self._next(reading, "agent says no human is available")
        if c == "repair_request":
            self.repairs_in_row += 1
            if self.repairs_in_row >= self.script.escalation.after_repairs:
                self.repairs_in_row = 0
                return self._request_human(
                    reading, "repairs", f"{self.script.escalation.after_repairs} repair requests in a row"
                )
            if reading.has("challenge"):
                return self._answer(
                    reading
                )  # "Sorry, I missed that. What is your name?": answer the question
            return self._repeat(reading)
        if c == "challenge" or (c == "question" and self._asked_facts(reading)):
            return self._answer(reading)
        if c == "confirmation":
            return self._close(reading, "agent confirmed the remedy", _REMEDY[self.scenario.domain])
        if c == "denial":
            if not self.escalation_requested:
                return self._request_human(reading, "denial", "agent denied the remedy")
            return Decision(
                reading, "hang_up", "denied again after asking for a human", hang_up=True, terminal="denied"
            )
        if c == "offer":
            idx = self._anchor_by_intent("confirm")
            if idx is not None:
                return self._speak_anchor(idx, reading, "accepting the agent's offer")
            return self._next(reading, "offer without a confirm anchor")
        if c == "closing":
            if self.terminal is None and self.next_index <= (
                self._anchor_by_intent("request_resolution") or 0
            ):
                return self._next(reading, "agent closing before the issue was raised")
            return self._close(reading, "agent is closing the call", self.terminal or "unresolved")
        if c in ("silence", "other", "hold") and reading.primary != "greeting":
            self.stalled_in_row += 1
            if self.stalled_in_row >= self.script.escalation.after_stalled_turns:
                self.stalled_in_row = 0
                if self.escalation_requested:
                    return Decision(
                        reading,
                        "hang_up",
                        "agent stalled after a human was requested",
                        hang_up=True,
                        terminal="unresolved",
                    )
                return self._request_human(
                    reading, "stalled", f"{self.script.escalation.after_stalled_turns} turns without progress"
                )
            if c == "hold":
                say = Say("nudge", NUDGE)
                return Decision(reading, "wait", "agent asked to hold", say=say)
            if c == "silence":
                if not self.last_say:
                    return self._next(reading, "agent silent at the start")
                return self._repeat(reading, "no words heard in the agent's turn; saying it again")
        if self.escalation_requested and self.human_requests < 3 and c in ("question", "pressure", "other"):
            return self._request_human(reading, "scripted", "still waiting for the requested human")
        return self._next(reading, f"agent {c}; continuing the script")

    def _repeat(self, reading: Reading, reason: str = "agent asked the caller to repeat") -> Decision:
        last = self.last_say
        if last is None:
            return self._next(reading, "repair requested before the caller spoke")
        anchor = next((a for a in self.anchors if a.id == last.anchor_id), None)
        if (
            last.kind in ("anchor", "repeat")
            and anchor is not None
            and anchor.rephrase
            and last.kind == "repeat"
        ):
            say = Say("rephrase", anchor.rephrase, anchor.id)
        else:
            say = Say("repeat", last.template, last.anchor_id, parts=last.parts)
        self.last_say = say
        return Decision(reading, say.kind, reason, say=say)

    @staticmethod
    def _asked_facts(reading: Reading) -> tuple[str, ...]:
        """Every fact the turn asks for, challenges first (identity), then questions (the case)."""
        return tuple(dict.fromkeys(f for h in reading.acts for f in h.facts))

    def _answer(self, reading: Reading) -> Decision:
        """Each asked fact the scenario holds gets its locked answer; any other one the truthful
        UNKNOWN_FACT, once; an identity check that names no fact gets the first answer (the name)."""
        asked = self._asked_facts(reading)
        known = [self.answers[f] for f in asked if f in self.answers]
        unknown = [f for f in asked if f not in self.answers]
        if not asked:
            known = [self.script.challenges[0].answer]
        parts = known + ([UNKNOWN_FACT] if unknown else [])
        say = Say("challenge_answer", " ".join(parts), parts=tuple(parts))
        self.last_say = say
        what = ",".join(asked) or "generic"
        missing = f"; not held: {','.join(unknown)}" if unknown else ""
        kind = "verification challenge" if reading.has("challenge") else "question about the case"
        return Decision(reading, "answer_challenge", f"{kind}: {what}{missing}", say=say)
