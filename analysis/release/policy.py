"""The release policy: which paired deltas (and which changes between two versions) a release tolerates.

A policy is declared before the run is looked at, validated like a campaign (positioned one-line
errors) and hashed (sha256 over the canonical JSON of the validated model), so a verdict always
names the exact policy it applied. Every bound is on a signed quantity in the project's sign
convention: a - b for a run's deltas, new - old for the change of a delta or a level.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from voice_audit.analysis.metrics.catalogue import CATALOGUE
from voice_audit.analysis.plan import FamilyName
from voice_audit.scenarios import Frozen, load_yaml, sha256_of

POLICY_VERSION = 1
Diagnostic = Literal["allowed", "forbidden"]
Inconclusive = Literal["fail", "warn"]
FOUR_FIFTHS = 0.8


class FieldError(ValueError):
    """A validation failure at one field of the entry (the YAML loader adds its line:col), with its fix."""

    def __init__(self, field: str, message: str, fix: str) -> None:
        super().__init__(message)
        self.loc: tuple[str, ...] = (field,)
        self.fix = fix


class CellSelector(Frozen):
    """Which cells a rule applies to (every cell when empty); values match deltas.json's cell keys."""

    agent: str | None = None
    scenario_id: str | None = None
    contrast: str | None = None
    condition_key_a: str | None = None
    condition_key_b: str | None = None

    def matches(self, cell: dict[str, str]) -> bool:
        return all(v is None or cell.get(k) == v for k, v in self.model_dump().items())


class Bound(Frozen):
    """A tolerance on one signed quantity: `tolerance` (two-sided, or one-sided with `worse_for`),
    explicit `at_most` / `at_least` on the signed value, or none of them: the run's analysis plan's
    smallest effect of interest for the metric is the tolerance then (two-sided, or with `worse_for`)."""

    tolerance: float | None = Field(default=None, ge=0, description="largest tolerated |quantity|")
    worse_for: Literal["a", "b"] | None = Field(
        default=None,
        description="one-sided: only a shift that leaves this condition worse off counts (needs a metric with a harm direction)",
    )
    at_most: float | None = Field(default=None, description="largest tolerated signed value")
    at_least: float | None = Field(default=None, description="smallest tolerated signed value")

    min_ratio: float | None = Field(
        default=None,
        gt=0,
        le=1,
        description="a ratio rule on a rate (the four-fifths rule: 0.8): the rate of either condition at least "
        "this share of the other's, shown by the interval of the lower rate over the higher lying above min_ratio",
    )

    @model_validator(mode="after")
    def _one_form(self) -> Bound:
        explicit = self.at_most is not None or self.at_least is not None
        if self.tolerance is not None and explicit:
            raise FieldError(
                "tolerance",
                "give either 'tolerance' or 'at_most' / 'at_least', not both",
                "keep 'tolerance' for a symmetric bound, or 'at_most' / 'at_least' for explicit limits",
            )
        if self.worse_for is not None and explicit:
            raise FieldError(
                "worse_for",
                "'worse_for' goes with 'tolerance' (or the plan's margin), not with 'at_most' / 'at_least'",
                "remove 'worse_for', or replace 'at_most' / 'at_least' by 'tolerance'",
            )
        if self.at_most is not None and self.at_least is not None and self.at_least > self.at_most:
            raise FieldError(
                "at_least",
                f"'at_least' {self.at_least} is above 'at_most' {self.at_most}",
                "swap the two values",
            )
        if self.min_ratio is not None and (self.tolerance is not None or explicit or self.worse_for):
            raise FieldError(
                "min_ratio",
                "'min_ratio' is a rule of its own: it takes no 'tolerance', 'at_most', 'at_least' or 'worse_for'",
                "split it into two rules, one with 'min_ratio' and one with the difference bound",
            )
        return self


