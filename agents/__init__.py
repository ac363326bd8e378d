"""Agent adapters: the AgentAdapter protocol (defined in `harness.adapter`), protocol clients
(`agents.protocols`: HTTP turn API, WebSocket streaming, Twilio Media Streams, OpenAI Realtime),
servers that expose any in-process agent over those protocols (`agents.serve`), and the bundled
reference agents (`agents.reference`: cascaded, hybrid, native). In-process agents that queue their
events build their sessions on `QueueSession` (`agents.session`); the fake agents for testing the
harness share their pieces from `agents.testing`.
"""

from agents.session import EventQueue, QueueSession
from harness.adapter import AgentAdapter, AgentSession, CallInfo, Capabilities

__all__ = ["AgentAdapter", "AgentSession", "CallInfo", "Capabilities", "EventQueue", "QueueSession"]
