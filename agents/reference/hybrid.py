"""Hybrid reference agent: the cascaded pipeline plus tool-mediated state.

Beyond the cascaded agent it reads the CRM record after verification (`crm_lookup`, whose returned
record keys the harness sees), runs the remedy's read-only lookups (outage status), retrieves the
policy it applies (its id and a hash of its text ride on the `offer` state transition as
`policy:<id>` and `policy_sha256:<16 hex>`), remembers identity facts the caller volunteers before
being asked, escalates with intent flags (`refund_intent_flagged`, `credit_intent_flagged`,
`plan_change_flagged`) on request or after `policy.max_repairs` failed repairs, and, by design,
asks one more identity challenge when the mean ASR confidence of the accepted identity answers is
below `policy.extra_challenge_below_confidence` (default 0.45): a realistic route by which accent
becomes authentication burden. Set it to None to switch that route off.
"""

from __future__ import annotations

from typing import Any, ClassVar

from voice_audit.agents.reference.cascaded import CascadedAgent
from voice_audit.harness.model.campaign import AgentSpec, Architecture

LOW_CONFIDENCE_EXTRA_CHALLENGE = 0.45


class HybridAgent(CascadedAgent):
    architecture: ClassVar[Architecture] = "hyb"
    default_name = "hybrid"
    policy_defaults: ClassVar[dict[str, Any]] = {
        "use_crm": True,
        "service_lookups": True,
        "memory": True,
        "extra_challenge_below_confidence": LOW_CONFIDENCE_EXTRA_CHALLENGE,
    }


def hybrid(spec: AgentSpec) -> HybridAgent:
    """Entry point `voice_audit.agents`: hybrid = voice_audit.agents.reference:hybrid."""
    return HybridAgent(spec.options, name=spec.name)
