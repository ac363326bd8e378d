"""Rating state of one server start: each rater's order, what is served next, label validation.

Kept free of HTTP so the rules (order, one label per item, answers within the declared options)
are tested directly; the server only translates requests into these calls.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

from voice_audit.analysis.rating.blinding import ClipRegistry, new_token
from voice_audit.analysis.rating.clips import clip_wav
from voice_audit.analysis.rating.intelligibility import QUESTION as INTELLIGIBILITY_QUESTION
from voice_audit.analysis.rating.intelligibility import clean_transcript
from voice_audit.analysis.rating.observer import ACT_CHOICES, FACTS_QUESTION, fact_label
from voice_audit.analysis.rating.observer import QUESTION as OBSERVER_QUESTION
from voice_audit.analysis.rating.scales import QUALITY_SCALES
from voice_audit.analysis.rating.store import LabelRecord, LabelStore, write_items
from voice_audit.analysis.rating.tasks import QUESTIONS, Item, TaskSpec, rater_order
from voice_audit.harness.runlog import RunReader

CLIP_CACHE_SIZE = 24
CLIP_TIMEOUT_S = 30.0

AUDIO_HINTS = {
    "caller": "The caller's voice only.",
    "agent": "The agent's voice only.",
    "call": "The whole call: caller on the left, agent on the right.",
}


class LabelError(ValueError):
    """A label the server refuses; ``status`` is the HTTP status to answer with."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


