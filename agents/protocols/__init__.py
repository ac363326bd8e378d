"""Harness-side protocol adapters: each turns an `AgentSpec` with a URL into an `AgentAdapter`.

Entry points (group `voice_audit.agents`): `http`, `ws`, `twilio`, `realtime`, `gemini-live`. Each module's
docstring is its wire contract. The message shapes are written once per protocol and shared with
the serving front ends (`voice_audit.agents.serve`): `http_wire` (the HTTP turn API), `ws_wire` (the WebSocket
contract; both carry the event objects of `event_json`),
`twilio_wire` (Twilio Media Streams), `realtime_wire` (OpenAI Realtime, GA and beta names), `gemini_live_wire` (the Gemini Live API). The
streaming sessions share one base, `ws_session.WsSession`; `install_log_redaction` keeps credentials
in WebSocket headers out of the websockets library's logs (the serving front ends install it too).
"""

from voice_audit.agents.protocols._secrets import install_log_redaction
from voice_audit.agents.protocols.gemini_live import GeminiLiveAdapter, gemini_live_adapter
from voice_audit.agents.protocols.http_turn import HttpTurnAdapter, http_adapter
from voice_audit.agents.protocols.realtime import RealtimeAdapter, realtime_adapter
from voice_audit.agents.protocols.twilio import TWILIO_FORMAT, TwilioAdapter, twilio_adapter
from voice_audit.agents.protocols.ws_stream import WsStreamAdapter, ws_adapter

__all__ = [
    "TWILIO_FORMAT",
    "GeminiLiveAdapter",
    "HttpTurnAdapter",
    "RealtimeAdapter",
    "TwilioAdapter",
    "WsStreamAdapter",
    "gemini_live_adapter",
    "http_adapter",
    "install_log_redaction",
    "realtime_adapter",
    "twilio_adapter",
    "ws_adapter",
]
