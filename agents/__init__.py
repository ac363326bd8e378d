"""Agent adapters: the AgentAdapter protocol (defined in `harness.adapter`), protocol clients
(`agents.protocols`: HTTP turn API, WebSocket streaming, Twilio Media Streams, OpenAI Realtime),
servers that expose any in-process agent over those protocols (`agents.serve`), and the bundled
reference agents (`agents.reference`: cascaded, hybrid, native).
"""

from harness.adapter import AgentAdapter, AgentSession, CallInfo, Capabilities

__all__ = ["AgentAdapter", "AgentSession", "CallInfo", "Capabilities"]
