"""Every line the caller of a scenario can say, and the keys its voice renders them under.

The policy and the caller's patience speak only fixed templates (anchors, rephrases, the held
facts' answers, the unknown-fact reply, a request for a human, a nudge, the patience prompt, a
declared interruption line);
repeats say one of those again, and an answer to several facts says its answers one after
another. The persona's text transforms (disfluency) draw from the pair's line variant and the
template (`text_key`), not from how often it was said: a repeat says the same words again, more
slowly (`say_forms` bounds how often, which bounds the slower rates), so the lines a voice can say
are the templates times the campaign's `line_variants`, finite and listable before any call.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from voice_audit.harness.caller.interruption import INTERRUPTION_LINE
from voice_audit.harness.caller.patience import PATIENCE_LINES
from voice_audit.harness.caller.policy import HUMAN_REQUEST, NUDGE, UNKNOWN_FACT, Say
from voice_audit.harness.model.campaign import Interruptions, Patience
from voice_audit.harness.model.events import UtteranceKind
from voice_audit.personas import SpeechParams
from voice_audit.scenarios import Scenario

REPEAT_SLOWDOWN = 0.88
"""Each repeat of the same words is 12% slower than the one before."""
REPEAT_FLOOR_WPM = 110


def said_key(say: Say) -> str:
    """What the caller counts sayings of: an anchor by its id (its repeats and rephrases too), any
    other line by its words. The count picks the text transforms' draw and the repeat slow-down."""
    return f"{say.kind}:{say.anchor_id or say.template}"


def part_key(kind: str, part: str) -> str:
    """The count of one line of a multi-line turn (an answer to several facts), kept per line."""
    return f"{kind}:{part}"


def render_key(key: str, count: int) -> str:
    """The key of the `count`-th saying under `key` (what the caller counts its repeats by)."""
    return f"{key}:{count}"


def text_key(template: str, framing: bool) -> str:
    """The seed key of the text transforms of a template: its words (and whether the wording level's
    framing is said with it), whatever kind of turn says it and however often. Within one line
    variant, the same template is always the same words."""
    return f"{'framed' if framing else 'plain'}:{template}"


def clearer_speech(speech: SpeechParams, kind: str, count: int) -> SpeechParams:
    """Asked to repeat, people slow down: each repeat of the same words is 12% slower (floor
    110 wpm). It is a rule of the caller, not of the persona, so both sides of a pair do it."""
    if kind not in ("repeat", "rephrase"):
        return speech
    rate = max(REPEAT_FLOOR_WPM, round(speech.rate_wpm * REPEAT_SLOWDOWN ** (count + 1)))
    return speech.model_copy(update={"rate_wpm": min(rate, speech.rate_wpm)})


@dataclass(frozen=True)
class SayForm:
    """One template as the caller's voice counts it: `key` is its said (or part) key, `item` the
    anchor id, answered fact or line name, and `counts` how many sayings a call can reach."""

    kind: UtteranceKind
    item: str
    template: str
    key: str
    counts: int
    framing: bool = False


def say_bounds(scenario: Scenario, patience: Patience) -> tuple[int, int]:
    """(sayings of any one policy line, patience prompts) that one call can reach at most.

    The policy speaks at most once per agent turn and stops at `max_turns`; patience speaks only
    within stretches of agent silence (at most one per agent turn, plus the one before the first)
    and prompts at most once per `prompt_after_s` of a stretch that ends at `hang_up_after_s`.
    """
    turns = scenario.caller.max_turns
    stretches = turns + 1
    per_stretch = math.floor(patience.hang_up_after_s / patience.prompt_after_s) + 1
    return turns + stretches, stretches * per_stretch


def say_forms(
    scenario: Scenario, patience: Patience, interruptions: Interruptions | None = None
) -> tuple[SayForm, ...]:
    """Every (kind, template, key) the caller of `scenario` can say, with its count bound; with
    declared `interruptions`, their line too (the caller barges in at most once per agent turn)."""
    says, prompts = say_bounds(scenario, patience)
    forms: list[SayForm] = []

    def add(say: Say, item: str, counts: int, *, key: str | None = None) -> None:
        forms.append(SayForm(say.kind, item, say.template, key or said_key(say), counts, say.framing))

    script = scenario.caller
    human_anchor = next((a for a in script.anchors if a.intent == "request_human"), None)
    for a in script.anchors:
        if a.intent == "request_human":
            continue
        add(Say("anchor", a.text, a.id, framing=a.intent == "state_issue"), a.id, says)
        add(Say("repeat", a.text, a.id), a.id, says)
        if a.rephrase:
            add(Say("rephrase", a.rephrase, a.id), a.id, says)
            add(Say("repeat", a.rephrase, a.id), a.id, says)
    if human_anchor is not None:
        add(Say("human_request", human_anchor.text, human_anchor.id), human_anchor.id, says)
        add(Say("repeat", human_anchor.text, human_anchor.id), human_anchor.id, says)
    else:
        add(Say("human_request", HUMAN_REQUEST), "human_request", says)
        add(Say("repeat", HUMAN_REQUEST), "human_request", says)
    answers = [(c.fact, c.answer) for c in script.challenges] + [("unknown_fact", UNKNOWN_FACT)]
    answer_kinds: tuple[UtteranceKind, ...] = ("challenge_answer", "repeat")
    for fact, answer in answers:
        for kind in answer_kinds:
            add(Say(kind, answer, parts=(answer,)), fact, says, key=part_key(kind, answer))
    add(Say("nudge", NUDGE), "nudge", says)
    for line in PATIENCE_LINES:
        add(Say("patience_prompt", line), "patience_prompt", prompts)
    if interruptions is not None:
        add(
            Say("interruption", INTERRUPTION_LINE[interruptions.reason]),
            f"interruption_{interruptions.reason}",
            says,
        )
    return tuple(forms)


__all__ = [
    "REPEAT_FLOOR_WPM",
    "REPEAT_SLOWDOWN",
    "SayForm",
    "clearer_speech",
    "part_key",
    "render_key",
    "said_key",
    "say_bounds",
    "say_forms",
    "text_key",
]
