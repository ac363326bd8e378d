"""The release verdict: an analysed run (and optionally a comparison) held against a policy.

A pass is evidence of parity: a rule shows parity only when its whole interval lies within the
tolerance (an equivalence test, `voice_audit.analysis.stats.equivalence`). An interval wholly beyond
the tolerance exceeds it; one that reaches across a limit is inconclusive, a verdict of its own that
by default fails the check with its own exit code (the policy's `inconclusive: warn` reports it and
lets the check pass). Each verdict with an interval says how many pairs and speakers its cell would
need to show parity at the observed variance. A rule without a tolerance takes the run's plan's
smallest effect of interest for the metric. Evidence the gates do not back (the family's claim in
disposition.json is `diagnostics_only`) cannot decide a release unless the policy says
`diagnostic: allowed`; without it, and with fewer distinct pairs than the policy's minimum, the rule
is not evaluable. A run the budget stopped, or with missing pairs, is named in every verdict and
in the check's summary. A change rule's verdict names the compared cell's speakers per side; a cell
with fewer speaker clusters than the analysis plan's minimum has no interval ("no interval: N
speakers", as in the run's own deltas) and is not evaluable, with the reason in its notes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

from voice_audit.analysis.release.documents import CHECK_JSON, COMPARISON_JSON, read_json, short_label
from voice_audit.analysis.release.policy import ChangeRule, Inconclusive, LoadedPolicy, Rule
from voice_audit.analysis.stats import equivalence, units_needed
from voice_audit.harness.runlog import DELTAS_JSON, DISPOSITION_JSON, RUN_JSON, run_json
from voice_audit.scenarios import ConfigError, Frozen

Status = Literal["parity", "exceeded", "inconclusive", "not_evaluable"]
EXIT_CODES: dict[str, int] = {
    "parity": 0,
    "exceeded": 1,
    "bad_input": 2,
    "not_evaluable": 3,
    "inconclusive": 4,
}
HEADS: dict[str, str] = {
    "parity": "PARITY SHOWN",
    "exceeded": "EXCEEDED",
    "inconclusive": "INCONCLUSIVE",
    "not_evaluable": "NOT EVALUABLE",
}
__all__ = ["CHECK_JSON", "EXIT_CODES", "CheckResult", "Verdict", "check_run"]


class Verdict(Frozen):
    """One rule on one cell: the quantity's interval against the rule's limits."""

    kind: Literal["delta", "change"]
    rule: int
    family: str
    metric: str
    quantity: str
    cell: dict[str, str]
    label: str
    status: Status
    estimate: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    n_pairs: int | None = None
    n_speakers: int | None = None
    speakers_a: int | None = None
    speakers_b: int | None = None
    lowest: float | None = None
    highest: float | None = None
    tolerance_from: Literal["policy", "plan"] = "policy"
    needed_pairs: int | None = None
    needed_speakers: int | None = None
    gated: bool | None = None
    diagnostic: bool = False
    method: str | None = None
    no_interval: str | None = None
    reasons: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return f"{self.kind}[{self.rule}] {self.family}/{self.metric} ({self.quantity})"

    def bound_text(self) -> str:
        q = self.quantity
        src = " (the plan's smallest effect)" if self.tolerance_from == "plan" else ""
        if self.lowest is not None and self.highest is not None:
            return f"{_f(self.lowest)} <= {q} <= {_f(self.highest)}{src}"
        if self.highest is not None:
            return f"{q} <= {_f(self.highest)}{src}"
        if self.lowest is not None:
            return f"{q} >= {_f(self.lowest)}{src}"
        return f"{q}: no tolerance"

    def evidence_text(self) -> str:
        if self.estimate is None:
            return "no estimate"
        if self.ci_low is not None and self.ci_high is not None:
            ci = f"[{_f(self.ci_low)}, {_f(self.ci_high)}]"
        else:
            ci = self.no_interval or "no interval"
        n = self.n_speakers
        speakers = f", {n} speaker{'s' if n != 1 else ''}" if n is not None else ""
        if self.speakers_a is not None and self.speakers_b is not None:
            speakers += f" (a {self.speakers_a}, b {self.speakers_b})"
        return f"{_f(self.estimate)} {ci}, n={self.n_pairs}{speakers}"

    def needed_text(self) -> str:
        """How much evidence would show parity, for a verdict that did not."""
        if self.status not in ("inconclusive", "exceeded") or self.ci_low is None:
            return ""
        if self.needed_pairs is None:
            return "no sample size shows parity while the estimate itself lies beyond the tolerance"
        who = f" from about {self.needed_speakers} speakers" if self.needed_speakers is not None else ""
        return f"parity would need about {self.needed_pairs} pairs{who} at the observed variance"

    def notes(self) -> tuple[str, ...]:
        need = self.needed_text()
        return (*self.reasons, need) if need else self.reasons

    def line(self) -> str:
        notes = self.notes()
        tail = f"; {'; '.join(notes)}" if notes else ""
        diag = " (diagnostic evidence)" if self.diagnostic else ""
        return (
            f"{HEADS[self.status]} {self.name} | {self.label}: {self.evidence_text()} vs {self.bound_text()}"
            f"{diag}{tail}"
        )


class CheckResult(Frozen):
    policy_name: str
    policy_path: str
    policy_sha256: str
    policy_file_sha256: str
    run_dir: str
    run_id: str
    compare: str | None
    convention: str
    inconclusive_policy: Inconclusive = "fail"
    incomplete: tuple[str, ...] = ()
    verdicts: tuple[Verdict, ...]

    @property
    def status(self) -> Status:
        found = {v.status for v in self.verdicts}
        for status in ("exceeded", "not_evaluable", "inconclusive"):
            if status in found:
                return status
        return "parity"

    @property
    def exit_code(self) -> int:
        if self.status == "inconclusive" and self.inconclusive_policy == "warn":
            return EXIT_CODES["parity"]
        return EXIT_CODES[self.status]

    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(HEADS, 0)
        for v in self.verdicts:
            out[v.status] += 1
        return out

    def incomplete_text(self) -> str:
        return f"RUN INCOMPLETE: {'; '.join(self.incomplete)}" if self.incomplete else ""

    def summary_line(self) -> str:
        c = self.counts()
        warn = (
            " (policy: inconclusive warns)"
            if self.inconclusive_policy == "warn" and c["inconclusive"]
            else ""
        )
        run = f"; {self.incomplete_text()}" if self.incomplete else ""
        return (
            f"check {self.status.upper().replace('_', ' ')}: {c['exceeded']} exceeded, {c['not_evaluable']} not "
            f"evaluable, {c['inconclusive']} inconclusive{warn}, {c['parity']} parity shown (policy "
            f"{self.policy_name} sha256 {self.policy_sha256[:12]}; run {self.run_id}; exit {self.exit_code}){run}"
        )


def _f(x: float | None) -> str:
    return "-" if x is None else f"{x:.4g}"


def _family_gate(dispo_cell: dict[str, Any] | None, family: str) -> tuple[bool, list[str]]:
    """(gated, why not): the family's claim in this cell is above diagnostics_only."""
    if dispo_cell is None:
        return False, ["no disposition for this cell"]
    fam = dispo_cell.get("families", {}).get(family)
    if fam is None:
        return False, [f"family {family} has no disposition in this cell"]
    if fam["claim"] != "diagnostics_only":
        return True, []
    drivers = [str(d) for d in fam.get("drivers", [])] or ["no pair passes the gates guarding it"]
    return False, [f"{family} is diagnostics_only here (gates not passed: {'; '.join(drivers)})"]


