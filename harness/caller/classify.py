"""The rule reader: what an agent turn does (dialogue acts) and what it asks for (facts).

Burden metrics rest on this reading, so it is explicit rule code. A turn is split into sentences;
each act family (`acts.py`) is tried on each sentence, and the facts of the ontology
(`ontology.py`) are looked for where a sentence asks something. Every act found is kept with the
rule that found it, so a disputed count traces to one pattern; the primary act (what the caller
reacts to) follows a fixed precedence (`reading.PRECEDENCE`).
"""

from __future__ import annotations

import functools
import re

from voice_audit.harness.caller import acts as A
from voice_audit.harness.caller.ontology import IDENTITY_FACTS, facts_named
from voice_audit.harness.caller.reading import ActHit, Reading, make_reading
from voice_audit.scenarios import Challenge, Scenario

_POINTS_BACK = re.compile(
    r"\b(spell|repeat|confirm|give me|say|give|try|read|check) (me )?(it|that)\b|\b(it|that) (to me )?(again|once more|one more time)\b",
    re.IGNORECASE,
)
_SENTENCE = re.compile(r"(?:[^.?!]|(?<=\d)\.(?=\d))+[.?!]*")


def _normalise(text: str) -> str:
    text = text.replace("\u2019", "'").replace("\u2018", "'")
    return " ".join(text.split())


def sentences(text: str) -> list[str]:
    """Sentences with their end marks (a full stop between digits, as in 24.99, does not end one)."""
    return [s.strip() for s in _SENTENCE.findall(text) if s.strip(" .?!")]


def _cue_map(challenges: tuple[Challenge, ...]) -> dict[str, tuple[str, ...]]:
    return {c.fact: c.cues for c in challenges if c.cues}


def read_text(text: str, cues: dict[str, tuple[str, ...]] | None = None) -> Reading:
    """Read one agent turn; `cues` are a scenario's own extra phrases per fact."""
    clean = _normalise(text)
    if not clean or not re.search(r"[a-zA-Z]", clean):
        return make_reading("", [])
    hits: list[ActHit] = []
    previous: list[tuple[str, str]] = []
    mismatch = False
    parts = sentences(clean)
    for i, sent in enumerate(parts):
        named = facts_named(sent, cues)
        found = _read_sentence(sent, named, cues, previous)
        if mismatch and any(h.act == "challenge" and h.facts for h in found):
            # "That doesn't match what I have. Can you give me your date of birth again?": the agent
            # heard the answer and found it wrong; asking again is a challenge, not a repair request
            found = [h for h in found if h.act != "repair_request"]
        mismatch = mismatch or bool(A.MISMATCH.search(sent))
        if 0 < i == len(parts) - 1 and not any(h.act == "greeting" for h in hits):
            # "That's everything from my side. Thanks for calling!": thanks at the end takes leave
            found = [
                ActHit(act="closing", rule="closing_thanks") if h.rule == "greeting_thanks" else h
                for h in found
            ]
        hits += found
        previous = named
    if any(h.act == "closing" for h in hits):
        hits = [h for h in hits if h.rule != "greeting_thanks"]  # "Thank you for calling. Goodbye."
    return make_reading(clean, hits)


def _read_sentence(
    sent: str,
    named: list[tuple[str, str]],
    cues: dict[str, tuple[str, ...]] | None,
    previous: list[tuple[str, str]],
) -> list[ActHit]:
    """`named`: the facts this sentence names; `previous`: facts the sentence before named, for a
    request that only points back at one ("I can't find an account with that name. Could you spell it?")."""
    found = A.acts_in(sent)
    names = {h.act for h in found}
    asking = A.is_asking(sent)
    facts = named or (previous if _POINTS_BACK.search(sent) else [])
    repair = "repair_request" in names
    # A refusal may ask for a fact too ("I can't refund that yet. What's your account number?"):
    # the challenge still counts.
    if facts and (asking or repair) and not names & {"offer", "confirmation", "closing"}:
        identity = tuple(f for f, _ in facts if f in IDENTITY_FACTS or f in (cues or {}))
        case = tuple(f for f, _ in facts if f not in identity)
        if identity:
            found.append(ActHit(act="challenge", rule="challenge_fact", facts=identity))
        if case:
            found.append(ActHit(act="question", rule="question_case_fact", facts=case))
        return found
    if not names & {"challenge"} and A.GENERIC_CHALLENGE.search(sent):
        found.append(ActHit(act="challenge", rule="challenge_generic"))
        return found
    if not names & A.ASKING_ACTS and A.is_question(sent):
        found.append(ActHit(act="question", rule="question"))
    return found


def classify(text: str, challenges: tuple[Challenge, ...] = ()) -> Reading:
    """Read one agent turn; the challenges' cue phrases extend the shared fact ontology."""
    cues = _cue_map(challenges)
    return _read_cached(text, tuple((fact, tuple(c)) for fact, c in cues.items()))


@functools.lru_cache(maxsize=8192)
def _read_cached(text: str, cue_items: tuple[tuple[str, tuple[str, ...]], ...]) -> Reading:
    """A reading depends only on the text and the cue phrases, and a `Reading` is frozen: agents
    repeat their phrasings across calls, and the rules cost milliseconds per sentence."""
    return read_text(text, dict(cue_items) or None)


class RuleReader:
    """The default observer: explicit rules, every decision traceable to the rule that fired."""

    name = "rules"

    def read(self, text: str, scenario: Scenario) -> Reading:
        return classify(text, scenario.caller.challenges)


def read_turn(text: str, scenario: Scenario) -> Reading:
    """The rule reader's reading of one agent turn in `scenario`."""
    return RuleReader().read(text, scenario)