class RatingSession:
    """One task over one run folder; labels go to disk before the next item is handed out."""

    def __init__(self, run_dir: str | Path, spec: TaskSpec) -> None:
        self.run_dir = Path(run_dir)
        self.reader = RunReader(run_dir)
        self.spec = spec
        self.session_id = new_token(9)
        self.store = LabelStore(run_dir)
        self.clips = ClipRegistry()
        self._items = {i.key: i for i in spec.items}
        self._orders: dict[str, list[Item]] = {}
        self._served: dict[tuple[str, str], float] = {}
        self._cache: OrderedDict[str, bytes] = OrderedDict()
        self._lock = asyncio.Lock()
        write_items(run_dir, spec)

    def _order(self, rater: str) -> list[Item]:
        if rater not in self._orders:
            self._orders[rater] = rater_order(self.spec, rater)
        return self._orders[rater]

    def _next(self, rater: str) -> tuple[int, Item] | None:
        done = self.store.done(self.spec.task, rater)
        for pos, item in enumerate(self._order(rater)):
            if item.key not in done:
                return pos, item
        return None

    def next_payload(self, rater: str) -> dict[str, Any]:
        """What the browser may know about the next item: a clip token, the question, the choices."""
        total = len(self.spec.items)
        nxt = self._next(rater)
        done = len(self.store.done(self.spec.task, rater))
        if nxt is None:
            return {"done": True, "completed": done, "total": total}
        _, item = nxt
        self._served.setdefault((rater, item.key), time.monotonic())
        payload: dict[str, Any] = {
            "done": False,
            "completed": done,
            "total": total,
            "clip": self.clips.token_for(item.key),
            "kind": self.spec.task,
            "audio_hint": AUDIO_HINTS[item.audio],
        }
        if item.task == "intelligibility":
            payload["question"] = INTELLIGIBILITY_QUESTION
        elif item.task == "observer":
            labels: dict[str, str] = dict(ACT_CHOICES)
            payload["question"] = OBSERVER_QUESTION
            payload["transcript"] = item.text or ""
            payload["options"] = [labels[a] for a in item.options]
            payload["facts_question"] = FACTS_QUESTION
            payload["facts"] = [fact_label(f) for f in item.facts]
        elif item.axis is not None:
            payload["question"] = QUESTIONS.get(item.axis, "Which level do you hear?")
            payload["options"] = list(self.spec.option_labels.get(item.axis, item.options))
        else:
            payload["question"] = "Rate the agent in this call."
            payload["scales"] = [
                {"name": s.name, "title": s.title, "question": s.question, "points": list(s.points)}
                for s in QUALITY_SCALES
            ]
        return payload

    def _validate_observer(self, item: Item, answer: object) -> tuple[str, tuple[str, ...]]:
        if not isinstance(answer, dict) or set(answer) != {"act", "facts"}:
            raise LabelError("answer must give an act and a (possibly empty) list of facts")
        act, facts = answer["act"], answer["facts"]
        if not isinstance(act, int) or isinstance(act, bool) or not 1 <= act <= len(item.options):
            raise LabelError(f"act must be an option number 1..{len(item.options)}")
        if not isinstance(facts, list) or any(
            not isinstance(f, int) or isinstance(f, bool) or not 1 <= f <= len(item.facts) for f in facts
        ):
            raise LabelError(f"facts must be option numbers 1..{len(item.facts)}")
        return item.options[act - 1], tuple(item.facts[f - 1] for f in sorted(set(facts)))

    def _validate(self, item: Item, answer: object) -> tuple[str | None, dict[str, int]]:
        if item.task == "perceptibility":
            if (
                not isinstance(answer, int)
                or isinstance(answer, bool)
                or not 1 <= answer <= len(item.options)
            ):
                raise LabelError(f"answer must be an option number 1..{len(item.options)}")
            return item.options[answer - 1], {}
        if not isinstance(answer, dict) or set(answer) != {s.name for s in QUALITY_SCALES}:
            raise LabelError("answer must give a point on every scale")
        scores: dict[str, int] = {}
        for scale in QUALITY_SCALES:
            v = answer[scale.name]
            if not isinstance(v, int) or isinstance(v, bool) or not 1 <= v <= len(scale.points):
                raise LabelError(f"{scale.name} must be 1..{len(scale.points)}")
            scores[scale.name] = v
        return None, scores

    async def submit(self, rater: str, clip: str, answer: object, plays: int) -> None:
        """Validate and store a label for the rater's current item; anything else is refused."""
        key = self.clips.item_for(clip)
        if key is None or key not in self._items:
            raise LabelError("unknown clip", 404)
        item = self._items[key]
        act: str | None = None
        facts: tuple[str, ...] = ()
        heard: str | None = None
        if item.task == "intelligibility":
            try:
                heard = clean_transcript(answer)
            except ValueError as exc:
                raise LabelError(str(exc)) from None
            perceived, scores = None, dict[str, int]()
        elif item.task == "observer":
            act, facts = self._validate_observer(item, answer)
            perceived, scores = None, dict[str, int]()
        else:
            perceived, scores = self._validate(item, answer)
        async with self._lock:
            nxt = self._next(rater)
            if nxt is None or nxt[1].key != key:
                raise LabelError("this clip is not the one being rated; reload the page", 409)
            served = self._served.pop((rater, key), time.monotonic())
            record = LabelRecord(
                task=item.task,
                rater=rater,
                item=key,
                episode_id=item.episode_id,
                audio=item.audio,
                axis=item.axis,
                options=item.options,
                intended=item.intended,
                perceived=perceived,
                scores=scores,
                turn=item.turn,
                act=act,
                facts=facts,
                reference=item.reference,
                heard=heard,
                position=nxt[0],
                plays=max(0, min(plays, 10_000)),
                response_ms=int((time.monotonic() - served) * 1000),
                session=self.session_id,
                labelled_at=dt.datetime.now(dt.UTC),
            )
            await asyncio.to_thread(self.store.append, record)

    async def clip_bytes(self, clip: str) -> bytes | None:
        """WAV bytes for a clip token, cut on first use and kept in a small in-memory cache."""
        key = self.clips.item_for(clip)
        if key is None or key not in self._items:
            return None
        if key in self._cache:
            self._cache.move_to_end(key)
            return self._cache[key]
        item = self._items[key]
        async with asyncio.timeout(CLIP_TIMEOUT_S):
            data = await asyncio.to_thread(clip_wav, self.reader, item.episode_id, item.audio, turn=item.turn)
        self._cache[key] = data
        while len(self._cache) > CLIP_CACHE_SIZE:
            self._cache.popitem(last=False)
        return data
