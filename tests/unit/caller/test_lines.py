"""The line list is complete: random agents drive the real caller policy, patience and voice
(text transforms included, heavy disfluency and framing too), and every text the caller's voice
hands to TTS is a listed line of that voice; voices a recording cannot tell apart are refused."""

from __future__ import annotations

import asyncio
import random

import numpy as np
import pytest

from voice_audit.harness.adapter import AudioFormat
from voice_audit.harness.audio import SpeechSynthesizer, Synthesis
from voice_audit.harness.caller.lines import campaign_lines, lines_csv
from voice_audit.harness.caller.patience import PATIENCE_PROMPT, CallerPatience
from voice_audit.harness.caller.policy import CallerPolicy, Say
from voice_audit.harness.model.campaign import Patience
from voice_audit.harness.runtime.voice import CallerVoice
from voice_audit.personas import CallerCondition, MatchedPair, SpeechParams, load_catalogue, speech_params
from voice_audit.personas.lines import line_key
from voice_audit.scenarios import BUNDLED_LIBRARY, ConfigError, ScenarioLibrary

AGENT_TURNS = (
    "Thank you for calling, how can I help?",
    "What seems to be the problem?",
    "Sorry, could you repeat that?",
    "Sorry, I missed that. What is your name?",
    "Please hold.",
    "Can you confirm your full name, date of birth and zip code?",
    "What is your email address and your phone number?",
    "What is your account number and the last four digits of the card?",
    "What is the address on the account?",
    "What was the amount and the date of the charge?",
    "What is your PIN?",
    "Can I have your social security number and your date of birth?",
    "I can offer you a refund of the charge.",
    "I am afraid I cannot refund that.",
    "There is no human agent available.",
    "Is there anything else?",
    "",
    "",
)


class Capture:
    """Records every text and voice the caller asks for (no audio engine is needed to check words)."""

    name = "capture"
    version = "1"
    sample_rate = 16000

    def __init__(self) -> None:
        self.said: list[tuple[str, SpeechParams]] = []

    def synthesize(self, text: str, ssml: str | None, params: SpeechParams) -> Synthesis:
        self.said.append((text, params))
        return Synthesis(
            pcm=np.ones(160, np.int16),
            sample_rate=16000,
            backend=self.name,
            backend_version=self.version,
            params={},
        )


def _pair(scenario_id: str, a: CallerCondition, b: CallerCondition, seed: int) -> MatchedPair:
    return MatchedPair(
        pair_id=f"p{seed}",
        scenario_id=scenario_id,
        contrast=("disfluency", "wording"),
        condition_a=a,
        condition_b=b,
        voice_index=1,
        seed=seed,
        replicate=0,
        run_batch="t",
    )


async def _call(
    voice: CallerVoice, policy: CallerPolicy, patience: CallerPatience, rng: random.Random
) -> None:
    """One call against an agent that says random lines: the conversation loop's decisions."""
    now = 0
    turn = 0
    while True:
        text = rng.choice(AGENT_TURNS)
        now += rng.randint(500, 4000)
        if not text:
            if not policy.has_spoken:
                continue
            pd = patience.on_silence(now)
            if pd.action == "hang_up":
                return
            say = (
                policy.ask_for_human(pd.reason).say
                if pd.action == "ask_human"
                else Say("patience_prompt", PATIENCE_PROMPT)
            )
            assert say is not None
        else:
            patience.heard_agent(now)
            decision = policy.decide(text)
            if decision.say is None:
                if decision.hang_up:
                    return
                continue
            say = decision.say
        turn += 1
        await voice.speak(say, turn)
        if text and decision.hang_up:
            return


def test_every_line_a_random_call_says_is_listed() -> None:
    catalogue = load_catalogue()
    library = ScenarioLibrary(BUNDLED_LIBRARY)
    scenarios = {sid: library.get_locked(sid) for sid in ("refund_duplicate_charge", "outage_support")}
    fluent = CallerCondition(
        accent="gb_scottish",
        voice_profile="female_older",
        affect="anxious",
        disfluency="none",
        wording="plain",
    )
    heavy = fluent.model_copy(update={"disfluency": "heavy", "wording": "loyalty"})
    patience = Patience(prompt_after_s=3, prompts_before_human=1, hang_up_after_s=12)
    pairs = [_pair(sid, fluent, heavy, seed) for sid in scenarios for seed in (3, 4)]
    lines = campaign_lines(pairs, scenarios, catalogue, patience)
    listed = {v.key for v in lines}
    voices = {v.voice for v in lines}
    assert voices == {"gb_scottish/female_older/1/anxious"}
    backend = Capture()
    synth = SpeechSynthesizer(backend, pool_size=0)
    rng = random.Random(20261201)
    for pair in pairs:
        scenario = scenarios[pair.scenario_id]
        for condition in (pair.condition_a, pair.condition_b):
            for _ in range(15):
                voice = CallerVoice(
                    synth,
                    catalogue,
                    condition,
                    speech_params(catalogue, condition, 1),
                    dict(scenario.caller.slots),
                    pair.seed,
                    None,
                    AudioFormat("pcm16", 16000),
                )
                asyncio.run(_call(voice, CallerPolicy(scenario), CallerPatience(patience), rng))
    texts = set()
    composites = 0
    for text, params in backend.said:  # each distinct utterance once (the synthesis cache)
        texts.add(text)
        key = line_key(params, text)
        if key in listed:
            continue
        composites += 1
        # a turn of several lines: each of its lines is listed (the backend plays them in turn)
        parts = [v.text for v in lines if v.text in text and line_key(params, v.text) in listed]
        assert parts and _covers(text, parts), f"not listed: {text!r}"
    # each template is said in one variant per seed (repeats say the same words): two seeds, two
    # scenarios, a fluent and a heavy condition give dozens of distinct texts, not hundreds
    assert len(texts) > 60 and composites > 10
    assert any("um," in t or "uh," in t or "er," in t for t in texts)  # the heavy cell's fillers were drawn