def _cell_id(cell: dict[str, str]) -> tuple[str, ...]:
    return tuple(
        cell.get(k, "") for k in ("agent", "scenario_id", "contrast", "condition_key_a", "condition_key_b")
    )


class Found(Frozen):
    """What one rule finds in one cell: the estimate block (None: not estimated, with why), the gate,
    the pairs it rests on, and notes about the cell's own completeness."""

    estimate: dict[str, Any] | None
    missing: str = ""
    gated: bool
    why_not_gated: tuple[str, ...] = ()
    n_pairs: int = 0
    speakers: tuple[int, int] | None = None
    cell_notes: tuple[str, ...] = ()


def _judge(
    rule: Rule,
    base: dict[str, Any],
    where: dict[str, Any],
    found: Found,
    need: int,
    allowed: bool,
    run_notes: Sequence[str],
) -> Verdict:
    """One verdict: gates and pairs first (not evaluable), then the interval against the limits."""
    est = found.estimate or {}
    quantity = (est.get("rate_ratio") or {}) if rule.is_ratio else est
    margin = est.get("smallest_effect")
    lowest, highest = rule.limits(margin if isinstance(margin, int | float) else None)
    from_plan = (
        rule.tolerance is None and rule.at_most is None and rule.at_least is None and not rule.is_ratio
    )
    value, lo, hi = quantity.get("estimate"), quantity.get("ci_low"), quantity.get("ci_high")
    n_units = est.get("n_clusters")
    reasons: list[str] = []
    if not found.gated and not allowed:
        reasons += [
            *found.why_not_gated,
            "only gated evidence can decide a release (policy: diagnostic forbidden)",
        ]
    if found.n_pairs < need:
        reasons.append(f"{found.n_pairs} distinct pairs < min_pairs {need}")
    if lowest is None and highest is None:
        reasons.append(
            f"no tolerance: the rule gives none and the run's analysis plan declares no smallest effect for "
            f"{rule.metric} (give 'tolerance')"
        )
    status: Status = "not_evaluable"
    needed: tuple[int | None, int | None] = (None, None)
    if not reasons:
        if value is None or lo is None or hi is None or not (math.isfinite(lo) and math.isfinite(hi)):
            reasons.append(est.get("no_interval") or "no interval for this estimate")
        else:
            status = equivalence(lo, hi, lowest, highest)
            if status == "inconclusive":
                reasons.append("the interval reaches across the tolerance: parity not shown, no excess shown")
            elif status == "exceeded":
                reasons.append("the whole interval lies beyond the tolerance")
            if status != "parity":
                needed = _needed(value, lo, hi, lowest, highest, est, rule.is_ratio)
    return Verdict(
        **base,
        **where,
        status=status,
        estimate=value,
        ci_low=lo,
        ci_high=hi,
        n_pairs=found.n_pairs,
        n_speakers=int(n_units) if n_units is not None else None,
        speakers_a=found.speakers[0] if found.speakers else None,
        speakers_b=found.speakers[1] if found.speakers else None,
        lowest=lowest,
        highest=highest,
        tolerance_from="plan" if from_plan else "policy",
        needed_pairs=needed[0],
        needed_speakers=needed[1],
        gated=found.gated,
        diagnostic=not found.gated and allowed,
        method=quantity.get("method") or est.get("method"),
        no_interval=est.get("no_interval"),
        reasons=(*reasons, *found.cell_notes, *run_notes),
    )


