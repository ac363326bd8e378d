"""The Realtime front end's session: what the client configured, and the call it describes.

`session.update` may come in the GA shape (nested `audio`) or the beta one (`input_audio_format`);
the first beta field switches the connection to beta event names. The session object echoed in
`session.created/updated` is the configuration as the server holds it, tools in full.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import ValidationError

from voice_audit.agents.protocols.realtime_wire import PCM24, format_from_session, new_id, session_format
from voice_audit.agents.serve.config import ServeConfig
from voice_audit.harness.adapter import AgentError, AudioFormat, CallInfo
from voice_audit.scenarios import Facts

__all__ = ["FACTS_RE", "RealtimeSessionState"]

FACTS_RE = re.compile(r'<facts scenario="([^"]*)" call_id="([^"]*)">(.*?)</facts>', re.DOTALL)


class RealtimeSessionState:
    def __init__(self, config: ServeConfig) -> None:
        self.cfg = config
        self.id = new_id("sess")
        self.fmt: AudioFormat = PCM24
        self.turn_detection: dict[str, Any] | None = {"type": "server_vad"}
        self.tools: list[dict[str, Any]] = []
        self.instructions = ""
        self.beta = False

    @property
    def tool_names(self) -> set[str]:
        return {str(t.get("name")) for t in self.tools}

    @property
    def manual(self) -> bool:
        return self.turn_detection is None

    def configure(self, s: dict[str, Any]) -> bool:
        """Apply a `session.update`; True when the input format changed (the endpointer restarts)."""
        if "input_audio_format" in s or "output_audio_format" in s:
            self.beta = True
        audio = s.get("audio") or {}
        audio_in = audio.get("input") or {}
        fmt = audio_in.get("format") or s.get("input_audio_format")
        changed = False
        if fmt is not None:
            self.fmt, changed = format_from_session(fmt), True
        if "turn_detection" in audio_in:
            self.turn_detection = audio_in["turn_detection"]
        elif "turn_detection" in s:
            self.turn_detection = s["turn_detection"]
        if "tools" in s:
            self.tools = [dict(t) for t in s["tools"] or [] if isinstance(t, dict) and t.get("name")]
        if "instructions" in s:
            self.instructions = str(s["instructions"])
        return changed

    def session_obj(self) -> dict[str, Any]:
        fmt = session_format(self.fmt, self.beta)
        if self.beta:
            return {
                "id": self.id,
                "object": "realtime.session",
                "modalities": ["audio", "text"],
                "input_audio_format": fmt,
                "output_audio_format": fmt,
                "turn_detection": self.turn_detection,
                "tools": self.tools,
                "instructions": self.instructions,
            }
        return {
            "id": self.id,
            "object": "realtime.session",
            "type": "realtime",
            "output_modalities": ["audio"],
            "instructions": self.instructions,
            "audio": {
                "input": {"format": fmt, "turn_detection": self.turn_detection},
                "output": {"format": fmt},
            },
            "tools": self.tools,
        }

    def call_info(self) -> CallInfo | None:
        """The call's facts from the `<facts>` block of the instructions, else the served default."""
        m = FACTS_RE.search(self.instructions)
        if m:
            try:
                facts = Facts.model_validate_json(m.group(3))
            except ValidationError as exc:
                raise AgentError(
                    "malformed_frame", f"facts in instructions are invalid: {exc.error_count()} errors"
                ) from None
            return CallInfo(
                facts=facts, scenario_id=m.group(1) or "unknown", call_id=m.group(2) or new_id("call")
            )
        return self.cfg.default_call() if self.cfg.default_call else None
