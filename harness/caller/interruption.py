"""What the caller says when it barges in on the agent: one fixed line per declared reason."""

from __future__ import annotations

from typing import Literal

InterruptionReason = Literal["impatience", "correction"]

INTERRUPTION_LINE: dict[str, str] = {
    "impatience": "Sorry, can I just stop you there?",
    "correction": "No, sorry, that is not right.",
}
INTERRUPTION_LINES: tuple[str, ...] = tuple(INTERRUPTION_LINE.values())
"""Every line an interruption can make the caller say."""