def _needed(
    value: float,
    lo: float,
    hi: float,
    lowest: float | None,
    highest: float | None,
    est: dict[str, Any],
    log_scale: bool,
) -> tuple[int | None, int | None]:
    """(pairs, speakers) the cell would need for its interval to lie within the limits, the
    estimate staying put and the interval shrinking as 1 / sqrt(units)."""
    n_pairs = int(est.get("n_pairs") or 0)
    speakers = est.get("n_clusters")
    units = int(speakers) if speakers else n_pairs
    need = units_needed(value, lo, hi, units, lowest, highest, log_scale=log_scale)
    if need is None or units == 0:
        return None, None
    per_unit = max(n_pairs / units, 1.0)
    return math.ceil(need * per_unit), (need if speakers else None)


def _evaluate(
    kind: Literal["delta", "change"],
    rules: Iterable[Rule],
    cells: Sequence[dict[str, Any]],
    quantity_of: Callable[[Rule], str],
    find: Callable[[Rule, dict[str, Any]], Found],
    label_of: Callable[[dict[str, Any]], str],
    min_pairs: int,
    diagnostic: str,
    run_notes: Sequence[str],
) -> list[Verdict]:
    """The one rule-evaluation loop, for the run's deltas and a comparison's changes alike."""
    out: list[Verdict] = []
    for i, rule in enumerate(rules):
        base: dict[str, Any] = {
            "kind": kind,
            "rule": i,
            "family": rule.family,
            "metric": rule.metric,
            "quantity": quantity_of(rule),
        }
        matched = [c for c in cells if rule.where.matches(c["cell"])]
        if not matched:
            what = "cell of the run" if kind == "delta" else "compared cell"
            out.append(
                Verdict(
                    **base,
                    cell={},
                    label="(no cell)",
                    status="not_evaluable",
                    lowest=rule.limits()[0],
                    highest=rule.limits()[1],
                    reasons=(f"no {what} matches 'where'", *run_notes),
                )
            )
            continue
        need = rule.min_pairs or min_pairs
        allowed = (rule.diagnostic or diagnostic) == "allowed"
        for cell in matched:
            where = {"cell": dict(cell["cell"]), "label": label_of(cell)}
            found = find(rule, cell)
            if found.estimate is None:
                out.append(
                    Verdict(
                        **base,
                        **where,
                        status="not_evaluable",
                        reasons=(found.missing, *found.cell_notes, *run_notes),
                    )
                )
                continue
            out.append(_judge(rule, base, where, found, need, allowed, run_notes))
    return out


