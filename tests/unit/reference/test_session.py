"""Sessions, detectors and options with stand-in audio engines (no models): contract and bad input."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import numpy as np
import pytest

from voice_audit.agents.reference import (
    CascadedAgent,
    HybridAgent,
    NativeAgent,
    cascaded,
    hybrid,
    native,
    utterance_key,
)
from voice_audit.agents.reference._acoustics import measure
from voice_audit.agents.reference._knobs import HeuristicDetector, NoDetector, OracleDetector, make_detector
from voice_audit.agents.reference._options import parse_options
from voice_audit.harness.adapter import (
    CALLER_ACT,
    HUMAN_REQUEST_ACT,
    AgentAdapter,
    AgentEvent,
    AudioOut,
    CallInfo,
    ErrorOut,
    FactsSeenOut,
    HangupOut,
    HeardOut,
    StateOut,
    TextOut,
    ToolCallOut,
    TurnEnd,
)
from voice_audit.harness.audio import SpeechRecognizer, SpeechSynthesizer, Synthesis, Transcript
from voice_audit.harness.model.campaign import AgentSpec
from voice_audit.personas import SpeechParams
from voice_audit.scenarios import BUNDLED_LIBRARY, load_scenario_file

SCEN = load_scenario_file(Path(BUNDLED_LIBRARY) / "refund_duplicate_charge.yaml")


class FakeTTS:
    name = "fake-tts"
    version = "1"
    sample_rate = 16000

    def synthesize(self, text: str, ssml: str | None, params: SpeechParams) -> Synthesis:
        n = 160 * max(1, len(text.split()))
        pcm = (3000 * np.sin(np.arange(n) * 2 * np.pi * 150 / 16000)).astype(np.int16)
        return Synthesis(pcm=pcm, sample_rate=16000, backend=self.name, backend_version="1", params={})


class FakeASR:
    """Returns scripted text by the turn's length in 100 ms units (tests choose lengths)."""

    name = "fake-asr"
    model = "script"

    def __init__(self, script: dict[int, str]) -> None:
        self.script = script
        self.calls = 0

    def transcribe(self, pcm: np.ndarray, sample_rate: int) -> Transcript:
        self.calls += 1
        text = self.script.get(round(len(pcm) / 1600), "")
        return Transcript(text=text, confidence=0.9 if text else None, backend=self.name, model=self.model)


def speech(tenths: int, seed: int = 0) -> bytes:
    """A voiced buzz `tenths` x 100 ms long (periodic, so not noise; loud enough to be speech)."""
    t = np.arange(tenths * 1600) / 16000
    sig = 0.3 * np.sign(np.sin(2 * np.pi * 140 * t)) * (0.6 + 0.4 * np.sin(2 * np.pi * 3 * t + seed))
    return (sig * 20000).astype("<i2").tobytes()


SCRIPT = {
    10: "I was charged twice for my subscription.",
    11: "My name is Jordan Avery Lee.",
    12: "I was born on the fourth of March, nineteen eighty eight.",
    13: "It is the duplicate charge.",
    14: "Yes, please go ahead.",
    15: "Thank you, that is all. Goodbye.",
    16: "Can I speak to a human agent, please?",
    17: "Can I speak to a few men, and please?",
    18: "My zip code is nine four one zero seven.",
}


def agent(
    cls: type[CascadedAgent] | type[NativeAgent], options: dict[str, object] | None = None
) -> AgentAdapter:
    return cls(
        options,
        synthesizer=SpeechSynthesizer(FakeTTS(), pool_size=0),
        recognizer=SpeechRecognizer(FakeASR(SCRIPT)),
    )


async def turn_events(it: object) -> list[AgentEvent]:
    out: list[AgentEvent] = []
    async for ev in it:  # type: ignore[attr-defined]
        out.append(ev)
        if isinstance(ev, TurnEnd):
            break
    return out


