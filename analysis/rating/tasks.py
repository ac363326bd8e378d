"""Rating items built from a run folder, and each rater's seeded order.

An item is what one rater judges once. Its ``key`` names the episode and axis, so it stays on the
server: the browser only ever sees an opaque clip token for it (see ``blinding``).
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Literal

from pydantic import Field

from voice_audit.analysis.rating.intelligibility import intelligibility_items
from voice_audit.analysis.rating.observer import observer_items
from voice_audit.harness.model import EpisodeRecord
from voice_audit.harness.runlog import RunReader
from voice_audit.personas import AXES
from voice_audit.scenarios.base import Frozen

TaskKind = Literal["perceptibility", "quality", "observer", "intelligibility"]
AudioPart = Literal["caller", "agent", "call"]
TASKS: tuple[TaskKind, ...] = ("perceptibility", "quality", "observer", "intelligibility")

_ASKED: dict[str, str] = {
    "accent": "Which accent does the caller have?",
    "voice_profile": "Which voice profile does the caller have?",
    "affect": "Which affect does the caller's voice carry?",
    "disfluency": "How fluent is the caller?",
    "wording": "How does the caller frame the request?",
}
QUESTIONS: dict[str, str] = {axis: _ASKED[axis] for axis in AXES}
"""The question a rater is asked about each persona axis, in the axes' order (`personas.AXES`:
an axis added there without a question here fails at import, not in front of a rater)."""


class Item(Frozen):
    """One judgement to make. ``options`` are level keys, in the fixed order shown for the axis."""

    key: str
    task: TaskKind
    episode_id: str
    audio: AudioPart
    axis: str | None = None
    intended: str | None = None
    options: tuple[str, ...] = ()
    turn: int | None = None
    text: str | None = None
    facts: tuple[str, ...] = ()
    reference: str | None = (
        None  # intelligibility: the scripted words of the turn (never sent to the browser)
    )


class TaskSpec(Frozen):
    """Everything the server needs for one task; written un-blinded to ratings/items.json only."""

    task: TaskKind
    run_id: str
    seed: int
    audio: AudioPart
    items: tuple[Item, ...]
    option_labels: dict[str, tuple[str, ...]] = Field(default_factory=dict)


def _usable(reader: RunReader) -> list[EpisodeRecord]:
    """Completed calls with a recording: a failed call has nothing fair to rate."""
    out = []
    for rec in reader.records():
        if rec.outcome.status == "completed" and reader.audio_path(rec.header.episode_id).is_file():
            out.append(rec)
    return sorted(out, key=lambda r: r.header.episode_id)


def manipulated_levels(records: Iterable[EpisodeRecord]) -> dict[str, list[str]]:
    """Per axis, the levels that axis takes in episodes where it is the planned contrast.

    These are the choices a rater gets: held-constant base levels of other pairs are not part of
    the question "which of the manipulated levels is this?", and would only lower chance.
    """
    levels: dict[str, set[str]] = {}
    for rec in records:
        for axis in rec.header.contrast:
            levels.setdefault(axis, set()).add(getattr(rec.header.condition, axis))
    return {axis: sorted(v) for axis, v in sorted(levels.items()) if len(v) >= 2}


def display_labels(reader: RunReader, levels: Mapping[str, Sequence[str]]) -> dict[str, tuple[str, ...]]:
    """Readable option labels from the run's own persona catalogue (checked by hash), else the keys tidied.

    The same labels are shown for every clip of an axis, so they reveal the question, not the answer.
    """
    catalogue = _run_catalogue(reader)
    out: dict[str, tuple[str, ...]] = {}
    for axis, keys in levels.items():
        table = getattr(catalogue, axis, {}) if catalogue is not None else {}
        out[axis] = tuple(table[k].label if k in table else k.replace("_", " ").capitalize() for k in keys)
    return out


def _run_catalogue(reader: RunReader) -> object | None:
    try:
        from voice_audit.personas import load_catalogue
    except ImportError:  # pragma: no cover - personas ships with the package
        return None
    manifest = reader.manifest
    candidates: list[Path | None] = [None]
    if manifest.campaign.catalogue:
        candidates = [Path(manifest.campaign_file).parent / manifest.campaign.catalogue]
    for path in candidates:
        try:
            cat = load_catalogue(path)
        except Exception:  # a moved or edited catalogue only costs nicer labels
            continue
        if cat.sha256 == manifest.catalogue_sha256:
            return cat
    return None


def build_task(
    run_dir: str | Path, task: TaskKind, *, audio: AudioPart | None = None, seed: int | None = None
) -> TaskSpec:
    """The items of one task for a run folder (perceptibility: one per episode and contrast axis;
    quality: one per episode; observer: a seeded sample of each call's agent turns, agent audio only;
    intelligibility: a seeded sample of each voice's distinct caller lines, caller audio only)."""
    reader = RunReader(run_dir)
    records = _usable(reader)
    items: list[Item] = []
    labels: dict[str, tuple[str, ...]] = {}
    if task == "perceptibility":
        part: AudioPart = audio or "caller"
        levels = manipulated_levels(records)
        labels = display_labels(reader, levels)
        for rec in records:
            for axis in rec.header.contrast:
                if axis in levels:
                    items.append(
                        Item(
                            key=f"perceptibility:{rec.header.episode_id}:{axis}",
                            task=task,
                            episode_id=rec.header.episode_id,
                            audio=part,
                            axis=axis,
                            intended=getattr(rec.header.condition, axis),
                            options=tuple(levels[axis]),
                        )
                    )
    elif task == "intelligibility":
        part = "caller"
        order_seed = reader.manifest.campaign.seed if seed is None else seed
        items = [
            Item(task=task, audio=part, **fields)
            for fields in intelligibility_items(reader, records, order_seed)
        ]
    elif task == "observer":
        part = "agent"
        order_seed = reader.manifest.campaign.seed if seed is None else seed
        items = [
            Item(task=task, audio=part, **fields) for fields in observer_items(reader, records, order_seed)
        ]
    else:
        part = audio or "call"
        items = [
            Item(
                key=f"quality:{rec.header.episode_id}",
                task=task,
                episode_id=rec.header.episode_id,
                audio=part,
            )
            for rec in records
        ]
    return TaskSpec(
        task=task,
        run_id=reader.manifest.run_id,
        seed=reader.manifest.campaign.seed if seed is None else seed,
        audio=part,
        items=tuple(items),
        option_labels=labels,
    )


def rater_order(spec: TaskSpec, rater: str) -> list[Item]:
    """A seeded shuffle per rater: stable across restarts, different between raters."""
    digest = hashlib.sha256(f"{spec.seed}\0{spec.task}\0{rater}".encode()).digest()
    items = sorted(spec.items, key=lambda i: i.key)
    random.Random(int.from_bytes(digest[:8], "big")).shuffle(items)
    return items
