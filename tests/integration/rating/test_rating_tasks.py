"""Items come from the run folder; each rater gets a stable seeded order."""

from __future__ import annotations

from pathlib import Path

from voice_audit.analysis.rating.tasks import build_task, rater_order
from voice_audit.harness.runlog import RunReader


def test_perceptibility_items_use_the_manipulated_levels(pristine_run: Path) -> None:
    spec = build_task(pristine_run, "perceptibility")
    records = list(RunReader(pristine_run).records())
    assert len(spec.items) == len(records) == 8
    assert spec.audio == "caller" and spec.seed == 11
    by_axis = {i.axis for i in spec.items}
    assert by_axis == {"accent", "affect"}
    for item in spec.items:
        rec = next(r for r in records if r.header.episode_id == item.episode_id)
        assert item.axis in rec.header.contrast
        assert item.intended == getattr(rec.header.condition, str(item.axis))
        assert item.intended in item.options
    accent = next(i for i in spec.items if i.axis == "accent")
    assert accent.options == ("l2_spanish", "us_general")
    # Labels come from the run's own catalogue, matched by hash.
    assert spec.option_labels["accent"] == ("Spanish (Spain) L1", "General American")
    assert spec.option_labels["affect"] == ("Calm", "Frustrated")


def test_quality_items_are_one_per_episode(pristine_run: Path) -> None:
    spec = build_task(pristine_run, "quality")
    assert spec.audio == "call" and len(spec.items) == 8
    assert len({i.episode_id for i in spec.items}) == 8
    assert build_task(pristine_run, "quality", audio="agent").audio == "agent"


def test_order_is_seeded_per_rater(pristine_run: Path) -> None:
    spec = build_task(pristine_run, "perceptibility")
    a1 = [i.key for i in rater_order(spec, "alice")]
    assert a1 == [i.key for i in rater_order(spec, "alice")]
    assert sorted(a1) == sorted(i.key for i in spec.items)
    others = {tuple(i.key for i in rater_order(spec, f"r{n}")) for n in range(6)}
    assert len(others) > 1, "different raters should not all share one order"
    reseeded = build_task(pristine_run, "perceptibility", seed=12)
    assert [i.key for i in rater_order(reseeded, "alice")] != a1