def _delta_quantity(rule: Rule) -> str:
    return "lower rate / higher rate" if rule.is_ratio else "a - b"


def check_deltas(
    rules: Iterable[Rule],
    deltas: dict[str, Any],
    disposition: dict[str, Any],
    min_pairs: int,
    diagnostic: str,
    run_notes: Sequence[str] = (),
) -> list[Verdict]:
    """Every rule against the run's deltas.json cells."""
    dispo = {_cell_id(c["cell"]): c for c in disposition.get("cells", [])}

    def find(rule: Rule, cell: dict[str, Any]) -> Found:
        notes = _cell_notes(cell)
        est = next(
            (
                e
                for e in cell.get("estimates", [])
                if e["metric"] == rule.metric and e["family"] == rule.family
            ),
            None,
        )
        if est is None:
            return Found(
                estimate=None,
                missing=f"{rule.metric} is not estimated in this cell (not in the run's plan, or no included pairs)",
                gated=False,
                cell_notes=notes,
            )
        distinct = cell.get("n_pairs_distinct")
        n = int(est["n_pairs"]) if distinct is None else min(int(est["n_pairs"]), int(distinct))
        gated, why = _family_gate(dispo.get(_cell_id(cell["cell"])), rule.family)
        return Found(estimate=est, gated=gated, why_not_gated=tuple(why), n_pairs=n, cell_notes=notes)

    return _evaluate(
        "delta",
        rules,
        deltas.get("cells", []),
        _delta_quantity,
        find,
        lambda c: short_label(c["cell"]),
        min_pairs,
        diagnostic,
        run_notes,
    )


CHANGE_QUANTITY = {
    "gap": "(a - b | new) - (a - b | old)",
    "level_a": "a: new - old",
    "level_b": "b: new - old",
}


def check_changes(
    rules: Iterable[ChangeRule],
    comparison: dict[str, Any],
    min_pairs: int,
    diagnostic: str,
    run_notes: Sequence[str] = (),
) -> list[Verdict]:
    """Every change rule against a comparison's cells (new - old)."""

    def find(rule: Rule, cell: dict[str, Any]) -> Found:
        of = getattr(rule, "of", "gap")
        est = next(
            (
                e
                for e in cell.get("changes", [])
                if e["metric"] == rule.metric and e["family"] == rule.family and e["of"] == of
            ),
            None,
        )
        if est is None:
            return Found(
                estimate=None, missing=f"no {of} change of {rule.metric} in this compared cell", gated=False
            )
        why: list[str] = []
        gated = True
        for side in ("old", "new"):
            ok, reasons = _family_gate(cell.get(f"disposition_{side}"), rule.family)
            if not ok:
                gated = False
                why += [f"{side} run: {r}" for r in reasons]
        spk = cell.get("speakers") or {}
        return Found(
            estimate=est,
            gated=gated,
            why_not_gated=tuple(why),
            n_pairs=int(est.get("n_pairs") or 0),
            speakers=_fewer_speakers(spk),
            cell_notes=tuple(str(n) for n in spk.get("notes", [])),
        )

    return _evaluate(
        "change",
        rules,
        comparison.get("cells", []),
        lambda r: CHANGE_QUANTITY[getattr(r, "of", "gap")],
        find,
        lambda c: str(c["label"]),
        min_pairs,
        diagnostic,
        run_notes,
    )


def _fewer_speakers(speakers: dict[str, Any]) -> tuple[int, int] | None:
    """Distinct speakers of condition a and of b in a compared cell, each the fewer of the two runs'
    (what the change rests on); None for a comparison that does not count them."""
    try:
        a, b = (min(int(speakers[side]["old"]), int(speakers[side]["new"])) for side in ("a", "b"))
    except (KeyError, TypeError, ValueError):
        return None
    return a, b


