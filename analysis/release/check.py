"""The release verdict: an analysed run (and optionally a comparison) held against a policy.

A rule fails a release only when the evidence says so: its interval lies wholly beyond the
tolerance. An estimate beyond the tolerance whose interval still reaches it holds (said in the
verdict's note), since the sample cannot tell the two apart. Evidence the gates do not back (the
family's claim in disposition.json is `diagnostics_only`) cannot fail a release unless the policy
says `diagnostic: allowed`; without it, and with fewer distinct pairs than the policy's minimum, the
rule is not evaluable, which a release gate must not read as "holds".
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from voice_audit.analysis.release.policy import ChangeRule, LoadedPolicy, Rule
from voice_audit.scenarios import ConfigError, Frozen

Status = Literal["holds", "exceeded", "not_evaluable"]
EXIT_CODES: dict[str, int] = {"holds": 0, "exceeded": 1, "bad_input": 2, "not_evaluable": 3}
CHECK_JSON = "check.json"


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
    lowest: float | None = None
    highest: float | None = None
    gated: bool | None = None
    diagnostic: bool = False
    method: str | None = None
    reasons: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return f"{self.kind}[{self.rule}] {self.family}/{self.metric} ({self.quantity})"

    def bound_text(self) -> str:
        q = self.quantity
        if self.lowest is not None and self.highest is not None:
            return f"{_f(self.lowest)} <= {q} <= {_f(self.highest)}"
        if self.highest is not None:
            return f"{q} <= {_f(self.highest)}"
        return f"{q} >= {_f(self.lowest)}"

    def evidence_text(self) -> str:
        if self.estimate is None:
            return "no estimate"
        ci = f"[{_f(self.ci_low)}, {_f(self.ci_high)}]" if self.ci_low is not None else "no interval"
        return f"{_f(self.estimate)} {ci}, n={self.n_pairs}"

    def line(self) -> str:
        head = {"holds": "HOLDS", "exceeded": "EXCEEDED", "not_evaluable": "NOT EVALUABLE"}[self.status]
        tail = f"; {'; '.join(self.reasons)}" if self.reasons else ""
        diag = " (diagnostic evidence)" if self.diagnostic else ""
        return f"{head} {self.name} | {self.label}: {self.evidence_text()} vs {self.bound_text()}{diag}{tail}"


class CheckResult(Frozen):
    policy_name: str
    policy_path: str
    policy_sha256: str
    policy_file_sha256: str
    run_dir: str
    run_id: str
    compare: str | None
    convention: str
    verdicts: tuple[Verdict, ...]

    @property
    def status(self) -> Status:
        found = {v.status for v in self.verdicts}
        if "exceeded" in found:
            return "exceeded"
        if "not_evaluable" in found:
            return "not_evaluable"
        return "holds"

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.status]

    def counts(self) -> dict[str, int]:
        out = {"holds": 0, "exceeded": 0, "not_evaluable": 0}
        for v in self.verdicts:
            out[v.status] += 1
        return out

    def summary_line(self) -> str:
        c = self.counts()
        return (
            f"check {self.status.upper().replace('_', ' ')}: {c['exceeded']} exceeded, {c['not_evaluable']} not "
            f"evaluable, {c['holds']} hold (policy {self.policy_name} sha256 {self.policy_sha256[:12]}; "
            f"run {self.run_id}; exit {self.exit_code})"
        )


def _f(x: float | None) -> str:
    return "-" if x is None else f"{x:.4g}"


def short_label(cell: dict[str, str]) -> str:
    """agent | scenario | the contrast's levels, a vs b (the full condition keys are in `cell`)."""
    axes = [x for x in cell.get("contrast", "").split(",") if x]

    def levels(key: str) -> str:
        parts = dict(p.split("=", 1) for p in cell.get(key, "").split("|") if "=" in p)
        shown = [f"{a}={parts[a]}" for a in axes if a in parts]
        return ",".join(shown) or cell.get(key, "") or "-"

    head = " | ".join(x for x in (cell.get("agent", ""), cell.get("scenario_id", "")) if x)
    return f"{head} | a: {levels('condition_key_a')} vs b: {levels('condition_key_b')}"


