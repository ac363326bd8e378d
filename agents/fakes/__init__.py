"""Fake agents for testing the harness itself and for benchmarks; never for audits.

- `ScriptedAgent` (`scripted`): says fixed lines by turn number, with optional planted effects and
  noise for calibrating the analysis pipeline against known answers.
- `ToneAgent` (`tone_agent`): a tone burst per turn, a tool call, DTMF and barge-in logging; the
  loopback peer of the protocol front ends.
- `ChaosAgent` (`chaos`): fails on a seeded schedule (hangs, drops, malformed frames, floods, 5xx,
  crashes), to prove the harness records every agent failure and never aborts a campaign.

Each lives in the module named by its factory, shares one adapter shell (`_shell.FakeAgent`: the
capabilities, the sessions it keeps, closing them), builds its sessions on `QueueSession`, and
speaks with the one `tone` generator. The registry names `scripted` and `chaos` are entry points; a run
folder written when the fakes lived elsewhere (`voice_audit.agents.testing`, `voice_audit.agents.serve.demo`,
`voice_audit.agents.reference.chaos`) still loads them through the registry's map of moved modules.
"""

from voice_audit.agents.fakes._signal import draw, tone
from voice_audit.agents.fakes.chaos import FAULTS, ChaosAgent, ChaosSession, Fault, pick_fault
from voice_audit.agents.fakes.scripted import (
    EXTRA_CHALLENGE,
    REFUND_SCRIPT,
    REPAIR_LINE,
    Planted,
    ScriptedAgent,
    ServiceFailure,
)
from voice_audit.agents.fakes.tone_agent import ToneAgent, ToneSession

__all__ = [
    "EXTRA_CHALLENGE",
    "FAULTS",
    "REFUND_SCRIPT",
    "REPAIR_LINE",
    "ChaosAgent",
    "ChaosSession",
    "Fault",
    "Planted",
    "ScriptedAgent",
    "ServiceFailure",
    "ToneAgent",
    "ToneSession",
    "draw",
    "pick_fault",
    "tone",
]
