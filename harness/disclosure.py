"""What of a call's facts reaches the agent: one function the runtime logs and every adapter sends.

The campaign's `facts_disclosure` decides, the same for both calls of a pair:
- `full`: the facts as JSON (what the HTTP/WS call JSON carries under `facts`, Twilio under
  `customParameters.facts`, Realtime in a `<facts>` block of the instructions);
- `ids`: only the identifiers an agent looks the rest up with, `account_id` and `policy_id`;
- `none`: nothing.
`Disclosed.sha256` is the hash of exactly what was sent (canonical JSON), logged in
`facts_provisioned.disclosed_sha256` beside the hash of the whole facts, so the fact-invariance
check covers what the agent was told as well as the world its tools serve.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from voice_audit.harness.model.campaign import FactsDisclosure
from voice_audit.scenarios import Facts, sha256_of

__all__ = ["Disclosed", "disclose", "fact_ids"]


def fact_ids(facts: Facts) -> dict[str, str]:
    return {"account_id": facts.account.account_id, "policy_id": facts.policy.id}


@dataclass(frozen=True, slots=True)
class Disclosed:
    mode: FactsDisclosure
    facts: dict[str, Any] | None
    """The facts as JSON under `full`, else None."""
    ids: dict[str, str] | None
    """The identifiers under `full` and `ids`, else None."""

    @property
    def payload(self) -> dict[str, Any]:
        """Exactly what is sent, as one object (what `sha256` hashes)."""
        return {"mode": self.mode, "facts": self.facts, "ids": self.ids}

    @property
    def sha256(self) -> str:
        return sha256_of(self.payload)

    @property
    def fields(self) -> tuple[str, ...]:
        """Top-level names of what was sent: the fact groups under `full`, the ids under `ids`."""
        if self.facts is not None:
            return tuple(sorted(self.facts))
        return tuple(sorted(self.ids or ()))


def disclose(facts: Facts, mode: FactsDisclosure) -> Disclosed:
    if mode == "full":
        return Disclosed(mode, facts.model_dump(mode="json"), fact_ids(facts))
    if mode == "ids":
        return Disclosed(mode, None, fact_ids(facts))
    return Disclosed(mode, None, None)