def read_json(path: Path, what: str, fix: str) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{what} not found", path=path, fix=fix) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{what} is not valid JSON ({exc})", path=path, fix=fix) from None
    if not isinstance(data, dict):
        raise ConfigError(f"{what} is not a JSON object", path=path, fix=fix)
    return data


def _judge(
    lo_hi: tuple[float | None, float | None], est: float | None, ci: tuple[float | None, float | None]
) -> tuple[Status, list[str]]:
    lowest, highest = lo_hi
    ci_low, ci_high = ci
    if (
        est is None
        or ci_low is None
        or ci_high is None
        or not (math.isfinite(ci_low) and math.isfinite(ci_high))
    ):
        return "not_evaluable", ["no interval for this estimate"]
    if (highest is not None and ci_low > highest) or (lowest is not None and ci_high < lowest):
        return "exceeded", ["the whole interval lies beyond the tolerance"]
    if (highest is not None and est > highest) or (lowest is not None and est < lowest):
        return "holds", ["the estimate is beyond the tolerance but its interval reaches it (inconclusive)"]
    return "holds", []


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


def check_deltas(
    rules: Iterable[Rule],
    deltas: dict[str, Any],
    disposition: dict[str, Any],
    min_pairs: int,
    diagnostic: str,
) -> list[Verdict]:
    dispo = {_cell_id(c["cell"]): c for c in disposition.get("cells", [])}
    out: list[Verdict] = []
    for i, rule in enumerate(rules):
        cells = [c for c in deltas.get("cells", []) if rule.where.matches(c["cell"])]
        lowest, highest = rule.limits()
        base: dict[str, Any] = {
            "kind": "delta",
            "rule": i,
            "family": rule.family,
            "metric": rule.metric,
            "quantity": "a - b",
            "lowest": lowest,
            "highest": highest,
        }
        if not cells:
            out.append(
                Verdict(
                    **base,
                    cell={},
                    label="(no cell)",
                    status="not_evaluable",
                    reasons=("no cell of the run matches 'where'",),
                )
            )
            continue
        need = rule.min_pairs or min_pairs
        allowed = (rule.diagnostic or diagnostic) == "allowed"
        for cell in cells:
            est = next(
                (
                    e
                    for e in cell.get("estimates", [])
                    if e["metric"] == rule.metric and e["family"] == rule.family
                ),
                None,
            )
            where = {"cell": dict(cell["cell"]), "label": short_label(cell["cell"])}
            if est is None:
                out.append(
                    Verdict(
                        **base,
                        **where,
                        status="not_evaluable",
                        reasons=(
                            f"{rule.metric} is not estimated in this cell (not in the run's plan, or no included pairs)",
                        ),
                    )
                )
                continue
            distinct = cell.get("n_pairs_distinct")
            n = int(est["n_pairs"]) if distinct is None else min(int(est["n_pairs"]), int(distinct))
            gated, why = _family_gate(dispo.get(_cell_id(cell["cell"])), rule.family)
            out.append(_verdict(base, where, est, n, need, gated, why, allowed))
    return out


def _verdict(
    base: dict[str, Any],
    where: dict[str, Any],
    est: dict[str, Any],
    n: int,
    need: int,
    gated: bool,
    why_not_gated: list[str],
    allowed: bool,
) -> Verdict:
    reasons: list[str] = []
    status: Status
    if not gated and not allowed:
        reasons += [*why_not_gated, "only gated evidence can fail a release (policy: diagnostic forbidden)"]
    if n < need:
        reasons.append(f"{n} distinct pairs < min_pairs {need}")
    if reasons:
        status = "not_evaluable"
    else:
        status, notes = _judge(
            (base["lowest"], base["highest"]), est.get("estimate"), (est.get("ci_low"), est.get("ci_high"))
        )
        reasons += notes
    return Verdict(
        **base,
        **where,
        status=status,
        estimate=est.get("estimate"),
        ci_low=est.get("ci_low"),
        ci_high=est.get("ci_high"),
        n_pairs=n,
        gated=gated,
        diagnostic=not gated and allowed,
        method=est.get("method"),
        reasons=tuple(reasons),
    )


