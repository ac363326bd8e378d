"""The process's one PJSUA2 endpoint, on its own thread, bridged into asyncio.

PJSUA2 (the `pjsua2-python` wheel, PJSIP 2.15) allows one endpoint per process and asserts when
an unregistered thread calls into it, including when Python frees one of its objects. So:

- one thread ("pjsip") creates the endpoint, polls it (`libHandleEvents`, no worker threads, so
  every SIP callback runs there too) and runs the commands asyncio code submits (`run`); every
  PJSUA2 object is created, used and released on it. Coroutines hold an integer handle, never a
  PJSUA2 object, so the garbage collector never frees one on the wrong thread;
- media is clocked by the null sound device's clock thread (a PJSIP thread): each 20 ms it asks
  every call's `FramePort` for the caller's next frame (taken from a deque the asyncio side
  fills) and hands it the agent's mixed frame, which goes to the owning loop through a batched,
  thread-safe inbox (one loop wake-up per tick for all calls, not one per call);
- a call's `FramePort` is never freed while the bridge runs: the bridge keeps calling every port
  (heart-beat frames) and a port whose Python half is being freed could be called back on the
  clock thread mid-teardown, so a finished call's port rests (disconnected, deaf) and is reused by
  a later call; all of them go after the library is destroyed;
- frames cross the SWIG boundary as `ByteVector`s; converting one to bytes element by element
  costs ~300 us, so their storage is copied with ctypes instead (checked at start-up against the
  slow path, which is used if the layout is not the one expected).

The conference bridge runs at 16 kHz (`CLOCK_RATE`); PJSIP resamples to and from each codec.

By layer: `media` (feeds, ports, frame copies), `legs` (calls and accounts on the pjsip thread),
`bridge` (the endpoint's thread and its commands), `calls` (the operations run there).
"""

from voice_audit.agents.protocols.sip_stack.bridge import (
    KNOWN_CODECS,
    MAX_CALLS,
    PORT_GRACE_S,
    SipStack,
    StackError,
    StackFull,
    check_codecs,
)
from voice_audit.agents.protocols.sip_stack.calls import (
    CallerLine,
    accept_incoming,
    answer,
    caller_account,
    feed_stats,
    hangup,
    listen,
    options_ping,
    place_call,
    prepare_caller,
    send_dtmf,
    stop_listening,
)
from voice_audit.agents.protocols.sip_stack.legs import CallEvent, Leg, message_headers
from voice_audit.agents.protocols.sip_stack.media import CLOCK_RATE, FRAME_BYTES, MAX_TX_FRAMES, SILENCE, Feed

__all__ = [
    "CLOCK_RATE",
    "FRAME_BYTES",
    "KNOWN_CODECS",
    "MAX_CALLS",
    "MAX_TX_FRAMES",
    "PORT_GRACE_S",
    "SILENCE",
    "CallEvent",
    "CallerLine",
    "Feed",
    "Leg",
    "SipStack",
    "StackError",
    "StackFull",
    "accept_incoming",
    "answer",
    "caller_account",
    "check_codecs",
    "feed_stats",
    "hangup",
    "listen",
    "message_headers",
    "options_ping",
    "place_call",
    "prepare_caller",
    "send_dtmf",
    "stop_listening",
]
