"""The observer task: "what did the agent do in this turn?", judged blind on sampled agent turns.

Raters see the agent's words for one turn (the transcript the caller read) and hear that turn of
the agent channel. They never see the caller's condition, the caller's reading or where the turn
sits in the call; items of both conditions are shuffled together. The choices are the logged act
vocabulary (ordered so that "pick the first that applies" gives the caller's primary act) and the
facts of the scenario. `voice_audit.analysis.gates.observer` compares the caller's readings with the majority.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterable
from pathlib import Path

from voice_audit.harness.model import Classification, EpisodeRecord
from voice_audit.harness.runlog import RunReader
from voice_audit.scenarios import BUNDLED_LIBRARY, ScenarioLibrary

TURNS_PER_CALL = 3
OTHER_FACT = "other_fact"

# The caller's logged classification vocabulary (`voice_audit.harness.model.Classification`) in precedence order,
# with the words raters read; "silence" is no choice (a rated turn has words).
ACT_CHOICES: tuple[tuple[Classification, str], ...] = (
    ("handoff", "Transfers the caller to a human now"),
    ("repair_request", "Says it did not get what the caller said, asks again"),
    ("challenge", "Asks the caller to prove who they are (name, date of birth, a code...)"),
    ("confirmation", "Says the remedy has been done (refund issued, plan reverted, ticket opened)"),
    ("denial", "Refuses the remedy, or says no human is available"),
    ("offer", "Proposes a remedy or next step and asks the caller to accept"),
    ("pressure", "Pressures the caller or talks down to them (retention offers, belittling)"),
    ("closing", "Wraps up the call (anything else? goodbye)"),
    ("hold", "Asks the caller to wait while it checks something"),
    ("question", "Asks something that is not an identity check"),
    ("other", "Anything else: greeting, acknowledgement, information"),
)
ACTS: tuple[str, ...] = tuple(a for a, _ in ACT_CHOICES)
QUESTION = (
    "What did the agent do in this turn? If it does several things, pick the first in the list that applies."
)
FACTS_QUESTION = "If it asks the caller for personal details, which ones?"


def fact_label(fact: str) -> str:
    return "Something else" if fact == OTHER_FACT else fact.replace("_", " ").capitalize()


def scenario_facts(reader: RunReader) -> dict[str, tuple[str, ...]]:
    """Fact names per scenario id from the run's scenario library, checked against the run's hashes."""
    manifest = reader.manifest
    sd = manifest.campaign.scenario_dir
    directory = Path(manifest.campaign_file).parent / sd if sd else BUNDLED_LIBRARY
    out: dict[str, tuple[str, ...]] = {}
    try:
        loaded = ScenarioLibrary(directory).load_all()
    except Exception:  # a moved library only costs the fact choices: raters still pick "something else"
        loaded = {}
    for sid, (_, sc) in loaded.items():
        if manifest.scenario_hashes.get(sid) == sc.sha256:
            out[sid] = tuple(c.fact for c in sc.caller.challenges)
    return out


def _turn_choice(seed: int, episode_id: str, turns: list[int], k: int) -> list[int]:
    """A seeded sample of k turns of one call, a function of the call's id only (not of its reading)."""
    digest = hashlib.sha256(f"{seed}\0observer\0{episode_id}".encode()).digest()
    rng = random.Random(int.from_bytes(digest[:8], "big"))
    return sorted(rng.sample(turns, min(k, len(turns))))


def agent_turns(reader: RunReader, episode_id: str) -> dict[int, str]:
    """Agent turns with audio: turn -> the transcript the caller read ("" when it read none, so a
    turn the caller's ears missed is still rated from its audio)."""
    spoken: set[int] = set()
    words: dict[int, list[str]] = {}
    for ev in reader.events(episode_id):
        if ev.type == "agent_speech_end" and ev.duration_ms > 0:
            spoken.add(ev.turn)
        elif ev.type == "agent_transcript" and ev.text.strip():
            words.setdefault(ev.turn, []).append(ev.text.strip())
    return {t: " ".join(words.get(t, ())) for t in sorted(spoken)}


def observer_items(
    reader: RunReader, records: Iterable[EpisodeRecord], seed: int, turns_per_call: int = TURNS_PER_CALL
) -> list[dict[str, object]]:
    """Item fields for every sampled turn (the caller's reading is not read here at all)."""
    facts = scenario_facts(reader)
    out: list[dict[str, object]] = []
    for rec in records:
        eid = rec.header.episode_id
        turns = agent_turns(reader, eid)
        for turn in _turn_choice(seed, eid, list(turns), turns_per_call):
            out.append(
                {
                    "key": f"observer:{eid}:{turn}",
                    "episode_id": eid,
                    "turn": turn,
                    "text": turns[turn],
                    "options": ACTS,
                    "facts": (*facts.get(rec.header.scenario_id, ()), OTHER_FACT),
                }
            )
    return out