def check_changes(
    rules: Iterable[ChangeRule], comparison: dict[str, Any], min_pairs: int, diagnostic: str
) -> list[Verdict]:
    out: list[Verdict] = []
    for i, rule in enumerate(rules):
        cells = [c for c in comparison.get("cells", []) if rule.where.matches(c["cell"])]
        lowest, highest = rule.limits()
        quantity = {
            "gap": "(a - b | new) - (a - b | old)",
            "level_a": "a: new - old",
            "level_b": "b: new - old",
        }[rule.of]
        base: dict[str, Any] = {
            "kind": "change",
            "rule": i,
            "family": rule.family,
            "metric": rule.metric,
            "quantity": quantity,
            "lowest": lowest,
            "highest": highest,
        }
        if not cells:
            out.append(
                Verdict(
                    **base,
                    cell={},
                    label="(no cell)",
                    status="not_evaluable",
                    reasons=("no compared cell matches 'where'",),
                )
            )
            continue
        need = rule.min_pairs or min_pairs
        allowed = (rule.diagnostic or diagnostic) == "allowed"
        for cell in cells:
            where = {"cell": dict(cell["cell"]), "label": str(cell["label"])}
            est = next(
                (
                    e
                    for e in cell.get("changes", [])
                    if e["metric"] == rule.metric and e["family"] == rule.family and e["of"] == rule.of
                ),
                None,
            )
            if est is None:
                out.append(
                    Verdict(
                        **base,
                        **where,
                        status="not_evaluable",
                        reasons=(f"no {rule.of} change of {rule.metric} in this compared cell",),
                    )
                )
                continue
            why: list[str] = []
            gated = True
            for side in ("old", "new"):
                ok, reasons = _family_gate(cell.get(f"disposition_{side}"), rule.family)
                if not ok:
                    gated = False
                    why += [f"{side} run: {r}" for r in reasons]
            n = int(est.get("n_pairs") or 0)
            out.append(_verdict(base, where, est, n, need, gated, why, allowed))
    return out


def check_run(run_dir: str | Path, loaded: LoadedPolicy, compare: str | Path | None = None) -> CheckResult:
    """Every rule of the policy against the run (and the comparison, for `changes`)."""
    run = Path(run_dir)
    fix = f"run: voice-audit analyze {run}"
    if not (run / "run.json").exists():
        raise ConfigError(
            "not a run folder (no run.json)", path=run, fix="pass the run folder written by voice-audit run"
        )
    deltas = read_json(run / "deltas.json", "deltas.json (the run is not analysed)", fix)
    disposition = read_json(run / "disposition.json", "disposition.json (the run is not analysed)", fix)
    run_id = str(read_json(run / "run.json", "run.json", "pass a run folder").get("run_id", run.name))
    pol = loaded.policy
    verdicts = check_deltas(pol.rules, deltas, disposition, pol.min_pairs, pol.diagnostic)
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
            from voice_audit.analysis.release.compare import COMPARISON_JSON

            compare_path = compare_path / COMPARISON_JSON
        comparison = read_json(compare_path, "comparison", "run: voice-audit compare RUN_OLD RUN_NEW -o DIR")
        new_id = comparison.get("new", {}).get("run_id")
        if new_id is not None and new_id != run_id:
            raise ConfigError(
                f"the comparison's new run is {new_id}, not the checked run {run_id}",
                path=compare_path,
                fix="compare against the run being checked (voice-audit compare OLD THIS_RUN)",
            )
        verdicts += check_changes(pol.changes, comparison, pol.min_pairs, pol.diagnostic)
    return CheckResult(
        policy_name=pol.name,
        policy_path=loaded.path,
        policy_sha256=loaded.sha256,
        policy_file_sha256=loaded.file_sha256,
        run_dir=str(run),
        run_id=run_id,
        compare=str(compare_path) if compare_path else None,
        convention=str(deltas.get("convention", "a - b")),
        verdicts=tuple(verdicts),
    )