class Rule(Bound):
    """A bound on one metric's paired delta (a - b) in every selected cell of the run."""

    family: FamilyName
    metric: str
    where: CellSelector = CellSelector()
    min_pairs: int | None = Field(default=None, ge=2, description="overrides the policy's min_pairs")
    diagnostic: Diagnostic | None = Field(default=None, description="overrides the policy's diagnostic")

    @model_validator(mode="after")
    def _known_metric(self) -> Rule:
        spec = CATALOGUE.get(self.metric)
        if spec is None or spec.kind == "label":
            known = sorted(n for n, s in CATALOGUE.items() if s.family == self.family and s.kind != "label")
            raise FieldError(
                "metric",
                f"'{self.metric}' is not a numeric metric of the analysis (family {self.family})",
                f"use one of {', '.join(known)}",
            )
        if spec.family != self.family:
            raise FieldError(
                "metric",
                f"metric '{self.metric}' belongs to family '{spec.family}', not '{self.family}'",
                f"set family: {spec.family}",
            )
        if self.worse_for is not None and spec.higher_is_worse is None:
            raise FieldError(
                "worse_for",
                f"metric '{self.metric}' has no harm direction, so 'worse_for' cannot say which sign is worse",
                "remove 'worse_for' and bound the signed value with 'at_most' / 'at_least'",
            )
        if self.min_ratio is not None and spec.kind != "binary":
            raise FieldError(
                "min_ratio",
                f"'min_ratio' bounds a ratio of rates, and '{self.metric}' is not a rate",
                "use it on a binary outcome such as outcome_acceptable, or bound the difference with 'tolerance'",
            )
        return self

    @property
    def is_ratio(self) -> bool:
        return self.min_ratio is not None

    def limits(self, margin: float | None = None) -> tuple[float | None, float | None]:
        """(lowest, highest) tolerated value (None: unbounded on that side): of a - b, or of rate a /
        rate b for a ratio rule. `margin` (the plan's smallest effect of interest) stands in for a
        missing tolerance; without either, both are None."""
        if self.min_ratio is not None:
            return self.min_ratio, None  # of the lower rate over the higher
        if self.at_most is not None or self.at_least is not None:
            return self.at_least, self.at_most
        tol = self.tolerance if self.tolerance is not None else margin
        if tol is None:
            return None, None
        if self.worse_for is None:
            return -tol, tol
        higher_is_worse = bool(CATALOGUE[self.metric].higher_is_worse)
        # a - b > 0 means a has more of the metric; b is worse off then exactly when higher is better.
        b_worse_when_positive = not higher_is_worse
        if (self.worse_for == "b") == b_worse_when_positive:
            return None, tol
        return -tol, None


class ChangeRule(Rule):
    """A bound on the change between two versions (`voice-audit compare`): of the paired gap
    (difference in differences, (a - b | new) - (a - b | old)) or of one condition's level (new - old)."""

    of: Literal["gap", "level_a", "level_b"] = "gap"

    @model_validator(mode="after")
    def _worse_for_gap_only(self) -> ChangeRule:
        if self.worse_for is not None and self.of != "gap":
            raise FieldError(
                "worse_for",
                "'worse_for' applies to a gap between conditions, not to a level change",
                "remove 'worse_for' and bound the level change with 'at_most' / 'at_least'",
            )
        if self.min_ratio is not None:
            raise FieldError(
                "min_ratio",
                "'min_ratio' applies to a run's rates (under 'rules'), not to a change between versions",
                "move the rule under 'rules', or bound the change with 'tolerance'",
            )
        return self


class Policy(Frozen):
    """A release policy: `rules` on the run's deltas, `changes` on a comparison with an older version."""

    policy_version: int = POLICY_VERSION
    name: str = Field(min_length=1)
    description: str = ""
    min_pairs: int = Field(default=6, ge=2, description="fewest paired calls a verdict may rest on")
    diagnostic: Diagnostic = Field(
        default="forbidden", description="'allowed': evidence whose gates did not pass may fail a check too"
    )
    inconclusive: Inconclusive = Field(
        default="fail",
        description="an interval that reaches across a limit: 'fail' (exit 4, not a pass) or 'warn' (reported, exit 0)",
    )
    rules: tuple[Rule, ...] = ()
    changes: tuple[ChangeRule, ...] = ()

    @model_validator(mode="after")
    def _some_rule(self) -> Policy:
        if not self.rules and not self.changes:
            raise FieldError(
                "rules",
                "a policy needs at least one entry under 'rules' or 'changes'",
                "add a rule, e.g. rules: [{family: terminal_outcome, metric: outcome_acceptable}]",
            )
        return self

    @property
    def sha256(self) -> str:
        return sha256_of(self)


class LoadedPolicy(Frozen):
    """A validated policy with where it came from: the model's hash and the file's bytes' hash."""

    path: str
    policy: Policy
    sha256: str
    file_sha256: str


def load_policy(path: str | Path) -> LoadedPolicy:
    """Parse and validate a policy file; every problem is one line naming file:line:col and the fix."""
    doc = load_yaml(path)
    version = doc.data.get("policy_version", POLICY_VERSION)
    if not isinstance(version, int) or version > POLICY_VERSION:
        raise doc.error(
            ("policy_version",),
            f"policy_version {version!r} is not one this voice-audit reads (it reads {POLICY_VERSION})",
            fix="set policy_version: 1 or upgrade voice-audit",
        )
    policy = doc.validate(Policy)
    return LoadedPolicy(
        path=str(path),
        policy=policy,
        sha256=policy.sha256,
        file_sha256=hashlib.sha256(Path(path).read_bytes()).hexdigest(),
    )
