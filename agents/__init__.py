"""Agent adapters: the AgentAdapter protocol (defined in `voice_audit.harness.adapter`), protocol clients
(`voice_audit.agents.protocols`: HTTP turn API, WebSocket streaming, Twilio Media Streams, OpenAI Realtime),
servers that expose any in-process agent over those protocols (`voice_audit.agents.serve`), the bundled
reference agents (`voice_audit.agents.reference`: cascaded, hybrid, native), and the fake agents for testing
the harness (`voice_audit.agents.fakes`: scripted, tone, chaos). In-process agents that queue their events
build their sessions on `QueueSession` (`voice_audit.agents.session`). A session served to an app
can use the tool results the app sends (`AppToolSession`, `voice_audit.agents.app_tools`) and take
typed caller turns (`TypedTurnSession`, `voice_audit.agents.typed_turns`).
"""

from voice_audit.agents.app_tools import AppToolSession
from voice_audit.agents.session import EventQueue, QueueSession
from voice_audit.agents.typed_turns import TypedTurnSession
from voice_audit.harness.adapter import AgentAdapter, AgentSession, CallInfo, Capabilities

__all__ = [
    "AgentAdapter",
    "AgentSession",
    "AppToolSession",
    "CallInfo",
    "Capabilities",
    "EventQueue",
    "QueueSession",
    "TypedTurnSession",
]