def _cell_notes(cell: dict[str, Any]) -> tuple[str, ...]:
    """A cell with excluded pairs says so in each of its verdicts (missing data)."""
    excluded = int(cell.get("n_pairs_excluded") or 0)
    total = int(cell.get("n_pairs_total") or 0)
    if not excluded:
        return ()
    return (f"missing pairs: {excluded} of this cell's {total} pairs excluded (see pairs.parquet)",)


def run_completeness(manifest: dict[str, Any], deltas: dict[str, Any]) -> tuple[str, ...]:
    """What the run lacks: a budget stop (from run.json) and planned pairs with no analysed pair."""
    notes: list[str] = []
    stop = manifest.get("budget_stop")
    if isinstance(stop, dict):
        done, left = stop.get("pairs_done"), stop.get("pairs_left")
        if isinstance(done, int) and isinstance(left, int):
            notes.append(
                f"stopped by its budget ({stop.get('limit', 'budget')}) after {done} of {done + left} planned pairs"
            )
        else:
            notes.append(f"stopped by its budget: {stop.get('message', stop)}")
    planned = manifest.get("n_planned_episodes")
    cells = deltas.get("cells", [])
    present = sum(int(c.get("n_pairs_total") or 0) for c in cells)
    excluded = sum(int(c.get("n_pairs_excluded") or 0) for c in cells)
    if isinstance(planned, int) and planned // 2 > present:
        notes.append(f"missing pairs: {planned // 2 - present} of {planned // 2} planned pairs have no calls")
    if excluded:
        notes.append(f"missing pairs: {excluded} pair(s) excluded from the deltas (missing or unpaired data)")
    return tuple(notes)


def check_run(run_dir: str | Path, loaded: LoadedPolicy, compare: str | Path | None = None) -> CheckResult:
    """Every rule of the policy against the run (and the comparison, for `changes`)."""
    run = Path(run_dir)
    fix = f"run: voice-audit analyze {run}"
    if not run_json(run).exists():
        raise ConfigError(
            f"not a run folder (no {RUN_JSON})",
            path=run,
            fix="pass the run folder written by voice-audit run",
        )
    deltas = read_json(run / DELTAS_JSON, f"{DELTAS_JSON} (the run is not analysed)", fix)
    disposition = read_json(run / DISPOSITION_JSON, f"{DISPOSITION_JSON} (the run is not analysed)", fix)
    manifest = read_json(run_json(run), RUN_JSON, "pass a run folder")
    run_id = str(manifest.get("run_id", run.name))
    incomplete = run_completeness(manifest, deltas)
    run_notes = tuple(f"run incomplete: {n}" for n in incomplete)
    pol = loaded.policy
    verdicts = check_deltas(pol.rules, deltas, disposition, pol.min_pairs, pol.diagnostic, run_notes)
    compare_path: Path | None = None
    if pol.changes:
        if compare is None:
            raise ConfigError(
                f"the policy has {len(pol.changes)} 'changes' rule(s) but no comparison was given",
                path=loaded.path,
                fix="pass --compare DIR (written by voice-audit compare OLD NEW) or remove 'changes'",
            )
        compare_path = Path(compare)
        if compare_path.is_dir():
            compare_path = compare_path / COMPARISON_JSON
        comparison = read_json(compare_path, "comparison", "run: voice-audit compare RUN_OLD RUN_NEW -o DIR")
        new_id = comparison.get("new", {}).get("run_id")
        if new_id is not None and new_id != run_id:
            raise ConfigError(
                f"the comparison's new run is {new_id}, not the checked run {run_id}",
                path=compare_path,
                fix="compare against the run being checked (voice-audit compare OLD THIS_RUN)",
            )
        verdicts += check_changes(pol.changes, comparison, pol.min_pairs, pol.diagnostic, run_notes)
    return CheckResult(
        policy_name=pol.name,
        policy_path=loaded.path,
        policy_sha256=loaded.sha256,
        policy_file_sha256=loaded.file_sha256,
        run_dir=str(run),
        run_id=run_id,
        compare=str(compare_path) if compare_path else None,
        convention=str(deltas.get("convention", "a - b")),
        inconclusive_policy=pol.inconclusive,
        incomplete=incomplete,
        verdicts=tuple(verdicts),
    )
