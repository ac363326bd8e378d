"""The fabricated-policy lexicon: planted invented restrictions are caught, true policy wording is not."""

from __future__ import annotations


def test_fabricated_policy_lexicon_catches_the_planted_text_but_not_refund_timing() -> None:
    from voice_audit.agents.reference._knobs import FABRICATED_TEXT
    from voice_audit.analysis.metrics.lexicon import invented_restrictions

    policy = "Refunded in full when the identity is verified. No manager approval is needed."
    assert "manager approval" in invented_restrictions(FABRICATED_TEXT, policy)  # "a manager's approval"
    assert "one adjustment per" in invented_restrictions(FABRICATED_TEXT, policy)
    assert invented_restrictions("It will be back on your card within five business days.", policy) == []
    assert invented_restrictions("No manager's approval is needed.", policy) == []
