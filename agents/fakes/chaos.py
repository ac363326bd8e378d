"""The chaos fake: a turn-based agent that fails on a seeded schedule, to prove the harness holds.

It talks like a tiny scripted agent (a line of text and a short tone per turn) until the turn
`at_turn` of a faulted call, where it does one fault from `faults`:

    hang            never answers again                  -> timeout_turn
    drop            the connection is dropped            -> disconnect
    malformed_json  a frame that is not JSON             -> malformed_frame
    bad_audio       audio in a wrong encoding            -> malformed_frame
    flood           minutes of audio, unpaced            -> protocol_error (streaming protocols)
    http_5xx        the turn is answered with a 5xx      -> http_error (HTTP)
    no_marks        Twilio: never sends a mark (from the greeting on) -> the call still completes
    exception       the agent raises                     -> agent_error

Wire faults happen in the front end that serves it (`voice_audit.agents.serve.faults.WireFault`); called
in-process, each becomes a fatal error of the same kind. Which calls fail, and how, is a pure
function of (`seed`, call id), so a rerun with the same seed fails the same calls the same way,
and a retry (a new call id) draws afresh.

Options: `faults` (list, default all), `seed` (0), `rate` (1.0: share of calls faulted),
`at_turn` (1: after the caller's first utterance; 0 = during the greeting), `hangup_after` (4),
`audio_ms` (60; short enough that no ASR is needed to hear it), `flood_s` (300), `status` (503).
"""

from __future__ import annotations

import hashlib
from typing import Any, Literal, get_args

from voice_audit.agents.fakes._shell import FakeAgent
from voice_audit.agents.fakes._signal import tone
from voice_audit.agents.serve.faults import WireFault
from voice_audit.agents.session import QueueSession
from voice_audit.harness.adapter import (
    AudioOut,
    CallInfo,
    FactsSeenOut,
    HangupOut,
    TextOut,
    TurnEnd,
)
from voice_audit.harness.model.campaign import AgentSpec
from voice_audit.scenarios import ConfigError

__all__ = ["FAULTS", "ChaosAgent", "ChaosSession", "Fault", "chaos", "pick_fault"]

Fault = Literal["hang", "drop", "malformed_json", "bad_audio", "flood", "http_5xx", "no_marks", "exception"]
FAULTS: tuple[Fault, ...] = get_args(Fault)

TRUNCATED_JSON = '{"type": "audio", "event": "media", "audio": "AAAA'
"""Cut off mid-string: garbage in every protocol's JSON framing."""


def pick_fault(seed: int, call_id: str, faults: tuple[Fault, ...], rate: float) -> Fault | None:
    """The fault of one call: deterministic in (seed, call id), uniform over `faults`."""
    digest = hashlib.sha256(f"chaos|{seed}|{call_id}".encode()).digest()
    if int.from_bytes(digest[:8], "big") / 2**64 >= rate or not faults:
        return None
    return faults[int.from_bytes(digest[8:16], "big") % len(faults)]


class ChaosSession(QueueSession):
    def __init__(self, agent: ChaosAgent, call: CallInfo) -> None:
        super().__init__()
        self.agent, self.call = agent, call
        self.fault = pick_fault(agent.seed, call.call_id, agent.faults, agent.rate)
        self.turn = 0
        self.queue.put_nowait(FactsSeenOut(call.facts_sha256))
        self._respond()

    def _respond(self) -> None:
        q, turn = self.queue, self.turn
        self.turn += 1
        strike_at = 0 if self.fault == "no_marks" else self.agent.at_turn  # "never": from the start
        if self.fault is not None and turn == strike_at:
            self._strike(self.fault)
            if self.fault != "no_marks":
                return
        q.put_nowait(TextOut(f"Chaos agent, turn {turn}. Please go on."))
        q.put_nowait(AudioOut(tone(self.agent.audio_ms, hz=330.0), 16000))
        if turn >= self.agent.hangup_after:
            q.put_nowait(HangupOut("chaos agent done"))
            q.put_nowait(None)
        else:
            q.put_nowait(TurnEnd(0.0))

    def _strike(self, fault: Fault) -> None:
        a, q = self.agent, self.queue
        match fault:
            case "hang":
                pass  # nothing, ever
            case "exception":
                q.put_nowait(RuntimeError("chaos: injected agent crash"))
            case "drop":
                q.put_nowait(WireFault("disconnect", "chaos: connection dropped", action="drop"))
            case "malformed_json":
                q.put_nowait(WireFault("malformed_frame", "chaos: frame is not JSON", payload=TRUNCATED_JSON))
            case "bad_audio":
                q.put_nowait(
                    WireFault("malformed_frame", "chaos: audio in a wrong encoding", action="bad_audio")
                )
            case "flood":
                q.put_nowait(
                    WireFault("protocol_error", "chaos: audio flood", action="flood", flood_s=a.flood_s)
                )
            case "http_5xx":
                q.put_nowait(
                    WireFault("http_error", f"chaos: HTTP {a.status}", action="status", status=a.status)
                )
            case "no_marks":
                q.put_nowait(WireFault("protocol_error", "chaos: no marks", fatal=False, action="no_marks"))

    async def send_audio(self, chunk: bytes) -> None:
        del chunk

    async def end_turn(self) -> None:
        self._respond()


class ChaosAgent(FakeAgent[ChaosSession]):
    name = "chaos"

    def __init__(self, options: dict[str, Any] | None = None) -> None:
        opts = dict(options or {})
        faults = tuple(opts.get("faults") or FAULTS)
        unknown = sorted(set(faults) - set(FAULTS))
        if unknown:
            raise ConfigError(
                f"chaos agent: unknown fault(s) {', '.join(map(str, unknown))}",
                fix=f"use {', '.join(FAULTS)}",
            )
        self.faults: tuple[Fault, ...] = faults
        self.seed = int(opts.get("seed", 0))
        self.rate = float(opts.get("rate", 1.0))
        self.at_turn = int(opts.get("at_turn", 1))
        self.hangup_after = int(opts.get("hangup_after", 4))
        self.audio_ms = int(opts.get("audio_ms", 60))
        self.flood_s = float(opts.get("flood_s", 300.0))
        self.status = int(opts.get("status", 503))
        super().__init__(architecture=None, transcripts=True, tool_trace=False)

    def session(self, call: CallInfo) -> ChaosSession:
        return ChaosSession(self, call)


def chaos(spec: AgentSpec) -> ChaosAgent:
    """Factory for campaigns and `voice-audit agents serve` (entry point `chaos`)."""
    return ChaosAgent(spec.options)
