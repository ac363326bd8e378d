"""The placeholder syntax of the caller's lines: `{slot}` names a fact the line says.

It belongs to the scenario (anchors and answers are written in it, and a scenario is refused when
a line names an unknown slot); personas fill the placeholders when they render a line.
"""

from __future__ import annotations

import re

PLACEHOLDER = re.compile(r"\{([a-z_][a-z0-9_]*)\}")


def placeholders(template: str) -> list[str]:
    """The slot names a template uses, in order."""
    return PLACEHOLDER.findall(template)