def _covers(text: str, parts: list[str]) -> bool:
    """`text` is some of `parts` said one after another (single spaces between them)."""
    if not text:
        return True
    return any(text.startswith(p) and _covers(text[len(p) :].removeprefix(" "), parts) for p in parts if p)


def test_voices_that_differ_only_in_rate_are_refused() -> None:
    catalogue = load_catalogue()
    calm = catalogue.affect["calm"]
    faster = calm.model_copy(update={"label": "Hurried", "rate_wpm": 220})
    cat = catalogue.model_copy(update={"affect": {**catalogue.affect, "hurried": faster}})
    library = ScenarioLibrary(BUNDLED_LIBRARY)
    scenarios = {"refund_duplicate_charge": library.get_locked("refund_duplicate_charge")}
    a = CallerCondition(
        accent="us_general", voice_profile="male_adult", affect="calm", disfluency="none", wording="plain"
    )
    b = a.model_copy(update={"affect": "hurried"})
    pair = MatchedPair(
        pair_id="p",
        scenario_id="refund_duplicate_charge",
        contrast=("affect",),
        condition_a=a,
        condition_b=b,
        voice_index=0,
        seed=1,
        replicate=0,
        run_batch="t",
    )
    with pytest.raises(ConfigError, match="differ only in speaking rate"):
        campaign_lines([pair], scenarios, cat, Patience())


def test_the_list_is_stable_and_names_each_use() -> None:
    catalogue = load_catalogue()
    library = ScenarioLibrary(BUNDLED_LIBRARY)
    scenarios = {"plan_correction": library.get_locked("plan_correction")}
    a = CallerCondition(
        accent="us_general", voice_profile="male_adult", affect="calm", disfluency="none", wording="plain"
    )
    b = a.model_copy(update={"accent": "l2_french"})
    pair = MatchedPair(
        pair_id="p",
        scenario_id="plan_correction",
        contrast=("accent",),
        condition_a=a,
        condition_b=b,
        voice_index=2,
        seed=9,
        replicate=0,
        run_batch="t",
    )
    first = lines_csv(campaign_lines([pair], scenarios, catalogue, Patience()))
    again = lines_csv(campaign_lines([pair], scenarios, catalogue, Patience()))
    assert first == again
    rows = first.decode().splitlines()
    assert rows[0].startswith("key,file,voice,")
    lines = campaign_lines([pair], scenarios, catalogue, Patience())
    per_voice = {v.voice for v in lines}
    assert per_voice == {"us_general/male_adult/2/calm", "l2_french/male_adult/2/calm"}
    texts = {v.voice: sorted(x.text for x in lines if x.voice == v.voice) for v in lines}
    assert (
        texts["us_general/male_adult/2/calm"] == texts["l2_french/male_adult/2/calm"]
    )  # same words, own voices
    assert all(v.uses and all(u.startswith("plan_correction:") for u in v.uses) for v in lines)
    assert any(u.split(":")[1] == "patience_prompt" for v in lines for u in v.uses)


def test_a_declared_interruption_line_is_listed_for_every_voice() -> None:
    from voice_audit.harness.caller.interruption import INTERRUPTION_LINE
    from voice_audit.harness.model.campaign import Interruptions

    catalogue = load_catalogue()
    scenarios = {"plan_correction": ScenarioLibrary(BUNDLED_LIBRARY).get_locked("plan_correction")}
    a = CallerCondition(
        accent="us_general", voice_profile="female_adult", affect="calm", disfluency="mild", wording="plain"
    )
    b = a.model_copy(update={"accent": "caribbean"})
    pair = MatchedPair(
        pair_id="p",
        scenario_id="plan_correction",
        contrast=("accent",),
        condition_a=a,
        condition_b=b,
        voice_index=0,
        seed=2,
        replicate=0,
        run_batch="t",
    )
    plain = campaign_lines([pair], scenarios, catalogue, Patience())
    barging = campaign_lines(
        [pair], scenarios, catalogue, Patience(), Interruptions(at_ms=800, reason="correction")
    )
    assert not any("interruption" in u for v in plain for u in v.uses)
    extra = {v.key: v for v in barging}.keys() - {v.key for v in plain}
    added = [v for v in barging if v.key in extra]
    assert {v.voice for v in added} == {"us_general/female_adult/0/calm", "caribbean/female_adult/0/calm"}
    assert all(u.split(":")[1] == "interruption" for v in added for u in v.uses)
    words = INTERRUPTION_LINE["correction"].split()
    assert all(all(w in v.text for w in words) for v in added)  # the line, fillers aside
