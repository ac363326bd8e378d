"""LLM reference agents: real ASR -> a chat model choosing tool calls and words -> real TTS.

`llm` (cascaded) shows the model the case on screen; `llm_hybrid` shows it only the account id and
gives it `crm_lookup`, so the case reaches the model through a tool once the caller is verified.
The model is named in the agent's options (`llm:`, see `LLMConfig`): a packaged model run
in-process by default, or any OpenAI-compatible chat-completions endpoint with the key read from
the environment variable it names. Temperature 0 and a fixed seed by default. What it exposes is
what a cascaded system can: the transcript it heard, the words it says, its tool calls and
results, and its state changes (listening, verified, escalated, ended); the model's raw steps are
not events of the adapter protocol. The rules it must not break live in `_llm_policy`.
"""

from __future__ import annotations

from typing import ClassVar

from voice_audit.agents.reference._audio import AgentEar, AgentMouth
from voice_audit.agents.reference._knobs import make_detector
from voice_audit.agents.reference._llm_policy import LLMPolicy, shared_chat_client
from voice_audit.agents.reference._session import TurnSession
from voice_audit.agents.reference.cascaded import CascadedAgent
from voice_audit.harness.adapter import CallInfo
from voice_audit.harness.model.campaign import AgentSpec, Architecture
from voice_audit.harness.tools import ToolFixture


class LLMAgent(CascadedAgent):
    architecture: ClassVar[Architecture] = "casc"
    default_name = "llm"
    crm: ClassVar[bool] = False

    async def connect(self, call: CallInfo) -> TurnSession:
        cfg = self.policy_config
        policy = LLMPolicy(
            call.facts,
            ToolFixture(call.facts),
            shared_chat_client(self.options.llm),
            self.options.llm,
            crm=self.crm,
            required_challenges=cfg.required_challenges,
            max_repairs=cfg.max_repairs,
            max_silences=cfg.max_silences,
            max_turns=cfg.max_turns,
            repair_below_confidence=cfg.repair_below_confidence,
            contextual_asr=cfg.contextual_asr,
            switch_fact_after=cfg.switch_fact_after,
        )
        detector = make_detector({"detector": self.options.detector, **self._runtime}, call.oracle)
        mouth = AgentMouth(self.synthesizer, self.options.voice, self.options.output_rate)
        session = TurnSession(
            call, policy, mouth, self.perceiver(AgentEar(self.recognizer)), detector, self.exposure
        )
        await session.start()
        return session


class LLMHybridAgent(LLMAgent):
    architecture: ClassVar[Architecture] = "hyb"
    default_name = "llm_hybrid"
    crm: ClassVar[bool] = True


def llm(spec: AgentSpec) -> LLMAgent:
    """Entry point `voice_audit.agents`: llm = voice_audit.agents.reference.llm:llm."""
    return LLMAgent(spec.options, name=spec.name)


def llm_hybrid(spec: AgentSpec) -> LLMHybridAgent:
    """Entry point `voice_audit.agents`: llm_hybrid = voice_audit.agents.reference.llm:llm_hybrid."""
    return LLMHybridAgent(spec.options, name=spec.name)
