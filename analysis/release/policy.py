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
    or explicit `at_most` / `at_least` on the signed value."""

    tolerance: float | None = Field(default=None, ge=0, description="largest tolerated |quantity|")
    worse_for: Literal["a", "b"] | None = Field(
        default=None,
        description="one-sided: only a shift that leaves this condition worse off counts (needs a metric with a harm direction)",
    )
    at_most: float | None = Field(default=None, description="largest tolerated signed value")
    at_least: float | None = Field(default=None, description="smallest tolerated signed value")

    @model_validator(mode="after")
    def _one_form(self) -> Bound:
        explicit = self.at_most is not None or self.at_least is not None
        if self.tolerance is None and not explicit:
            raise ValueError("give 'tolerance' (optionally with 'worse_for') or 'at_most' / 'at_least'")
        if self.tolerance is not None and explicit:
            raise ValueError("give either 'tolerance' or 'at_most' / 'at_least', not both")
        if self.worse_for is not None and self.tolerance is None:
            raise ValueError("'worse_for' goes with 'tolerance'")
        if self.at_most is not None and self.at_least is not None and self.at_least > self.at_most:
            raise ValueError(f"'at_least' {self.at_least} is above 'at_most' {self.at_most}")
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
            raise ValueError(
                f"'{self.metric}' is not a numeric metric of the analysis (family {self.family}: {', '.join(known)})"
            )
        if spec.family != self.family:
            raise ValueError(f"metric '{self.metric}' belongs to family '{spec.family}', not '{self.family}'")
        if self.worse_for is not None and spec.higher_is_worse is None:
            raise ValueError(
                f"metric '{self.metric}' has no harm direction, so 'worse_for' cannot say which sign is worse; "
                "use 'at_most' / 'at_least' on the signed value"
            )
        return self

    def limits(self) -> tuple[float | None, float | None]:
        """(lowest, highest) tolerated signed a - b value (None: unbounded on that side)."""
        if self.tolerance is None:
            return self.at_least, self.at_most
        if self.worse_for is None:
            return -self.tolerance, self.tolerance
        higher_is_worse = bool(CATALOGUE[self.metric].higher_is_worse)
        # a - b > 0 means a has more of the metric; b is worse off then exactly when higher is better.
        b_worse_when_positive = not higher_is_worse
        if (self.worse_for == "b") == b_worse_when_positive:
            return None, self.tolerance
        return -self.tolerance, None


class ChangeRule(Rule):
    """A bound on the change between two versions (`voice-audit compare`): of the paired gap
    (difference in differences, (a - b | new) - (a - b | old)) or of one condition's level (new - old)."""

    of: Literal["gap", "level_a", "level_b"] = "gap"

    @model_validator(mode="after")
    def _worse_for_gap_only(self) -> ChangeRule:
        if self.worse_for is not None and self.of != "gap":
            raise ValueError(
                "'worse_for' applies to a gap between conditions; bound a level change with 'at_most' / 'at_least'"
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
    rules: tuple[Rule, ...] = ()
    changes: tuple[ChangeRule, ...] = ()

    @model_validator(mode="after")
    def _some_rule(self) -> Policy:
        if not self.rules and not self.changes:
            raise ValueError("a policy needs at least one entry under 'rules' or 'changes'")
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
