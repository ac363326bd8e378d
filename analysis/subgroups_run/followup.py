"""`plan-followup`: a new campaign that spends more matched pairs on a run's top-K critical subgroups.

Targeted acquisition (docs/method/index.md section 7): the follow-up keeps the run's locked scenarios, agents,
backends, channel and pacing, lists only the pair specs that feed the critical subgroups, and runs
them with every voice the catalogue has and more replicates. Its seed derives from the parent seed
and the new batch name: the planner derives caller ids from the seed, so reusing the parent seed
would re-place the very same callers (no new evidence) and collide with their ids when pooled.
The targets are also written to <run>/followups/<batch>.json, so `subgroups --compare` later knows
which subgroups the follow-up was for.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import Field, ValidationError

from voice_audit.analysis.subgroups import SubgroupError
from voice_audit.analysis.subgroups_run.options import MiningOptions
from voice_audit.analysis.subgroups_run.run_mining import RunMining, mine_run
from voice_audit.analysis.subgroups_run.targets import Target, critical, map_target, spec_of_episodes
from voice_audit.harness.model.campaign import Campaign
from voice_audit.harness.runlog import RunReader, atomic_write_bytes, atomic_write_json
from voice_audit.personas import load_catalogue
from voice_audit.scenarios.base import Frozen
from voice_audit.scenarios.errors import VoiceAuditError

FOLLOWUPS_DIR = "followups"
TARGETS_SCHEMA = "voice-audit/followup-targets"


class FollowupOptions(Frozen):
    metric: str = "outcome_acceptable"
    top: int = Field(default=3, ge=1)
    batch: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_.-]+$")
    replicates: int | None = Field(default=None, ge=1)
    voices: int | None = Field(default=None, ge=1)
    max_pairs_per_subgroup: int = Field(default=3, ge=1)


@dataclass(frozen=True)
class FollowupPlan:
    campaign: Campaign
    yaml_text: str
    targets: tuple[Target, ...]
    parent_run: str
    targets_path: Path | None


def derived_seed(parent_seed: int, batch: str) -> int:
    """Seed lineage: sha256('<parent seed>|<batch>'), first 8 hex digits."""
    return int(hashlib.sha256(f"{parent_seed}|{batch}".encode()).hexdigest()[:8], 16)


def _next_batch(run_dir: Path, parent_batch: str) -> str:
    n = 1
    while (run_dir / FOLLOWUPS_DIR / f"{parent_batch}-fu{n}.json").exists():
        n += 1
    return f"{parent_batch}-fu{n}"


def _relocate(path: str | None, parent_file: str, out_dir: Path) -> str | None:
    """A campaign-relative path (scenario_dir, catalogue) re-expressed relative to the new file."""
    if path is None:
        return None
    absolute = (Path(parent_file).parent / path).resolve()
    return os.path.relpath(absolute, out_dir.resolve())


def _comment(lines: list[str], indent: str = "") -> str:
    return "".join(f"{indent}# {ln}\n" if ln else f"{indent}#\n" for ln in lines)


def _target_lines(t: Target, metric: str, names: dict[int, str]) -> list[str]:
    lines = [
        f"target {t.rank}: {t.itemset}  ({metric} divergence {t.divergence:+.3f}, support {t.support:.3f} = "
        f"{t.support_count} calls, q {t.q_value:.3g})",
    ]
    for attr in t.unsettable:
        if attr == "agent":
            lines.append(
                f"  agent={t.items[attr]}: the follow-up keeps every agent of the parent, so this agent gets its share of each pair"
            )
            continue
        if attr == "channel":
            lines.append(
                f"  channel={t.items[attr]}: the channel is campaign-wide; the parent's channel is kept"
            )
            continue
        over = "; ".join(
            f"{axis}=" + ", ".join(f"{lv} (x{lift:.2f})" for lv, lift in levels)
            for axis, levels in t.over_represented.items()
        )
        lines.append(
            f"  {attr}={t.items[attr]} cannot be set directly; mapped to the persona levels over-represented "
            f"in this subgroup: {over or 'none (no persona level stands out)'}"
        )
    for s, rate in sorted(t.pair_rates.items(), key=lambda kv: -kv[1]):
        lines.append(f"  pair '{names[s]}': {rate:.0%} of its calls fell in the subgroup")
    return lines


def _dump(key: str, value: Any) -> str:
    return yaml.safe_dump(
        {key: value}, sort_keys=False, default_flow_style=False, allow_unicode=True, width=110
    )


def _render(data: dict[str, Any], header: list[str], pair_notes: list[list[str]]) -> str:
    out = [_comment(header)]
    for key, value in data.items():
        if key != "pairs":
            out.append(_dump(key, value))
            continue
        out.append("pairs:\n")
        for pair, notes in zip(value, pair_notes, strict=True):
            out.append(_comment(notes, "  "))
            body = yaml.safe_dump(
                [pair], sort_keys=False, default_flow_style=False, allow_unicode=True, width=110
            )
            out.append("".join("  " + ln + "\n" for ln in body.splitlines()))
    return "".join(out)


def plan_followup(
    run_dir: str | Path,
    output: str | Path,
    options: FollowupOptions | None = None,
    mining_options: MiningOptions | None = None,
    mining: RunMining | None = None,
    write: bool = True,
) -> FollowupPlan:
    """Mine the run, pick its top-K critical subgroups on `metric`, and write the follow-up campaign YAML."""
    opts = options or FollowupOptions()
    run = Path(run_dir)
    out_path = Path(output)
    manifest = RunReader(run).manifest
    parent = manifest.campaign
    if mining is not None and mining.options.realised:
        raise SubgroupError(
            "follow-up targets must be pre-treatment subgroups; mine without realised-call attributes"
        )
    mining_opts = (mining_options or MiningOptions()).model_copy(update={"realised": False})
    result = mining or mine_run(run, mining_opts)
    specs = spec_of_episodes(result.table.raw, parent)
    targets = [
        map_target(result, parent, opts.metric, rank, row, specs, opts.max_pairs_per_subgroup)
        for rank, row in critical(result, opts.metric, opts.top)
    ]
    chosen: dict[int, set[str]] = {}
    for t in targets:
        for s, scen in t.pairs.items():
            chosen.setdefault(s, set()).update(scen)
    if not chosen:
        raise SubgroupError(
            "the critical subgroups match no pair spec of the run's campaign; was the campaign edited?"
        )
    batch = opts.batch or _next_batch(run, parent.batch)
    seed = derived_seed(parent.seed, batch)
    names = {i: p.name or f"pair {i}" for i, p in enumerate(parent.pairs)}
    pairs: list[dict[str, Any]] = []
    notes: list[list[str]] = []
    for s in sorted(chosen):
        spec = parent.pairs[s].model_dump(mode="json", exclude_none=True)
        spec["name"] = names[s]
        spec["scenarios"] = [x for x in parent.scenarios if x in chosen[s]]
        pairs.append(spec)
        notes.append([f"feeds target {t.rank} ({t.itemset})" for t in targets if s in t.pairs])
    try:
        catalogue = (
            load_catalogue(Path(manifest.campaign_file).parent / parent.catalogue)
            if parent.catalogue
            else load_catalogue()
        )
        realisations = min(
            len(catalogue.voice_profile[{**parent.pairs[s].base, **side}["voice_profile"]].realisations)
            for s in chosen
            for side in (parent.pairs[s].a, parent.pairs[s].b)
        )
    except (VoiceAuditError, OSError, KeyError, ValueError):
        realisations = parent.voices
    voices = opts.voices or max(parent.voices, realisations)
    replicates = opts.replicates or 2 * parent.replicates
    dumped = parent.model_dump(mode="json")
    data: dict[str, Any] = {
        "name": f"{parent.name}-followup"[:100],
        "description": (
            f"Follow-up of run {manifest.run_id} (campaign {parent.name}, sha256 {manifest.campaign_sha256[:12]}): "
            f"more matched pairs for the top {len(targets)} critical subgroups on {opts.metric}"
        ),
        "seed": seed,
        "batch": batch,
    }
    for key in ("scenario_dir", "catalogue"):
        moved = _relocate(dumped[key], manifest.campaign_file, out_path.parent)
        if moved is not None:
            data[key] = moved
    data["scenarios"] = dumped["scenarios"]
    data["agents"] = dumped["agents"]
    data["pairs"] = pairs
    data["voices"] = voices
    data["replicates"] = replicates
    for key in ("concurrency", "pacing", "tts", "asr", "channel", "timeouts", "retries"):
        data[key] = dumped[key]
    try:
        campaign = Campaign.model_validate(data)
    except ValidationError as exc:
        raise SubgroupError(f"the follow-up campaign does not validate: {exc.errors()[0]['msg']}") from None
    header = [
        f"Follow-up campaign written by `voice-audit plan-followup` for run {manifest.run_id}.",
        f"Parent campaign: {parent.name} ({manifest.campaign_file}), sha256 {manifest.campaign_sha256}.",
        f"Seed lineage: parent seed {parent.seed}, batch {batch}: seed = int(sha256('{parent.seed}|{batch}')[:8], 16) = {seed}.",
        "A new seed gives new synthetic callers; the parent seed would re-place the same callers.",
        f"Scenarios, agents, backends, channel, pacing and timeouts are the parent's. voices {voices}, replicates {replicates}.",
        f"Critical subgroups: top {len(targets)} on {opts.metric} ({result.info[opts.metric].direction} is harmful), "
        f"after redundancy pruning, ranked by {result.options.rank_by}:",
        "",
    ]
    for t in targets:
        header += _target_lines(t, opts.metric, names)
    header += ["", "After the run: voice-audit subgroups runs/<followup> --compare " + str(run)]
    text = _render(data, header, notes)
    if Campaign.model_validate(yaml.safe_load(text)) != campaign:
        raise SubgroupError("internal error: the rendered follow-up YAML does not read back as the campaign")
    targets_path = None
    if write:
        atomic_write_bytes(out_path, text.encode("utf-8"))
        targets_path = run / FOLLOWUPS_DIR / f"{batch}.json"
        doc = _targets_doc(manifest.run_id, opts, result, targets, campaign, out_path, names)
        atomic_write_json(targets_path, doc)
    return FollowupPlan(campaign, text, tuple(targets), manifest.run_id, targets_path)


def _targets_doc(
    run_id: str,
    opts: FollowupOptions,
    mining: RunMining,
    targets: list[Target],
    campaign: Campaign,
    out: Path,
    names: dict[int, str],
) -> dict[str, Any]:
    return {
        "schema": TARGETS_SCHEMA,
        "schema_version": 1,
        "parent_run": run_id,
        "metric": opts.metric,
        "direction": mining.info[opts.metric].direction,
        "batch": campaign.batch,
        "seed": campaign.seed,
        "campaign_file": str(out),
        "campaign_sha256": campaign.sha256,
        "mining": mining.options.model_dump(mode="json"),
        "edges": {c: {"labels": lb, "cut_points": cp} for c, (lb, cp) in mining.table.edges.items()},
        "targets": [
            {
                "rank": t.rank,
                "itemset": t.itemset,
                "items": t.items,
                "divergence": t.divergence,
                "support": t.support,
                "support_count": t.support_count,
                "q_value": t.q_value if t.q_value == t.q_value else None,
                "unsettable": list(t.unsettable),
                "over_represented": {
                    a: [[lv, lift] for lv, lift in v] for a, v in t.over_represented.items()
                },
                "pairs": [names[s] for s in t.pairs],
            }
            for t in targets
        ],
    }