TURN_WAIT_S = 30
"""How long a turn's events may take before the test fails as hung: a liveness guard, not a timing
claim (the agent runs on fakes and computes its audio, a hold included, in well under a second on a
quiet machine; a 5 s guard once expired in a loaded `make test` lane)."""


async def call(adapter: AgentAdapter, turns: list[bytes]) -> list[list[AgentEvent]]:
    session = await adapter.connect(CallInfo(facts=SCEN.facts, scenario_id=SCEN.id))
    it = session.events().__aiter__()
    log = [await asyncio.wait_for(turn_events(it), TURN_WAIT_S)]
    for audio in turns:
        if any(isinstance(e, HangupOut) for e in log[-1]):
            break
        await session.send_audio(audio)
        await session.end_turn()
        log.append(await asyncio.wait_for(turn_events(it), TURN_WAIT_S))
    await session.close("done")
    return log


HAPPY = [speech(n) for n in (10, 11, 12, 13, 14, 15)]


def kinds(events: list[AgentEvent]) -> list[str]:
    return [type(e).__name__ for e in events]


async def test_cascaded_contract_and_happy_path() -> None:
    log = await call(agent(CascadedAgent), HAPPY)
    assert isinstance(log[0][0], FactsSeenOut) and log[0][0].sha256 == SCEN.facts_sha256
    assert isinstance(log[0][-1], TurnEnd) and any(isinstance(e, AudioOut) for e in log[0])
    names = [e.name for t in log for e in t if isinstance(e, ToolCallOut)]
    assert names == ["verify_identity", "verify_identity", "policy_lookup", "issue_refund"]
    assert isinstance(log[1][0], HeardOut) and log[1][0].text == SCRIPT[10]
    last = kinds(log[-1])
    assert last[-3:] == ["AudioOut", "HangupOut", "TurnEnd"]
    assert all(isinstance(t[-1], TurnEnd) and t[-1].compute_ms is not None for t in log)


async def test_hybrid_reads_crm() -> None:
    log = await call(agent(HybridAgent), HAPPY)
    names = [e.name for t in log for e in t if isinstance(e, ToolCallOut)]
    assert names[:3] == ["verify_identity", "verify_identity", "crm_lookup"] and "issue_refund" in names


NATIVE_HAPPY = [speech(n) for n in (10, 11, 18, 13, 14, 15)]
"""The native agent asks the zip code second (its own dialogue)."""


async def test_native_exposes_audio_only() -> None:
    log = await call(agent(NativeAgent), NATIVE_HAPPY)
    allowed = {"AudioOut", "FactsSeenOut", "HangupOut", "TurnEnd"}
    assert {k for t in log for k in kinds(t)} <= allowed
    assert any(isinstance(e, HangupOut) and e.reason == "completed" for e in log[-1])


@pytest.mark.parametrize("cls", [CascadedAgent, NativeAgent])
async def test_bad_input_never_crashes(cls: type[CascadedAgent] | type[NativeAgent]) -> None:
    noise = (np.random.default_rng(1).normal(0, 6000, 16000)).astype("<i2").tobytes()
    turns = [b"", b"\x01", noise, speech(3)[:-1], bytes(32000), bytes(32000), bytes(32000)]
    log = await call(agent(cls), turns)
    assert all(isinstance(t[-1], TurnEnd) for t in log)
    assert any(isinstance(e, HangupOut) for t in log for e in t)
    assert not any(isinstance(e, ErrorOut) for t in log for e in t)


async def test_human_request_hands_off_and_iterator_ends() -> None:
    adapter = agent(CascadedAgent)
    session = await adapter.connect(CallInfo(facts=SCEN.facts, scenario_id=SCEN.id))
    it = session.events().__aiter__()
    await turn_events(it)
    await session.send_audio(speech(16))
    await session.end_turn()
    events = await turn_events(it)
    assert any(isinstance(e, TextOut) and "transferring you" in e.text for e in events)
    assert any(isinstance(e, StateOut) and e.to_state == "escalated" for e in events)
    with pytest.raises(StopAsyncIteration):
        await asyncio.wait_for(it.__anext__(), TURN_WAIT_S)
    await session.send_audio(speech(10))  # after the hang-up: ignored, no crash
    await session.end_turn()


