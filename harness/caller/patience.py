"""The caller's patience: with a silent agent (prompt, then ask for a human, then hang up) and
with a repair loop (ask for a human, then hang up with reason `repair_loop`).

Silence is measured on the episode clock from the moment the agent is due to speak (the end of
its last audible turn, or of the caller's last turn that was not a patience prompt, or the start of
the call), so it reads the same in accelerated and real-time pacing. Prompts do not restart it. Every decision is a
fixed line or a hang-up, chosen from the silence so far and the unanswered prompts alone: both
calls of a pair decide the same whenever the agent is silent at the same points.

A repair loop is counted in exchanges, not time: each agent turn the caller's acting reader read
is a repair exchange or progress by `voice_audit.scenarios.safety.repair_exchange` (the definition the
`safety_repair_loop` metric reads back from the log), so the count is the same in accelerated
and real-time pacing, and for both calls of a pair whenever the agent answers them alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from voice_audit.harness.model.campaign import Patience
from voice_audit.scenarios.safety import REPAIR_LOOP_REASON, repair_exchange

PATIENCE_PROMPT = "Hello? Are you still there?"
PATIENCE_LINES: tuple[str, ...] = (PATIENCE_PROMPT,)
"""Every line patience can make the caller say (a request for a human is the policy's own line)."""

PatienceAction = Literal["prompt", "ask_human", "hang_up"]


@dataclass(frozen=True)
class PatienceDecision:
    action: PatienceAction
    silence_ms: int
    prompts: int
    budget_ms: int
    reason: str
    exchanges: int | None = None


class CallerPatience:
    """One caller's patience across a call."""

    def __init__(self, limits: Patience) -> None:
        self.limits = limits
        self.prompt_ms = round(limits.prompt_after_s * 1000)
        self.budget_ms = round(limits.hang_up_after_s * 1000)
        self.heard_ms = 0
        self.prompts = 0
        self.asked_human = False

    def heard_agent(self, t_ms: int) -> None:
        """The agent made itself heard up to `t_ms`: silence starts again from there."""
        self.heard_ms = max(self.heard_ms, t_ms)
        self.prompts = 0
        self.asked_human = False

    def caller_spoke(self, t_ms: int) -> None:
        """The caller finished a turn of its own (not a prompt) at `t_ms`: the agent is due from there."""
        self.heard_ms = max(self.heard_ms, t_ms)

    def silence_at(self, now_ms: int) -> int:
        return max(0, now_ms - self.heard_ms)

    def wait_ms(self, now_ms: int) -> tuple[int, int]:
        """(how long to wait for the agent to start before the turn counts as silence, how long
        before patience runs out): the first never exceeds the second."""
        left = max(0, self.budget_ms - self.silence_at(now_ms))
        return min(self.prompt_ms, left), left

    def exhausted(self, now_ms: int) -> bool:
        return self.silence_at(now_ms) >= self.budget_ms

    def on_silence(self, now_ms: int) -> PatienceDecision:
        """What the caller does after an agent turn of silence, once it has spoken itself."""
        silence = self.silence_at(now_ms)
        if silence >= self.budget_ms:
            return PatienceDecision(
                "hang_up",
                silence,
                self.prompts,
                self.budget_ms,
                f"agent silent for {silence / 1000:.1f} s (patience {self.budget_ms / 1000:g} s)",
            )
        if self.prompts >= self.limits.prompts_before_human and not self.asked_human:
            self.asked_human = True
            return PatienceDecision(
                "ask_human",
                silence,
                self.prompts,
                self.budget_ms,
                f"{self.prompts} prompts unanswered, agent silent for {silence / 1000:.1f} s",
            )
        self.prompts += 1
        return PatienceDecision(
            "prompt", silence, self.prompts - 1, self.budget_ms, f"agent silent for {silence / 1000:.1f} s"
        )


class RepairLoopPatience:
    """One caller's patience with a repair loop: `repairs_before_human` consecutive repair
    exchanges and it asks for a human; `repairs_after_human` more and it hangs up. An exchange
    that moves the call forward resets both; a silent turn is not an exchange (the silence
    patience's)."""

    def __init__(self, limits: Patience) -> None:
        self.before_human = limits.repairs_before_human
        self.after_human = limits.repairs_after_human
        self.run = 0
        self.asked_human = False
        self.previous_fact: str | None = None

    def on_exchange(
        self, classification: str, acts: tuple[str, ...], fact: str | None
    ) -> PatienceDecision | None:
        """The caller read one agent turn (primary classification, acts, asked facts joined):
        None to carry on, or the decision to ask for a human or hang up."""
        kind = repair_exchange(classification, acts, fact, self.previous_fact)
        self.previous_fact = fact
        if kind is None:
            self.run = 0
            self.asked_human = False
            return None
        self.run += 1
        limit = self.before_human + self.after_human
        if self.asked_human and self.run >= limit:
            return PatienceDecision(
                "hang_up",
                0,
                0,
                0,
                f"{REPAIR_LOOP_REASON}: {self.run} unproductive exchanges in a row (last: {kind}; patience {limit})",
                self.run,
            )
        if not self.asked_human and self.run >= self.before_human:
            self.asked_human = True
            return PatienceDecision(
                "ask_human", 0, 0, 0, f"{self.run} unproductive exchanges in a row (last: {kind})", self.run
            )
        return None
