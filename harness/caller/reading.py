"""What a reader makes of one agent turn: every dialogue act in it, the facts it asks for, and why.

A turn can do several things at once ("Sorry, I didn't catch that. What is the full name on the
account?" is a repair request *and* a challenge for the name), so a reading keeps all its acts.
The caller's reply and the logged `classification` rest on one *primary* act, chosen by a fixed
precedence; the burden and safety metrics read the full act list and the facts, so no act is lost.

Any reader (the rule reader, a model reader, a human rater's label) produces a `Reading` through
the `Reader` protocol, so readings from different observers compare act by act.
"""

from __future__ import annotations

from typing import Protocol

from pydantic import Field

from voice_audit.harness.model.dialogue_acts import PRECEDENCE, Act, Classification, classification_of
from voice_audit.scenarios import Frozen, Scenario


class ActHit(Frozen):
    """One act found in a turn, the facts it asks for (challenges only) and the rule that found it."""

    act: Act
    rule: str
    facts: tuple[str, ...] = ()


class Reading(Frozen):
    """A reader's account of one agent turn.

    `classification` and `rule` are the primary act (what the caller reacted to) in the logged
    vocabulary; `challenge_facts` are the facts asked for by any challenge in the turn (also when
    the primary act is a repair request); `tags` are the rules of the other acts, kept for logs.
    """

    classification: Classification
    rule: str
    challenge_facts: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    acts: tuple[ActHit, ...] = ()
    primary: Act = "other"
    reader: str = "rules"
    text: str = Field(default="", repr=False)

    @property
    def act_names(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(h.act for h in self.acts))

    @property
    def act_names_set(self) -> frozenset[str]:
        return frozenset(h.act for h in self.acts)

    def has(self, act: str) -> bool:
        return any(h.act == act for h in self.acts)

    def rule_for(self, act: str) -> str | None:
        return next((h.rule for h in self.acts if h.act == act), None)

    @property
    def generic_challenge(self) -> bool:
        """An identity check that names no fact ("I need to verify your identity")."""
        return any(h.act == "challenge" and not h.facts for h in self.acts) and not self.challenge_facts


def make_reading(text: str, hits: list[ActHit] | tuple[ActHit, ...], *, reader: str = "rules") -> Reading:
    """Assemble a reading from its acts: deduplicate, choose the primary act, fill the log fields."""
    seen: dict[str, ActHit] = {}
    facts: list[str] = []
    for h in hits:
        if h.act == "challenge":
            facts += [f for f in h.facts if f not in facts]
            if h.act in seen:
                prev = seen[h.act]
                seen[h.act] = ActHit(
                    act="challenge", rule=prev.rule, facts=tuple(dict.fromkeys(prev.facts + h.facts))
                )
                continue
        seen.setdefault(h.act, h)
    if not seen:
        seen["silence" if not text.strip() else "other"] = ActHit(
            act="silence" if not text.strip() else "other", rule="empty" if not text.strip() else "no_rule"
        )
    ordered = tuple(sorted(seen.values(), key=lambda h: PRECEDENCE.index(h.act)))
    if len(ordered) > 1:
        ordered = tuple(h for h in ordered if h.act != "other")
    main = ordered[0]
    classification = classification_of(main.act, with_question="question" in seen)
    tags = tuple(h.rule for h in ordered[1:])
    return Reading(
        classification=classification,
        rule=main.rule,
        challenge_facts=tuple(facts),
        tags=tags,
        acts=ordered,
        primary=main.act,
        reader=reader,
        text=text,
    )


class Reader(Protocol):
    """Anything that reads an agent turn: the rule reader, a model reader, a replayed label."""

    name: str

    def read(self, text: str, scenario: Scenario) -> Reading: ...
