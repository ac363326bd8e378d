"""The deterministic dialogue policy shared by the three reference agents, on text.

One module per idea: `steps` (what a turn returns and what the agent heard), `config` (the
agent's design), `wording` (the fixed lines), `listening` (recogniser hints), `verification`
(the identity-verification phase) and `phases` (`DialoguePolicy`, the call's phase machine).
"""

from voice_audit.agents.reference._policy.config import IdentityFact, PolicyConfig
from voice_audit.agents.reference._policy.listening import listening_vocabulary
from voice_audit.agents.reference._policy.phases import DialoguePolicy
from voice_audit.agents.reference._policy.steps import (
    Act,
    Hangup,
    Heard,
    Hold,
    SayStep,
    StateStep,
    Step,
    ToolStep,
)
from voice_audit.agents.reference._policy.wording import (
    ANYTHING_ELSE,
    CHALLENGES,
    GENERIC_CHALLENGE,
    HANDOFF,
    HOLD,
    NOISE,
    REFUSAL,
    REPAIR,
    SILENCE,
)

__all__ = [
    "ANYTHING_ELSE",
    "CHALLENGES",
    "GENERIC_CHALLENGE",
    "HANDOFF",
    "HOLD",
    "NOISE",
    "REFUSAL",
    "REPAIR",
    "SILENCE",
    "Act",
    "DialoguePolicy",
    "Hangup",
    "Heard",
    "Hold",
    "IdentityFact",
    "PolicyConfig",
    "SayStep",
    "StateStep",
    "Step",
    "ToolStep",
    "listening_vocabulary",
]
