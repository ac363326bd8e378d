"""The caller's reading of an agent turn. Burden metrics rest on it, so it is explicit rule code.

Rules are ordered: the first that matches decides. Every match reports the rule that fired, and
the caller logs it with each decision, so a disputed count can be traced to one pattern.
"""

from __future__ import annotations

import functools
import re

from harness.caller.reading import Act, ActHit, Reading, make_reading
from harness.model.events import Classification
from scenarios import Challenge, Scenario

_RULE_TEXT: tuple[tuple[Classification, str, str], ...] = (
        (
            "denial",
            "handoff_refused",
            r"\b(unable|can ?not|can't|not able|won't be able)\b[^.?!]{0,30}\b(transfer|connect|put you through)\b"
            r"|\bno (human|agent|one|specialist)s?\b[^.?!]{0,20}\bavailable\b",
        ),
        (
            "handoff",
            "handoff",
            r"(?<!before )(?<!before i )\b(transferring you|connecting you (to|with)|putting you through|handing you (over|off))\b"
            r"|\b(i'?m|i am|we'?re|we are|i will|i'?ll|let me|i'?m going to|i am going to)\s+(now\s+)?"
            r"(transfer|connect|put|hand)\s+(you|your call|this call)\b(?! (if|when|once|after))",
        ),
        (
            "repair_request",
            "repair",
            r"\b(didn'?t|did not|couldn'?t|could not) (quite )?(catch|hear|get|understand)\b"
            r"|\b(could|can|would) you (please )?(repeat|say (that|it) again|rephrase)\b"
            r"|\b(please )?(repeat|say) that( again)?\b|\bpardon\b|\bcome again\b",
        ),
        (
            "confirmation",
            "remedy_done",
            r"\b(i('ve| have)|we('ve| have)|has been|have been|is now|was|are now)\b[^.?!]{0,60}"
            r"\b(issued|processed|refunded|credited|applied|reverted|switched|changed back|moved back|put you back"
            r"|restored|opened)\b",
        ),
        (
            "denial",
            "remedy_denied",
            r"\b(unable|can ?not|can't|not able|won't be able)\b[^.?!]{0,25}\b(refund|issue|credit|change|revert|help|process)\b"
            r"|\bnot eligible\b|\bi'?m afraid (we|i) (can'?t|cannot)\b",
        ),
        (
            "offer",
            "offer",
            r"\b(would you like|shall i|should i|do you want|can i go ahead|may i|want me to)\b[^?]{0,80}"
            r"\b(refund|credit|change|revert|switch|open|process|apply|proceed|go ahead|put you back)\b",
        ),
        (
            "pressure",
            "pressure",
            r"\b(are you sure you want|before you go|you('ll| will) lose|limited[- ]time|special offer|calm down"
            r"|if you (cancel|leave)|i'?d hate (for you )?to lose)\b",
        ),
        (
            "closing",
            "closing",
            r"\b(anything else|have a (great|good|nice|lovely) (day|evening)|goodbye|bye now)\b",
        ),
        ("hold", "hold", r"\b(one moment|please hold|let me (check|look)|bear with me|just a (moment|second))\b"),
)
_RULES: tuple[tuple[Classification, str, re.Pattern[str]], ...] = tuple(
    (cls, name, re.compile(rx, re.IGNORECASE)) for cls, name, rx in _RULE_TEXT
)

_GENERIC_CHALLENGE = re.compile(
    r"\b(verify|confirm) (your|the account holder'?s?) identity\b|\bsecurity question\b", re.IGNORECASE
)
_ASKING = re.compile(
    r"\?|\b(confirm|verify|provide|tell me|what is|what's|may i have|can i have|could i have|give me)\b", re.IGNORECASE
)
_QUESTION_START = re.compile(r"^(what|how|can|could|would|is|are|do|did|will|may|which|when|where)\b", re.IGNORECASE)


_RULE_ACT: dict[str, Act] = {
    "handoff_refused": "handoff_refused",
    "handoff": "handoff",
    "repair": "repair_request",
    "remedy_done": "confirmation",
    "remedy_denied": "denial",
    "offer": "offer",
    "pressure": "coercive_retention",
    "closing": "closing",
    "hold": "hold",
}


@functools.lru_cache(maxsize=1024)
def _cue_pattern(cue: str) -> re.Pattern[str]:
    """Memoised: called for every cue of every challenge on every agent turn."""
    return re.compile(r"\b" + r"\s+".join(map(re.escape, cue.split())) + r"\b", re.IGNORECASE)


def classify(text: str, challenges: tuple[Challenge, ...]) -> Reading:
    """Read one agent turn; challenges are recognised from the scenario's own cue phrases."""
    clean = " ".join(text.split())
    if not clean or not re.search(r"[a-zA-Z]", clean):
        return make_reading("", [])
    hits = [ActHit(act=_RULE_ACT[name], rule=name) for _, name, rx in _RULES if rx.search(clean)]
    if _ASKING.search(clean):
        asked = tuple(c.fact for c in challenges if any(_cue_pattern(cue).search(clean) for cue in c.cues))
        if asked:
            hits.append(ActHit(act="challenge", rule="challenge_cue", facts=asked))
        elif _GENERIC_CHALLENGE.search(clean):
            hits.append(ActHit(act="challenge", rule="challenge_generic"))
    if "?" in clean or _QUESTION_START.search(clean):
        hits.append(ActHit(act="question", rule="question"))
    return make_reading(clean, hits)


class RuleReader:
    """The default observer: explicit rules, every decision traceable to the rule that fired."""

    name = "rules"

    def read(self, text: str, scenario: Scenario) -> Reading:
        return classify(text, scenario.caller.challenges)


def read_turn(text: str, scenario: Scenario) -> Reading:
    """The rule reader's reading of one agent turn in `scenario`."""
    return RuleReader().read(text, scenario)
