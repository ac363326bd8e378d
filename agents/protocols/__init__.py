"""Harness-side protocol adapters: each turns an `AgentSpec` with a URL into an `AgentAdapter`.

Entry points (group `voice_audit.agents`): `http`, `ws`, `twilio`, `realtime`. Each module's
docstring is its wire contract.
"""

from agents.protocols.http_turn import HttpTurnAdapter, http_adapter
from agents.protocols.realtime import RealtimeAdapter, realtime_adapter
from agents.protocols.twilio import TWILIO_FORMAT, TwilioAdapter, twilio_adapter
from agents.protocols.ws_stream import WsStreamAdapter, ws_adapter

__all__ = [
    "TWILIO_FORMAT",
    "HttpTurnAdapter",
    "RealtimeAdapter",
    "TwilioAdapter",
    "WsStreamAdapter",
    "http_adapter",
    "realtime_adapter",
    "twilio_adapter",
    "ws_adapter",
]
