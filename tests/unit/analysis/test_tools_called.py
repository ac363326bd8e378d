"""tool_called_<name>: 1.0 for each tool an exposing episode called (once or more), 0.0 for the rest,
NaN for every tool of an episode whose agent exposes no trace."""

from __future__ import annotations

import math

from tests.helpers.logs import Log, metrics
from voice_audit.scenarios import TOOLS


def test_called_tools_per_episode() -> None:
    twice = Log().agent("Hello").caller()
    twice.tool("verify_identity", keys=("verified",)).tool("verify_identity", ok=False)
    twice.tool("issue_refund", keys=("amount",)).hang_up()
    other = Log().agent("Hello").caller().tool("crm_lookup").hang_up()
    quiet = Log().agent("Hello").caller().hang_up()
    native = Log().agent("Hello").caller().hang_up()
    m = metrics(twice, other, quiet, native, agents=["hyb", "hyb", "hyb", "nat"])
    want = [{"verify_identity", "issue_refund"}, {"crm_lookup"}, set()]
    for row, called in enumerate(want):
        for name in TOOLS:
            assert m.iloc[row][f"tool_called_{name}"] == float(name in called), (row, name)
    assert all(math.isnan(m.iloc[3][f"tool_called_{name}"]) for name in TOOLS)
    assert all(m[f"tool_called_{name}"].dtype == float for name in TOOLS)
