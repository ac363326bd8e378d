"""Loading a campaign file, checking it against scenarios, personas and registries, and planning pairs."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Literal

from pydantic import ValidationError

from voice_audit.harness.endpoints import url_problem
from voice_audit.harness.model.campaign import DEFAULT_NAME, AgentSpec, BackendSpec, Campaign
from voice_audit.harness.model.secrets import mask_url
from voice_audit.harness.prices import check_price_agents, load_prices
from voice_audit.harness.registry import (
    AGENT_GROUP,
    agent_adapter_names,
    asr_backend_names,
    is_module_ref,
    load_object,
    tts_backend_names,
)
from voice_audit.harness.speakers import check_speakers
from voice_audit.harness.voicing import check_voicing
from voice_audit.personas import (
    AXES,
    Axis,
    CallerCondition,
    Catalogue,
    MatchedPair,
    check_level,
    load_catalogue,
)
from voice_audit.scenarios import (
    BUNDLED_LIBRARY,
    ConfigError,
    ConfigErrors,
    Frozen,
    Scenario,
    ScenarioLibrary,
    VoiceAuditError,
    sha256_of,
)
from voice_audit.scenarios.yamlsrc import YamlDocument, load_yaml, pydantic_error


class PlannedEpisode(Frozen):
    """One call to place: a side of a matched pair against one agent."""

    episode_id: str
    side: Literal["a", "b"]
    agent: str
    pair: MatchedPair
    pair_name: str
    caller_id: str


class Plan(Frozen):
    campaign_sha256: str
    episodes: tuple[PlannedEpisode, ...]

    @cached_property
    def sha256(self) -> str:
        return sha256_of(self)

    def pairs(self) -> list[tuple[PlannedEpisode, PlannedEpisode]]:
        by_pair: dict[str, dict[str, PlannedEpisode]] = {}
        for ep in self.episodes:
            by_pair.setdefault(ep.pair.pair_id, {})[ep.side] = ep
        return [(sides["a"], sides["b"]) for sides in by_pair.values()]


@dataclass(frozen=True)
class LoadedCampaign:
    path: Path
    campaign: Campaign
    scenarios: dict[str, Scenario]
    scenario_dir: Path
    catalogue: Catalogue
    plan: Plan


def _hex(*parts: object, n: int = 16) -> str:
    return hashlib.sha256("|".join(str(p) for p in parts).encode()).hexdigest()[:n]


def line_seed(campaign_seed: int, variant: int) -> int:
    """The seed of line variant `variant`: the same for every pair, voice and scenario of a campaign."""
    return int(_hex("line-variant", campaign_seed, variant, n=8), 16)


def _check_backends(doc: YamlDocument, campaign: Campaign) -> None:
    checks: list[tuple[tuple[str | int, ...], str, Callable[[], list[str]]]] = [
        (("tts",), campaign.tts.name, tts_backend_names),
        (("asr",), campaign.asr.name, asr_backend_names),
    ]
    checks += [
        (("cell_tts", i, "tts"), v.tts.name, tts_backend_names) for i, v in enumerate(campaign.cell_tts)
    ]
    for where, name, known in checks:
        if is_module_ref(name):
            continue
        names = known()
        key = "asr" if where[0] == "asr" else "tts"
        if name not in names:
            raise doc.error(
                (*where, "name"),
                f"unknown {key.upper()} backend '{name}' (known: {', '.join(sorted(names))})",
                fix="use a known name, or module:attr for your own backend",
            )


def _check_agents(doc: YamlDocument, campaign: Campaign) -> None:
    names = agent_adapter_names()
    for i, agent in enumerate(campaign.agents):
        if is_module_ref(agent.adapter):
            continue
        if agent.adapter not in names:
            raise doc.error(
                ("agents", i, "adapter"),
                f"unknown agent adapter '{agent.adapter}' for agent '{agent.name}' "
                f"(known: {', '.join(sorted(names)) or 'none installed'})",
                fix="use a registered adapter name or module:attr",
            )


def _level_fix(catalogue: Catalogue, axis: str) -> str:
    """What to write instead of an unknown axis or level."""
    if axis not in AXES:
        return f"use one of the axes {', '.join(AXES)}"
    return f"use one of the levels {', '.join(catalogue.levels(axis))}"


def _resolve_condition(
    doc: YamlDocument,
    catalogue: Catalogue,
    index: int,
    side: str,
    levels: dict[str, str],
    where: dict[str, str],
) -> CallerCondition:
    for axis, level in levels.items():
        problem = check_level(catalogue, axis, level)
        if problem:
            key = ("pairs", index, where[axis], axis)
            raise doc.error(key, f"pair {index}: {problem}", fix=_level_fix(catalogue, axis))
    missing = [a for a in AXES if a not in levels]
    if missing:
        raise doc.error(
            ("pairs", index),
            f"pair {index}: condition {side} has no level for axis {', '.join(missing)}",
            fix="set it in the pair's base (shared) or in a/b",
        )
    return CallerCondition(**levels)


_Resolved = tuple[str, tuple[Axis, ...], CallerCondition, CallerCondition, tuple[str, ...] | None]


def _tts_label(spec: BackendSpec, other: BackendSpec) -> str:
    return f"'{spec.name}' {spec.options}" if spec.name == other.name else f"'{spec.name}'"


def _check_cell_tts(doc: YamlDocument, campaign: Campaign, catalogue: Catalogue) -> None:
    for i, voicing in enumerate(campaign.cell_tts):
        for axis, level in voicing.when.items():
            problem = check_level(catalogue, axis, level)
            if problem:
                raise doc.error(
                    ("cell_tts", i, "when", axis), f"cell_tts {i}: {problem}", fix=_level_fix(catalogue, axis)
                )


def _resolve_pairs(doc: YamlDocument, campaign: Campaign, catalogue: Catalogue) -> list[_Resolved]:
    _check_cell_tts(doc, campaign, catalogue)
    resolved: list[_Resolved] = []
    for i, spec in enumerate(campaign.pairs):
        sides = []
        for side, own in (("a", spec.a), ("b", spec.b)):
            levels = dict(spec.base)
            where = dict.fromkeys(spec.base, "base")
            levels.update(own)
            where.update(dict.fromkeys(own, side))
            sides.append(_resolve_condition(doc, catalogue, i, side, levels, where))
        cond_a, cond_b = sides
        differing = set(cond_a.differing_axes(cond_b))
        undeclared = sorted(differing - set(spec.contrast))
        if undeclared:
            raise doc.error(
                ("pairs", i),
                f"pair {i}: conditions differ on undeclared axis {', '.join(undeclared)} "
                f"(contrast: {', '.join(spec.contrast) or 'none'})",
                fix="add the axis to contrast, or give both conditions the same level",
            )
        same = sorted(set(spec.contrast) - differing)
        if same:
            raise doc.error(
                ("pairs", i, "contrast"),
                f"pair {i}: contrast axis {', '.join(same)} has the same level in a and b",
                fix="give a and b different levels on it, or remove it from contrast",
            )
        tts_a, tts_b = campaign.tts_for(cond_a), campaign.tts_for(cond_b)
        if tts_a != tts_b and not spec.mixed_backends:
            raise doc.error(
                ("pairs", i),
                f"pair {i}: condition a is voiced by TTS {_tts_label(tts_a, tts_b)} and condition b by "
                f"{_tts_label(tts_b, tts_a)}: mixed backends confound the contrast, a difference between the "
                "calls could be the engines' and not the persona's",
                fix="voice both conditions with one backend (cell_tts), or declare mixed_backends: true on the pair",
            )
        name = spec.name or (
            "A/A " + cond_a.label()
            if not spec.contrast
            else f"{'+'.join(spec.contrast)}: "
            + " vs ".join("/".join(getattr(c, ax) for ax in spec.contrast) for c in (cond_a, cond_b))
        )
        resolved.append((name, tuple(spec.contrast), cond_a, cond_b, spec.scenarios))
    return resolved


def plan_campaign(
    doc: YamlDocument, campaign: Campaign, scenarios: dict[str, Scenario], catalogue: Catalogue
) -> Plan:
    """Expand the campaign into episodes; ids and seeds derive from content, so re-planning is stable.

    The seed and caller id depend on scenario, pair, voice and replicate but not on the agent, so
    the same synthetic caller meets every agent (the cross-agent gap needs that).
    """
    pairs = _resolve_pairs(doc, campaign, catalogue)
    episodes: list[PlannedEpisode] = []
    for p_index, ((name, contrast, cond_a, cond_b, only), spec) in enumerate(
        zip(pairs, campaign.pairs, strict=True)
    ):
        agents = [a for a in campaign.agents if spec.agents is None or a.name in spec.agents]
        replicates = spec.replicates or campaign.replicates
        n_voices = min(
            len(catalogue.voice_profile[cond_a.voice_profile].realisations),
            len(catalogue.voice_profile[cond_b.voice_profile].realisations),
        )
        voices = spec.voices or campaign.voices
        if voices > n_voices:
            raise doc.error(
                ("pairs", p_index, "voices") if spec.voices else ("voices",),
                f"voices: {voices} asked but pair {p_index} has only {n_voices} realisations per cell",
                fix=f"set voices to {n_voices} or fewer, or add realisations to the catalogue",
            )
        for scenario_id in campaign.scenarios:
            if only is not None and scenario_id not in only:
                continue
            for voice in range(voices):
                for rep in range(replicates):
                    caller_key = _hex(campaign.seed, scenario_id, cond_a, cond_b, contrast, voice, rep, n=12)
                    seed = int(_hex("seed", campaign.seed, caller_key, n=8), 16)
                    variant = rep % campaign.line_variants
                    for agent in agents:
                        pair = MatchedPair(
                            pair_id=_hex("pair", caller_key, agent.name, campaign.batch, n=12),
                            scenario_id=scenario_id,
                            contrast=contrast,
                            condition_a=cond_a,
                            condition_b=cond_b,
                            voice_index=voice,
                            seed=seed,
                            line_variant=variant,
                            line_seed=line_seed(campaign.seed, variant),
                            replicate=rep,
                            run_batch=campaign.batch,
                        )
                        sides: tuple[Literal["a"], Literal["b"]] = ("a", "b")
                        for side in sides:
                            episodes.append(
                                PlannedEpisode(
                                    episode_id=_hex("episode", pair.pair_id, side),
                                    side=side,
                                    agent=agent.name,
                                    pair=pair,
                                    pair_name=name,
                                    caller_id=f"{caller_key}{side}",
                                )
                            )
    ids = [e.episode_id for e in episodes]
    if len(set(ids)) != len(ids):
        raise doc.error(("pairs",), "two planned pairs are identical", fix="remove the duplicate pair")
    return Plan(campaign_sha256=campaign.sha256, episodes=tuple(episodes))


class CampaignProblems(VoiceAuditError):
    """Several problems in one campaign file, one line each."""

    def __init__(self, problems: list[ConfigError]) -> None:
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


def _adapter_problem(doc: YamlDocument, index: int, agent: AgentSpec) -> ConfigError | None:
    try:
        factory = load_object(agent.adapter, AGENT_GROUP)
    except VoiceAuditError as exc:
        return doc.error(
            ("agents", index, "adapter"),
            f"agent '{agent.name}': {exc}",
            fix="check the spelling of module:attr, or install the package that provides it",
        )
    if not callable(factory):
        return doc.error(
            ("agents", index, "adapter"),
            f"agent '{agent.name}': '{agent.adapter}' is not callable",
            fix="point at a factory that takes an AgentSpec and returns an adapter",
        )
    return None


def agent_problems(loaded: LoadedCampaign, *, imports: bool = True) -> list[ConfigError]:
    """Every agent's adapter imported (a misspelt `module:attr` fails here, not in the first call;
    skipped with `imports=False`) and every agent URL checked for form; one positioned error per problem."""
    doc = load_yaml(loaded.path)
    problems: list[ConfigError] = []
    for i, agent in enumerate(loaded.campaign.agents):
        if imports and (problem := _adapter_problem(doc, i, agent)) is not None:
            problems.append(problem)
        if agent.url is not None and (why := url_problem(agent.url)) is not None:
            problems.append(
                doc.error(
                    ("agents", i, "url"),
                    f"agent '{agent.name}': url {mask_url(agent.url)} is not usable: {why}",
                    fix="write it as sip:user@host[:port][;transport=udp|tcp]"
                    if agent.url.lower().startswith(("sip:", "sips:"))
                    else "write it as scheme://host[:port]/path with scheme http, https, ws or wss",
                )
            )
    return problems


def call_order(plan: Plan) -> list[PlannedEpisode]:
    """Plan order, with a seeded coin per pair for which side calls first, so order never aligns with condition."""
    out: list[PlannedEpisode] = []
    for a, b in plan.pairs():
        flip = int(hashlib.sha256(f"order|{a.pair.pair_id}".encode()).hexdigest(), 16) % 2
        out.extend((b, a) if flip else (a, b))
    return out


def campaign_name(path: Path) -> str:
    """The name of a campaign file that gives none: its stem, other characters than letters,
    digits and `_ . -` replaced by '-'."""
    name = re.sub(r"[^A-Za-z0-9_.-]", "-", path.stem).lstrip("_.-")
    return name or DEFAULT_NAME


def load_campaign(path: str | Path) -> LoadedCampaign:
    """Read, validate and plan a campaign; any problem is one positioned ConfigError and nothing is written."""
    doc = load_yaml(path)
    data = doc.data
    prices = load_prices(doc)  # `prices: FILE.yaml` read (and checked) from its own file
    if prices is not None:
        data = {**data, "prices": prices}
    if isinstance(data, dict) and "name" not in data:  # unnamed: the file's name
        data = {**data, "name": campaign_name(doc.path)}
    try:
        campaign = Campaign.model_validate(data)
    except ValidationError as exc:
        raise pydantic_error(doc, exc, "Campaign") from None
    check_price_agents(doc, campaign.prices, [a.name for a in campaign.agents])
    base = doc.path.parent
    catalogue = load_catalogue(base / campaign.catalogue) if campaign.catalogue else load_catalogue()
    scenario_dir = (base / campaign.scenario_dir) if campaign.scenario_dir else BUNDLED_LIBRARY
    library = ScenarioLibrary(scenario_dir)
    scenarios: dict[str, Scenario] = {}
    problems: list[ConfigError] = []  # every naming problem at once, each at its own line
    for i, sid in enumerate(campaign.scenarios):
        try:
            scenarios[sid] = library.get_locked(sid)
        except ConfigError as exc:
            problems.append(doc.error(("scenarios", i), exc.message, fix=exc.fix))
    for i, spec in enumerate(campaign.pairs):
        for j, sid in enumerate(spec.scenarios or ()):
            if sid not in campaign.scenarios:
                problems.append(
                    doc.error(
                        ("pairs", i, "scenarios", j),
                        f"pair {i} names scenario '{sid}' that the campaign does not list",
                        fix="add it to the campaign's scenarios",
                    )
                )
    names = {a.name for a in campaign.agents}
    for i, spec in enumerate(campaign.pairs):
        for j, name in enumerate(spec.agents or ()):
            if name not in names:
                problems.append(
                    doc.error(
                        ("pairs", i, "agents", j),
                        f"pair {i} names agent '{name}' that the campaign does not list",
                        fix=f"use one of the campaign's agent names ({', '.join(sorted(names))})",
                    )
                )
    if problems:
        raise problems[0] if len(problems) == 1 else ConfigErrors(problems)
    _check_agents(doc, campaign)
    _check_backends(doc, campaign)
    plan = plan_campaign(doc, campaign, scenarios, catalogue)
    check_voicing(doc, campaign, catalogue)
    check_speakers(doc, campaign, catalogue)  # `voices: N` is N different people per condition
    return LoadedCampaign(doc.path, campaign, scenarios, scenario_dir, catalogue, plan)
