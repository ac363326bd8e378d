"""What both ends of a harness SIP call share: the audio format, the harness's own headers and
how the disclosed facts ride in one, and the process's SIP stack.

The harness's client (`sip`) writes these headers and the serving front end
(`voice_audit.agents.serve.sip_server`) reads them, so each is written once, here.

- `X-Voice-Audit-Call-Id`: `CallInfo.call_id`, the opaque per-call HMAC, so a run joins with
  the agent's logs;
- under `facts_disclosure: full`, `X-Voice-Audit-Facts` (base64url of the zlib-compressed
  canonical JSON of the facts, padding stripped) and `X-Voice-Audit-Scenario`;
- under `full` and `ids`, one `X-Voice-Audit-<Key>` per disclosed id (`X-Voice-Audit-Account-Id`).
"""

from __future__ import annotations

import base64
import zlib
from typing import TYPE_CHECKING

from voice_audit.harness.adapter import AgentError, AudioFormat, CallInfo
from voice_audit.harness.disclosure import disclose
from voice_audit.scenarios import MissingBackendError, canonical_json

if TYPE_CHECKING:
    from voice_audit.agents.protocols.sip_stack import SipStack

__all__ = [
    "CALL_ID_HEADER",
    "FACTS_HEADER",
    "SIP_FORMAT",
    "facts_headers",
    "load_stack",
    "read_facts_header",
]

SIP_FORMAT = AudioFormat("pcm16", 16000)
"""The audio both ends exchange with the stack's conference bridge (it resamples to each codec)."""
CALL_ID_HEADER = "X-Voice-Audit-Call-Id"
"""Carries `CallInfo.call_id` (the opaque per-call HMAC), so a run joins with the agent's logs."""
FACTS_HEADER = "X-Voice-Audit-Facts"
"""The disclosed facts under `facts_disclosure: full` (base64url of their canonical JSON)."""


def facts_headers(call: CallInfo) -> dict[str, str]:
    """What the campaign discloses of the facts, as SIP headers (see the module docstring)."""
    sent = disclose(call.facts, call.disclosure)
    out: dict[str, str] = {}
    if sent.facts is not None:
        packed = zlib.compress(canonical_json(sent.facts).encode(), 9)
        out[FACTS_HEADER] = base64.urlsafe_b64encode(packed).decode().rstrip("=")
        out["X-Voice-Audit-Scenario"] = call.scenario_id
    for key, value in (sent.ids or {}).items():
        out["X-Voice-Audit-" + "-".join(p.capitalize() for p in key.split("_"))] = value
    return out


def read_facts_header(value: str) -> bytes:
    """The canonical JSON a `X-Voice-Audit-Facts` value carries (for the serving side)."""
    return zlib.decompress(base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)))


def load_stack(codecs: tuple[str, ...] = ("PCMU", "PCMA", "G722"), collect_ticks: bool = False) -> SipStack:
    """The process's SIP stack; a missing `pjsua2` names the extra that installs it (the stack
    is imported here, on first use, because `pjsua2` is an optional extra)."""
    try:
        from voice_audit.agents.protocols.sip_stack import SipStack, StackError
    except ModuleNotFoundError as exc:
        raise MissingBackendError("sip", "sip", f"Python module '{exc.name}' not found") from None
    try:
        return SipStack.get(codecs, collect_ticks)
    except StackError as exc:
        raise AgentError("harness_error", f"SIP stack: {exc}") from None
