"""Phrase hints for the recogniser (contextual ASR): what the agent expects to hear next."""

from __future__ import annotations

from voice_audit.scenarios import Facts

_DOMAIN = "Customer care: a duplicate charge and a refund, an outage and a credit, my plan, a human agent."
_DIGITS = "Digits: one, two, three, four, five, six, seven, eight, nine, zero."


def _spoken_email(email: str) -> str:
    return email.replace(".", " dot ").replace("@", " at ").replace("_", " underscore ")


def listening_vocabulary(facts: Facts, expecting: str | None) -> str:
    """Phrase hints for one turn: the account's entities while an identity answer is expected
    (name and e-mail, never a digit or date of the record), the scenario's words otherwise."""
    acc = facts.account
    if expecting == "holder_name":
        return f"{acc.holder_name}."
    if expecting == "email":
        return f"{acc.holder_name}, {_spoken_email(acc.email)}."
    if expecting == "postcode":
        return _DIGITS
    if expecting == "date_of_birth":
        return ""
    plans = ", ".join(dict.fromkeys(p for p in (acc.plan, str(facts.service.get("previous_plan", ""))) if p))
    return f"{_DOMAIN} {plans}."
