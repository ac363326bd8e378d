"""Golden-derived run folders for the release check: the golden run's scripted pair cloned onto
further voices (distinct voices, so the analysis counts each clone as its own pair), analysed
without audio (the golden run carries no recordings)."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers.logs import Log
from tests.helpers.runfolder import copy_golden, records, replace_call, write_records
from voice_audit.analysis.pipeline import analyze
from voice_audit.harness.model.usage import Budget, BudgetStop

SCRIPTED = "983c19067f35"


FACTS = "28e2495f96dfa08ac29c4be10d8a85cfe5fb69e735372dd4dda37b7f3cf1185d"
TOOLS = ["crm_lookup", "escalate_to_human", "issue_refund", "policy_lookup", "verify_identity"]


def unresolved_call() -> Log:
    """The agent (given the same facts and tools) never understands the caller, who hangs up."""
    log = Log()
    log.events.pop(1)  # Log's own provisioning names other facts than the golden scenario's
    log = log.add("facts_provisioned", t=0, sha256=FACTS, tools=TOOLS, reported_by_agent=False)
    log = log.add("facts_provisioned", t=0, sha256=FACTS, tools=[], reported_by_agent=True)
    log = log.agent("Thank you for calling. How can I help you today?").caller(text="I was charged twice.")
    for _ in range(3):
        log = log.agent("Sorry, could you repeat that?").caller(
            text="I was charged twice for the same order."
        )
    return log.hang_up()


def build_run(
    tmp_path: Path,
    name: str,
    n_pairs: int,
    *,
    b_fails: bool = False,
    b_fail_count: int | None = None,
    facts_differ: int = 0,
    replicates: int = 1,
    planned_pairs: int | None = None,
    budget_stop: bool = False,
) -> Path:
    """The golden run with the scripted pair on `n_pairs` pairs, `replicates` per voice (identical calls:
    a deterministic agent, caller and line), so on n_pairs / replicates voices. `b_fails`: every b call
    is unresolved (an outcome gap a - b = +1), `b_fail_count`: only that many; `facts_differ`: that many
    b calls saw other facts (fact invariance fails). `planned_pairs`: the plan held more pairs than ran
    (the scripted cell's), `budget_stop`: run.json says the budget stopped the run there."""
    run = copy_golden(tmp_path, name)
    recs = records(run)
    base = [r for r in recs if r["header"]["pair_id"] == SCRIPTED]
    out = list(recs)
    for k in range(1, n_pairs):
        pair_id = f"{k:04d}{SCRIPTED[4:]}"
        for r in base:
            c = json.loads(json.dumps(r))
            old_eid = r["header"]["episode_id"]
            eid = f"{k:04d}{old_eid[4:]}"
            c["header"].update(
                episode_id=eid,
                pair_id=pair_id,
                caller_id=f"{k:04d}{r['header']['caller_id'][4:]}",
                voice_index=k // replicates,
                replicate=k % replicates,
            )
            c["outcome"]["audio_file"] = f"episodes/{eid}/call.wav"
            shutil.copytree(run / "episodes" / old_eid, run / "episodes" / eid)
            out.append(c)
    changed = 0
    for c in out:
        if c["header"]["side"] == "b" and c["header"]["agent"] == "scripted" and changed < facts_differ:
            events = run / "episodes" / c["header"]["episode_id"] / "events.jsonl"
            data = (
                events.read_text().replace(FACTS, "0" * 64, 1).encode()
            )  # the harness provisioned other facts
            events.write_bytes(data)
            c["outcome"]["events_sha256"] = hashlib.sha256(data).hexdigest()
            changed += 1
    write_records(run, out)
    manifest = json.loads((run / "run.json").read_text())
    manifest["n_planned_episodes"] = len(out) + 2 * max(0, (planned_pairs or n_pairs) - n_pairs)
    if budget_stop:
        done, planned = n_pairs, planned_pairs or n_pairs
        manifest["budget_stop"] = BudgetStop(
            limit="max_calls",
            message=f"budget: stopped placing pairs after {done} of {planned}: the next pair could exceed "
            f"max_calls {2 * done} ({2 * done} calls, 1.0 call minutes spent); raise budget.max_calls and resume",
            budget=Budget(max_calls=2 * done),
            calls=2 * done,
            call_minutes=1.0,
            pairs_done=done,
            pairs_left=planned - done,
            at=dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
        ).model_dump(mode="json")
    (run / "run.json").write_text(json.dumps(manifest))
    if b_fails or b_fail_count:
        failing = [c for c in out if c["header"]["side"] == "b" and c["header"]["agent"] == "scripted"][
            : b_fail_count or None
        ]
        for c in failing:
            replace_call(
                run,
                c["header"]["episode_id"],
                unresolved_call(),
                terminal_outcome="unresolved",
                termination="caller hung up: no progress",
            )
    analyze(run, audio=False)
    return run


@pytest.fixture(scope="session")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """Built once per session, 8 pairs each unless said: 'even' (equal outcomes), 'gap' (every b
    unresolved), 'half' (4 of 8 b unresolved), 'facts' (two b calls saw other facts), 'even40' (40 pairs,
    equal outcomes), 'one_voice' (8 identical replicates of one voice per condition), 'four_voices'
    (4 voices x 2 identical replicates), 'budget' (4 of 8 planned pairs, stopped by the budget),
    'missing' (4 of 8 planned pairs ran, no budget)."""
    root = tmp_path_factory.mktemp("release-runs")
    built: dict[str, Path] = {}
    kinds: dict[str, tuple[int, dict[str, object]]] = {
        "even": (8, {}),
        "gap": (8, {"b_fails": True}),
        "half": (8, {"b_fail_count": 4}),
        "facts": (8, {"facts_differ": 2}),
        "even40": (40, {}),
        "one_voice": (8, {"replicates": 8}),
        "four_voices": (8, {"replicates": 2}),
        "budget": (4, {"planned_pairs": 8, "budget_stop": True}),
        "missing": (4, {"planned_pairs": 8}),
    }

    def get(kind: str) -> Path:
        if kind not in built:
            n, opts = kinds[kind]
            built[kind] = build_run(root, kind, n, **opts)  # type: ignore[arg-type]
        return built[kind]

    return get