async def test_dtmf_digits_are_heard() -> None:
    adapter = agent(CascadedAgent, {"policy": {"challenge_order": ["postcode", "holder_name"]}})
    session = await adapter.connect(CallInfo(facts=SCEN.facts, scenario_id=SCEN.id))
    it = session.events().__aiter__()
    await turn_events(it)
    await session.send_audio(speech(10))
    await session.end_turn()
    await turn_events(it)
    for d in "94107":
        await session.send_dtmf(d)
    await session.end_turn()
    events = await turn_events(it)
    assert any(isinstance(e, ToolCallOut) and e.arguments == {"postcode": "94107"} for e in events)
    await session.close("done")


async def test_oracle_detector_plants_only_for_registered_audio() -> None:
    oracle: dict[str, dict[str, str]] = {}
    opts = {
        "knobs": {"extra_crm_read": {"target": {"axis": "accent", "levels": ["l2_spanish"]}, "reads": 1}},
        "calibration_oracle": oracle,
    }
    for level, reads in (("l2_spanish", 1), ("us_general", 0)):
        oracle.clear()
        for audio in HAPPY:
            oracle[utterance_key(audio)] = {"accent": level}
        log = await call(agent(CascadedAgent, opts), HAPPY)
        names = [e.name for t in log for e in t if isinstance(e, ToolCallOut)]
        assert names.count("crm_lookup") == reads


