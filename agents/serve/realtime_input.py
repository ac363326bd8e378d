"""The Realtime front end's input audio buffer: server VAD or manual commits, and the user items.

With server VAD, `speech_started` names the user item the commit will create, and
`speech_stopped`, `committed` and `conversation.item.created` reuse that id; the millisecond
fields place the utterance on the session's input timeline (pre-roll and hangover included).
"""

from __future__ import annotations

from voice_audit.agents.protocols.realtime_wire import ServerWire, new_id, user_audio_item
from voice_audit.agents.serve.realtime_response import Send
from voice_audit.agents.serve.vad import Endpointer, VadConfig
from voice_audit.harness.adapter import AudioFormat

__all__ = ["InputAudio"]


class InputAudio:
    def __init__(self, send: Send, wire: ServerWire, fmt: AudioFormat, vad: VadConfig) -> None:
        self._send, self._wire, self._vad = send, wire, vad
        self.rate = fmt.sample_rate
        self.endp = Endpointer(self.rate, vad)
        self.buffer = bytearray()  # pcm16 at `rate`, manual turns
        self._next_item: str | None = None
        self.last_item: str | None = None
        self.last_audio_s = 0.0
        self.pending: bytes | None = None  # committed and not yet answered

    def restart(self, fmt: AudioFormat) -> None:
        self.rate = fmt.sample_rate
        self.endp = Endpointer(self.rate, self._vad)

    def push(self, pcm16: bytes) -> list[tuple[str, bytes]]:
        return self.endp.push(pcm16)

    async def speech_started(self) -> None:
        self._next_item = new_id("item")
        await self._send(
            self._wire.event(
                "input_audio_buffer.speech_started",
                audio_start_ms=self.endp.start_ms,
                item_id=self._next_item,
            )
        )

    async def speech_stopped(self, utt: bytes) -> None:
        item_id = self._next_item or new_id("item")
        await self._send(
            self._wire.event(
                "input_audio_buffer.speech_stopped", audio_end_ms=self.endp.end_ms, item_id=item_id
            )
        )
        await self.commit(utt, item_id)

    async def commit(self, utt: bytes, item_id: str | None = None) -> None:
        prev, self.last_item = self.last_item, item_id or new_id("item")
        self._next_item = None
        self.pending, self.last_audio_s = utt, len(utt) / (2 * self.rate)
        await self._send(
            self._wire.event("input_audio_buffer.committed", item_id=self.last_item, previous_item_id=prev)
        )
        await self._send(
            self._wire.event(
                "conversation.item.created", previous_item_id=prev, item=user_audio_item(self.last_item)
            )
        )

    async def commit_buffer(self) -> bool:
        """`input_audio_buffer.commit`; False (nothing sent) when the buffer is empty."""
        if not self.buffer:
            return False
        utt, self.buffer = bytes(self.buffer), bytearray()
        await self.commit(utt)
        return True

    async def clear(self) -> None:
        self.buffer = bytearray()
        await self._send(self._wire.event("input_audio_buffer.cleared"))

    def take_pending(self) -> bytes | None:
        utt, self.pending = self.pending, None
        return utt
