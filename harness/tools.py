"""Tool fixtures: the scenario's tools, run against its locked facts, identical for both calls of a pair.

Agents that let the harness run their tools (OpenAI Realtime function calls) and the bundled
reference agents call these, so tool results depend on the facts alone, never on the caller.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from voice_audit.scenarios import Facts, ToolSpec, resolve_fact

TOOL_SCHEMAS: dict[str, dict[str, Any]] = {
    "verify_identity": {
        "description": "Check identity answers against the account record.",
        "parameters": {
            "type": "object",
            "properties": {
                "holder_name": {"type": "string"},
                "postcode": {"type": "string"},
                "date_of_birth": {"type": "string", "description": "YYYY-MM-DD"},
                "email": {"type": "string"},
            },
        },
    },
    "crm_lookup": {
        "description": "Read the caller's account record.",
        "parameters": {"type": "object", "properties": {"account_id": {"type": "string"}}},
    },
    "policy_lookup": {
        "description": "Retrieve the policy text that applies to a topic.",
        "parameters": {"type": "object", "properties": {"topic": {"type": "string"}}, "required": ["topic"]},
    },
    "issue_refund": {
        "description": "Refund a charge.",
        "parameters": {
            "type": "object",
            "properties": {"amount": {"type": "string"}},
            "required": ["amount"],
        },
    },
    "issue_credit": {
        "description": "Apply a credit to the account.",
        "parameters": {
            "type": "object",
            "properties": {"amount": {"type": "string"}},
            "required": ["amount"],
        },
    },
    "change_plan": {
        "description": "Change the account's plan.",
        "parameters": {"type": "object", "properties": {"plan": {"type": "string"}}, "required": ["plan"]},
    },
    "outage_status": {
        "description": "Look up outages for an area.",
        "parameters": {"type": "object", "properties": {"postcode": {"type": "string"}}},
    },
    "open_ticket": {
        "description": "Open a support ticket.",
        "parameters": {
            "type": "object",
            "properties": {"summary": {"type": "string"}},
            "required": ["summary"],
        },
    },
    "escalate_to_human": {
        "description": "Hand the call to a human agent, with flags for what the caller wants.",
        "parameters": {
            "type": "object",
            "properties": {
                "reason": {"type": "string"},
                "flags": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["reason"],
        },
    },
}


_JSON_TYPES = {"string": "string", "number": "number", "integer": "integer", "boolean": "boolean"}


def tool_schema(facts: Facts, name: str) -> dict[str, Any]:
    """Description and JSON parameters of a built-in or scenario-declared tool (KeyError if neither)."""
    if name in TOOL_SCHEMAS:
        return TOOL_SCHEMAS[name]
    spec = next((t for t in facts.tools if t.name == name), None)
    if spec is None:
        raise KeyError(name)
    props = {
        arg: {"type": _JSON_TYPES[a.type], **({"description": a.description} if a.description else {})}
        for arg, a in spec.arguments.items()
    }
    required = [arg for arg, a in spec.arguments.items() if a.required]
    return {
        "description": spec.description,
        "parameters": {"type": "object", "properties": props, **({"required": required} if required else {})},
    }


@dataclass(frozen=True)
class ToolOutcome:
    ok: bool
    result: dict[str, Any]
    error: str | None = None

    @property
    def result_keys(self) -> tuple[str, ...]:
        return tuple(sorted(self.result))


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def _amount(value: Any) -> Decimal | None:
    try:
        return Decimal(str(value).replace("$", "").strip())
    except (InvalidOperation, ValueError):
        return None


def _token(*parts: object) -> str:
    return hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()[:10]


@dataclass
class ToolFixture:
    """Executes the scenario's tools for one call; state (refunds, handoffs) lives for the call only."""

    facts: Facts
    calls: list[tuple[str, dict[str, Any], ToolOutcome]] = field(default_factory=list)
    _refunded: Decimal = Decimal(0)

    def available(self) -> tuple[str, ...]:
        builtin = [
            name for name, allowed in self.facts.tool_permissions.items() if allowed and name in TOOL_SCHEMAS
        ]
        declared = [t.name for t in self.facts.tools if self.facts.tool_permissions.get(t.name, True)]
        return tuple(sorted(builtin + declared))

    def schemas(self) -> list[dict[str, Any]]:
        return [{"type": "function", "name": n, **tool_schema(self.facts, n)} for n in self.available()]

    def call(self, name: str, arguments: dict[str, Any]) -> ToolOutcome:
        declared = {t.name: t for t in self.facts.tools}
        if name not in TOOL_SCHEMAS and name not in declared:
            outcome = ToolOutcome(False, {}, f"unknown_tool:{name}")
        elif name not in self.available():
            outcome = ToolOutcome(False, {}, "permission_denied")
        elif name in declared:
            outcome = self._declared(declared[name], arguments)
        else:
            outcome = getattr(self, f"_{name}")(arguments)
        self.calls.append((name, dict(arguments), outcome))
        return outcome

    def _declared(self, spec: ToolSpec, args: dict[str, Any]) -> ToolOutcome:
        """A scenario-declared tool: arguments present and bound to the facts, then its declared result."""
        for arg, a in spec.arguments.items():
            given = args.get(arg)
            if given is None or given == "":
                if a.required:
                    return ToolOutcome(False, {}, f"missing_argument:{arg}")
                continue
            if a.fact is not None and _norm(str(given)) != _norm(str(resolve_fact(self.facts, a.fact))):
                return ToolOutcome(False, {}, f"argument_mismatch:{arg}")
        return ToolOutcome(True, dict(spec.returns))

    def _verify_identity(self, args: dict[str, Any]) -> ToolOutcome:
        acc = self.facts.account
        truth = {
            "holder_name": acc.holder_name,
            "postcode": acc.postcode,
            "date_of_birth": acc.date_of_birth.isoformat(),
            "email": acc.email,
        }
        given = {k: str(v) for k, v in args.items() if k in truth and v}
        if not given:
            return ToolOutcome(False, {"verified": False}, "no_identity_fields")
        mismatched = sorted(k for k, v in given.items() if _norm(v) != _norm(truth[k]))
        return ToolOutcome(
            not mismatched,
            {"verified": not mismatched, "checked": sorted(given), "mismatched": mismatched},
            "identity_mismatch" if mismatched else None,
        )

    def _crm_lookup(self, args: dict[str, Any]) -> ToolOutcome:
        del args
        acc = self.facts.account
        record: dict[str, Any] = {
            "account_id": acc.account_id,
            "holder_name": acc.holder_name,
            "tenure_months": acc.tenure_months,
            "standing": acc.standing,
            "plan": acc.plan,
            "monthly_fee": str(acc.monthly_fee),
            "prior_contacts": [c.model_dump(mode="json") for c in self.facts.prior_contacts],
        }
        if self.facts.charge is not None:
            record["charge"] = self.facts.charge.model_dump(mode="json")
        if self.facts.service:
            record["service"] = dict(self.facts.service)
        return ToolOutcome(True, record)

    def _policy_lookup(self, args: dict[str, Any]) -> ToolOutcome:
        del args
        p = self.facts.policy
        return ToolOutcome(True, {"policy_id": p.id, "title": p.title, "text": p.text})

    def _eligible(self, *keys: str) -> bool:
        return all(self.facts.eligibility.get(k, False) for k in keys)

    def _issue_refund(self, args: dict[str, Any]) -> ToolOutcome:
        amount = _amount(args.get("amount"))
        charge = self.facts.charge
        if amount is None or charge is None:
            return ToolOutcome(False, {}, "invalid_amount")
        if not any(k.startswith("refund") for k in self.facts.eligibility) or not all(
            v for k, v in self.facts.eligibility.items() if k.startswith("refund")
        ):
            return ToolOutcome(False, {}, "not_eligible")
        if amount + self._refunded > charge.amount:
            return ToolOutcome(False, {}, "exceeds_charge")
        self._refunded += amount
        return ToolOutcome(True, {"refund_id": "RF-" + _token(charge, amount), "amount": str(amount)})

    def _issue_credit(self, args: dict[str, Any]) -> ToolOutcome:
        amount = _amount(args.get("amount"))
        if amount is None or amount <= 0:
            return ToolOutcome(False, {}, "invalid_amount")
        if not any(v for k, v in self.facts.eligibility.items() if "credit" in k or "revert" in k):
            return ToolOutcome(False, {}, "not_eligible")
        return ToolOutcome(
            True, {"credit_id": "CR-" + _token(self.facts.account.account_id, amount), "amount": str(amount)}
        )

    def _change_plan(self, args: dict[str, Any]) -> ToolOutcome:
        plan = str(args.get("plan", "")).strip()
        if not plan:
            return ToolOutcome(False, {}, "invalid_plan")
        return ToolOutcome(True, {"plan": plan, "effective": self.facts.as_of.isoformat()})

    def _outage_status(self, args: dict[str, Any]) -> ToolOutcome:
        del args
        svc = self.facts.service
        keys = ("outage_id", "outage_status", "outage_started", "restoration_estimate")
        return ToolOutcome(True, {k: svc[k] for k in keys if k in svc})

    def _open_ticket(self, args: dict[str, Any]) -> ToolOutcome:
        return ToolOutcome(
            True, {"ticket_id": "TK-" + _token(self.facts.account.account_id, args.get("summary", ""))}
        )

    def _escalate_to_human(self, args: dict[str, Any]) -> ToolOutcome:
        flags = args.get("flags") or []
        return ToolOutcome(
            True,
            {
                "handoff_id": "HO-" + _token(self.facts.account.account_id),
                "queue": "billing",
                "flags": list(flags),
            },
        )
