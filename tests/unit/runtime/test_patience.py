"""The caller's patience: prompt after N s of silence, ask for a human after K prompts, hang up at
the budget; harness timeouts must exceed it."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from voice_audit.harness.caller.patience import PATIENCE_LINES, PATIENCE_PROMPT, CallerPatience
from voice_audit.harness.caller.policy import caller_lines
from voice_audit.harness.model.campaign import PATIENCE_MARGIN_S, Campaign, Patience, Timeouts
from voice_audit.scenarios import BUNDLED_LIBRARY, load_scenario_file


def test_prompt_then_human_then_hang_up_on_a_silent_agent() -> None:
    p = CallerPatience(Patience(prompt_after_s=8, prompts_before_human=2, hang_up_after_s=45))
    p.caller_spoke(1000)
    assert p.wait_ms(1000) == (8000, 45000)
    actions = []
    t = 1000
    while True:
        t += 8000  # a silent turn: the caller waited prompt_after_s
        d = p.on_silence(t)
        actions.append((d.action, d.silence_ms, d.prompts))
        if d.action == "hang_up":
            break
        t += 2000  # the caller's line
    assert actions == [
        ("prompt", 8000, 0),
        ("prompt", 18000, 1),
        ("ask_human", 28000, 2),
        ("prompt", 38000, 2),
        ("hang_up", 48000, 3),
    ]
    assert p.exhausted(t)


def test_waits_never_outlast_the_budget() -> None:
    p = CallerPatience(Patience(prompt_after_s=8, hang_up_after_s=10))
    assert p.wait_ms(0) == (8000, 10000)
    assert p.wait_ms(7000) == (3000, 3000)
    assert p.wait_ms(12000) == (0, 0)


def test_the_agent_speaking_restarts_patience() -> None:
    p = CallerPatience(Patience(prompt_after_s=8, prompts_before_human=1, hang_up_after_s=20))
    assert p.on_silence(8000).action == "prompt"
    assert p.on_silence(17000).action == "ask_human"
    p.heard_agent(18000)
    d = p.on_silence(26000)
    assert (d.action, d.silence_ms, d.prompts) == ("prompt", 8000, 0)
    p.caller_spoke(30000)
    assert p.silence_at(31000) == 1000


def test_prompts_do_not_restart_patience_only_the_callers_own_turns_do() -> None:
    p = CallerPatience(Patience(prompt_after_s=5, hang_up_after_s=12))
    p.caller_spoke(0)
    assert p.on_silence(5000).action == "prompt"
    assert p.on_silence(13000).action == "hang_up"  # the prompt's 3 s count as silence too


def test_patience_lines_are_fixed_and_in_the_callers_vocabulary() -> None:
    assert PATIENCE_LINES == (PATIENCE_PROMPT,)
    assert PATIENCE_PROMPT in caller_lines(
        load_scenario_file(BUNDLED_LIBRARY / "refund_duplicate_charge.yaml")
    )


def _campaign(**over: object) -> Campaign:
    base: dict[str, object] = {
        "name": "c",
        "scenarios": ["refund_duplicate_charge"],
        "agents": [{"name": "a", "adapter": "scripted"}],
        "pairs": [{"contrast": ["accent"], "a": {"accent": "us_general"}, "b": {"accent": "gb_rp"}}],
    }
    return Campaign.model_validate({**base, **over})


def test_default_timeouts_exceed_default_patience() -> None:
    c = _campaign()
    assert c.timeouts.turn_s > c.patience.hang_up_after_s + PATIENCE_MARGIN_S
    assert Timeouts().call_s > Patience().hang_up_after_s + PATIENCE_MARGIN_S


@pytest.mark.parametrize("field", ["turn_s", "call_s"])
def test_a_timeout_inside_the_callers_patience_is_refused(field: str) -> None:
    with pytest.raises(
        ValidationError, match=rf"timeouts\.{field} \(30 s\) must exceed patience\.hang_up_after_s"
    ):
        _campaign(timeouts={field: 30})
    _campaign(timeouts={field: 30}, patience={"prompt_after_s": 5, "hang_up_after_s": 20})


def test_prompting_after_hanging_up_is_refused() -> None:
    with pytest.raises(ValidationError, match=r"exceeds patience\.hang_up_after_s"):
        Patience(prompt_after_s=20, hang_up_after_s=10)
