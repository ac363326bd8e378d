"""The LLM reference agent's dialogue, one module per idea: `client` (which model, one loaded
client per configuration), `prompt` (system prompt, step schema and grammar, answer parsing) and
`policy` (`LLMPolicy`: the model chooses each step, the code keeps the rules)."""

from voice_audit.agents.reference._llm_policy.client import ChatBackend, LLMConfig, shared_chat_client
from voice_audit.agents.reference._llm_policy.policy import REMEDY_TOOLS, LLMPolicy
from voice_audit.agents.reference._llm_policy.prompt import (
    ModelStep,
    parse_step,
    spoken,
    step_grammar,
    step_schema,
    system_prompt,
)

__all__ = [
    "REMEDY_TOOLS",
    "ChatBackend",
    "LLMConfig",
    "LLMPolicy",
    "ModelStep",
    "parse_step",
    "shared_chat_client",
    "spoken",
    "step_grammar",
    "step_schema",
    "system_prompt",
]