def test_detectors() -> None:
    audio = speech(10)
    assert OracleDetector({utterance_key(audio): {"affect": "frustrated"}}).observe(audio, None, None) == {
        "affect": "frustrated"
    }
    assert OracleDetector({}).observe(audio, None, None) == {}
    declared = OracleDetector({utterance_key(audio): {"accent": "l2_spanish", CALLER_ACT: HUMAN_REQUEST_ACT}})
    assert declared.observe(audio, None, None) == {"accent": "l2_spanish"}
    assert declared.asks_for_human(audio) is True and declared.asks_for_human(speech(3)) is False
    assert HeuristicDetector().asks_for_human(audio) is None and NoDetector().asks_for_human(audio) is None
    pcm = np.frombuffer(audio, dtype=np.int16)
    loud = np.clip(pcm.astype(np.int32) * 2, -32767, 32767).astype(np.int16)
    assert HeuristicDetector().observe(audio, measure(loud, 16000), None).get("affect") == "frustrated"
    quiet = (pcm // 20).astype(np.int16)
    assert HeuristicDetector().observe(quiet.tobytes(), measure(quiet, 16000), None) == {}
    gapped = np.concatenate(
        [pcm[:8000], np.zeros(8000, np.int16), quiet[:8000], np.zeros(8000, np.int16), pcm[:8000]]
    )
    assert HeuristicDetector().observe(b"", measure(gapped, 16000), None).get("disfluency") == "heavy"
    assert isinstance(make_detector({"detector": "none"}), NoDetector)
    assert isinstance(make_detector({"calibration_oracle": {}}), OracleDetector)
    with pytest.raises(TypeError):
        make_detector({"calibration_oracle": 3})


def test_options_and_factories() -> None:
    opts, runtime = parse_options({"seed": 3, "calibration_oracle": {}, "policy": {"max_repairs": 2}})
    assert opts.seed == 3 and "calibration_oracle" in runtime
    with pytest.raises(ValueError):
        parse_options({"sed": 3})
    with pytest.raises(ValueError):
        CascadedAgent({"policy": {"max_repairz": 2}})
    for factory, arch, transcripts in (
        (cascaded, "casc", True),
        (hybrid, "hyb", True),
        (native, "nat", False),
    ):
        adapter = factory(
            AgentSpec(
                name="ref-x", adapter="voice_audit.agents.reference:x", options={"policy": {"max_repairs": 2}}
            )
        )
        assert adapter.name == "ref-x" and adapter.capabilities.architecture == arch
        assert adapter.capabilities.transcripts is transcripts and adapter.capabilities.turn_based
        assert adapter.policy_config.max_repairs == 2
    assert hybrid(AgentSpec(name="h", adapter="x:y")).policy_config.use_crm


def _samples(turn: list[AgentEvent]) -> int:
    return sum(len(e.pcm) // 2 for e in turn if isinstance(e, AudioOut))


@pytest.mark.parametrize("mode", ["refuse", "delay"])
async def test_declared_request_plants_exactly_although_misheard(mode: str) -> None:
    """The recogniser hears "a few men" for "a human": the knob-free twin transfers when triage
    stalls; the knob agent, told by the oracle that the caller asked, refuses that transfer or
    makes the handoff turn exactly `hold_ms` longer."""
    request = speech(17)
    oracle = {utterance_key(request): {"accent": "l2_spanish", CALLER_ACT: HUMAN_REQUEST_ACT}}
    knob = {
        "target": {"axis": "accent", "levels": ["l2_spanish"]},
        "mode": mode,
        "delay_turns": 0,
        "hold_ms": 5000,
    }
    twin = await call(agent(HybridAgent, {"calibration_oracle": oracle}), [request] * 3)
    log = await call(
        agent(HybridAgent, {"calibration_oracle": oracle, "knobs": {"handoff": knob}}), [request] * 3
    )
    assert any(isinstance(e, HangupOut) for e in twin[-1]) and len(log) == len(twin) == 4
    assert [_samples(t) for t in log[:3]] == [_samples(t) for t in twin[:3]]
    texts = " ".join(e.text for e in log[-1] if isinstance(e, TextOut))
    if mode == "refuse":
        assert "unable to transfer" in texts and not any(isinstance(e, HangupOut) for e in log[-1])
    else:
        assert "Please hold" in texts and any(isinstance(e, HangupOut) for e in log[-1])
        assert _samples(log[-1]) - _samples(twin[-1]) == 5000 * 16
        assert log[-1][-1] == twin[-1][-1]  # the same TurnEnd compute: the hold prompt is free


async def test_hold_drops_an_announcement_that_does_not_fit() -> None:
    from voice_audit.agents.reference._audio import LINE_GAP_MS, AgentMouth

    mouth = AgentMouth(SpeechSynthesizer(FakeTTS(), pool_size=0))
    pcm, announced = await mouth.hold(600, " ".join(["word"] * 60))
    assert not announced and len(pcm) == (600 - LINE_GAP_MS) * 16 and not pcm.any()
    pcm, announced = await mouth.hold(3000, "Please hold.")
    assert announced and len(pcm) == (3000 - LINE_GAP_MS) * 16 and pcm.any()


class SlowASR(FakeASR):
    def transcribe(self, pcm: np.ndarray, sample_rate: int) -> Transcript:
        time.sleep(0.08)
        return super().transcribe(pcm, sample_rate)


async def test_shared_cache_hits_cost_what_the_first_recognition_cost() -> None:
    """Two agents share one recogniser (and its cache): the second hears every turn from the cache
    but reports the same engine compute as the first, so neither looks faster for coming later
    (and the machine's scheduling delays do not enter)."""
    recognizer = SpeechRecognizer(SlowASR(SCRIPT))
    synth = SpeechSynthesizer(FakeTTS(), pool_size=0)
    turns = [speech(n, seed=5) for n in (10, 11, 12)]  # audio no other test has heard
    logs = [
        await call(CascadedAgent(None, synthesizer=synth, recognizer=recognizer), turns) for _ in range(2)
    ]
    assert recognizer.backend.calls == 3  # type: ignore[attr-defined]
    first, second = ([e.compute_ms for t in log[1:] for e in t if isinstance(e, TurnEnd)] for log in logs)
    assert min(first) >= 80 and first == second
