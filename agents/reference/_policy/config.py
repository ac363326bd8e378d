"""The design of a deterministic reference agent: `PolicyConfig`, what its dialogue policy may do."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from voice_audit.agents.reference._knobs import Knobs
from voice_audit.scenarios.base import Frozen

IdentityFact = Literal["holder_name", "date_of_birth", "postcode", "email"]


class PolicyConfig(Frozen):
    """Dialogue-policy knobs that are part of an agent's *design* (not planted effects)."""

    challenge_order: tuple[IdentityFact, ...] = Field(
        default=("holder_name", "date_of_birth", "postcode", "email"), min_length=2
    )
    required_challenges: int = Field(default=2, ge=1, le=4)
    repair_below_confidence: float | None = Field(default=0.3, ge=0.0, le=1.0)
    """Ask the caller to repeat when the recogniser's confidence is below this (None: never)."""
    extra_challenge_below_confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    """Hybrid: one more identity challenge when the mean confidence of the accepted identity answers
    is below this. A realistic design choice through which accent turns into Auth burden."""
    max_repairs: int = Field(default=3, ge=1, le=10)
    """Consecutive repair requests before the agent gives up and escalates."""
    max_verification_failures: int = Field(default=3, ge=1, le=10)
    max_silences: int = Field(default=3, ge=1, le=10)
    max_stalled: int = Field(default=3, ge=1, le=10)
    max_turns: int = Field(default=30, ge=4, le=200)
    use_crm: bool = False
    """Read the CRM record after verification (hybrid)."""
    service_lookups: bool = False
    """Run the remedy's read-only lookups (outage status) before offering (hybrid)."""
    memory: bool = False
    """Remember identity facts the caller volunteers before being asked (hybrid)."""
    contextual_asr: bool = True
    """Bias the recogniser per turn with what the agent expects to hear (`listening_context`): the
    line it just said, the scenario's vocabulary and, for identity answers, the account's own
    entities, as deployed agents pass phrase hints from the CRM record the caller's number found."""
    switch_fact_after: int | None = Field(default=1, ge=0, le=10)
    """After this many re-asks of one identity fact that gave nothing usable, ask a different fact
    instead (None: keep re-asking until `max_repairs`)."""
    date_followups: int = Field(default=2, ge=0, le=4)
    """A date of birth heard only in part ("the fifteenth of July", year garbled) is kept, and the
    agent asks for what is missing ("And what year were you born?"), at most this many times per
    fact (0: a partial date is an unusable answer)."""
    confirm_assembled: bool = True
    """Read back a date of birth put together from more than one hearing ("I have July fifteenth,
    nineteen ninety three. Is that your date of birth?"); a complete different date in the reply
    is the caller's correction and replaces it."""
    name_min_ratio: float = Field(default=0.8, ge=0.5, le=1.0)
    postcode_max_edits: int = Field(default=1, ge=0, le=2)
    email_min_ratio: float = Field(default=0.85, ge=0.5, le=1.0)
    seed: int = 0
    knobs: Knobs = Knobs()
