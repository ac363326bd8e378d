"""Declared ordinal scales for the conversation-quality task (docs/method/index.md section 4).

Declared once, here, so the page, the label validator and the agreement statistics use the same
points; a value is the 1-based point number, which keeps Krippendorff's ordinal distance meaningful.
"""

from __future__ import annotations

from pydantic import Field

from voice_audit.scenarios.base import Frozen


class Scale(Frozen):
    """One ordinal label: its stored name, what the rater is asked, and the anchor of every point."""

    name: str = Field(pattern=r"^[a-z][a-z_]*$")
    title: str
    question: str
    points: tuple[str, ...] = Field(min_length=2, max_length=9)


QUALITY_SCALES: tuple[Scale, ...] = (
    Scale(
        name="helpfulness",
        title="Helpfulness",
        question="How far did the agent move the caller toward resolving the issue?",
        points=("Not at all", "A little", "Partly", "Mostly", "Fully"),
    ),
    Scale(
        name="specificity",
        title="Specificity",
        question="How specific were the agent's answers to this caller's situation?",
        points=("Generic only", "Mostly generic", "Mixed", "Mostly specific", "Fully specific"),
    ),
    Scale(
        name="policy_grounding",
        title="Policy grounding",
        question="How well were the agent's statements grounded in the applicable policy?",
        points=(
            "Contradicted or invented",
            "Unsupported",
            "Partly grounded",
            "Mostly grounded",
            "Fully grounded",
        ),
    ),
    Scale(
        name="condescension",
        title="Condescension",
        question="How condescending was the agent toward the caller?",
        points=("Not at all", "Slightly", "Noticeably", "Strongly", "Severely"),
    ),
    Scale(
        name="interruption",
        title="Interruption",
        question="How often did the agent interrupt or talk over the caller?",
        points=("Never", "Once", "Several times", "Throughout"),
    ),
    Scale(
        name="empathy",
        title="Empathy",
        question="How much did the agent acknowledge the caller's situation and feelings?",
        points=("Dismissive", "Little", "Neutral", "Warm", "Very warm"),
    ),
)

SCALES_BY_NAME: dict[str, Scale] = {s.name: s for s in QUALITY_SCALES}
