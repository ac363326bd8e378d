"""Protocol front ends: serve any in-process turn-based agent over http, ws, twilio, realtime,
gemini-live, sip or webrtc (the WebSocket and HTTP ones over TLS with `tls_context`).

The wire contracts are those of the matching clients in `voice_audit.agents.protocols`; the servers bind
127.0.0.1 unless told otherwise.
"""

from voice_audit.agents.serve.config import ServeConfig
from voice_audit.agents.serve.server import (
    PROTOCOLS,
    Protocol,
    ServerHandle,
    serve,
    start_server,
    tls_context,
)
from voice_audit.agents.serve.vad import Endpointer, VadConfig

__all__ = [
    "PROTOCOLS",
    "Endpointer",
    "Protocol",
    "ServeConfig",
    "ServerHandle",
    "VadConfig",
    "serve",
    "start_server",
    "tls_context",
]
