"""Wire faults: the one hook that lets an in-process test agent make a front end misbehave.

The chaos agent (`voice_audit.agents.fakes.chaos`) is turn-based and in-process, but the faults it stands
for (a garbage frame, a dropped socket, a 5xx, an audio flood, no marks) happen on the wire, in
the front end that serves it. It asks for them with a `WireFault`. Because a `WireFault` is an
`ErrorOut` of the matching kind, a run that calls the agent in-process, or a front end that does
not know the hook, still ends the call with an honest error instead of silently succeeding.

Actions (each front end does what its protocol allows; see the servers):
    raw       send `payload` verbatim (text or binary frame; the HTTP response body)
    bad_audio send an audio frame in a wrong encoding (an unknown codec name, a data: URI
              instead of base64) in the protocol's own audio message shape
    drop      abort the TCP connection: no close frame, no HTTP response
    status    HTTP only: answer the turn with `status` (a 5xx)
    flood     send `flood_s` seconds of audio as fast as the socket takes it
    no_marks  Twilio only: never send a mark for the rest of the call (not fatal)
After raw, bad_audio and flood the front end keeps the connection open and silent, so what the
harness reports comes from the fault itself, not from a close that follows it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

from voice_audit.harness.adapter import ErrorOut

__all__ = ["BAD_AUDIO_B64", "WireAction", "WireFault", "flood", "idle_forever", "wire_fault"]

WireAction = Literal["raw", "bad_audio", "drop", "status", "flood", "no_marks"]

BAD_AUDIO_B64 = "data:audio/wav;base64,UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA="
"""Audio wrapped in a WAV data: URI where raw base64 samples are expected (not valid base64)."""


@dataclass(frozen=True, slots=True)
class WireFault(ErrorOut):
    action: WireAction = "raw"
    payload: str | bytes = b""
    status: int = 503
    flood_s: float = 300.0


def wire_fault(ev: object) -> WireFault | None:
    return ev if isinstance(ev, WireFault) else None


async def idle_forever() -> None:
    """Keep a faulted connection open and silent until the peer gives up (the task is cancelled)."""
    await asyncio.Event().wait()


async def flood(seconds: float, frame_ms: int, send_frame: Callable[[int], Awaitable[None]]) -> None:
    """Send `seconds` of audio in `frame_ms` frames with no pacing at all (yielding now and then)."""
    frames = int(seconds * 1000 / frame_ms)
    for i in range(frames):
        await send_frame(i)
        if i % 50 == 0:
            await asyncio.sleep(0)
