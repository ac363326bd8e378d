"""One Realtime response on the wire: created, its output items and content parts, deltas, done.

The writer owns the order the protocol prescribes (`response.created` before any item, an item's
`output_item.added` before its parts and deltas, every part and item closed before
`response.done`), so the connection logic only says what the agent did.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from voice_audit.agents.protocols.event_json import b64encode
from voice_audit.agents.protocols.realtime_wire import (
    CancelReason,
    ServerWire,
    assistant_item,
    audio_part,
    function_call_item,
    join_transcript,
    new_id,
)
from voice_audit.harness.adapter import AudioFormat, ToolCallOut

__all__ = ["ResponseWriter", "Send"]

Send = Callable[[dict[str, Any]], Awaitable[None]]


class ResponseWriter:
    def __init__(self, send: Send, wire: ServerWire, out_fmt: AudioFormat) -> None:
        self.id = new_id("resp")
        self._send, self._wire, self._fmt = send, wire, out_fmt
        self.created = False
        self.output: list[dict[str, Any]] = []
        self._audio_item: str | None = None
        self._transcript = ""
        self.sent_ms = 0.0
        self.done = False

    async def _emit(self, ga_name: str, **fields: Any) -> None:
        await self._send(self._wire.event(ga_name, **fields))

    async def ensure_created(self) -> None:
        if not self.created:
            self.created = True
            await self._emit("response.created", response=self._wire.response(self.id, "in_progress", []))

    def _where(self) -> dict[str, Any]:
        assert self._audio_item is not None
        return {
            "response_id": self.id,
            "item_id": self._audio_item,
            "output_index": len(self.output),
            "content_index": 0,
        }

    async def _ensure_audio_item(self) -> dict[str, Any]:
        await self.ensure_created()
        if self._audio_item is None:
            self._audio_item, self._transcript = new_id("item"), ""
            item = assistant_item(self._audio_item, "in_progress", None, self._wire.beta)
            await self._emit(
                "response.output_item.added", response_id=self.id, output_index=len(self.output), item=item
            )
            await self._emit("response.content_part.added", part=audio_part(""), **self._where())
        return self._where()

    async def audio(self, data: bytes) -> None:
        """Agent audio in the output format, as 100 ms deltas."""
        where = await self._ensure_audio_item()
        step = self._fmt.bytes_per_second // 10
        for i in range(0, len(data), step):
            chunk = data[i : i + step]
            await self._emit("response.output_audio.delta", delta=b64encode(chunk), **where)
            self.sent_ms += 1000 * len(chunk) / self._fmt.bytes_per_second

    async def raw_audio_delta(self, delta: str) -> None:
        """An audio delta exactly as given (a chaos agent's bad payload or flood)."""
        await self._emit("response.output_audio.delta", delta=delta, **await self._ensure_audio_item())

    async def text(self, text: str) -> None:
        where = await self._ensure_audio_item()
        delta = join_transcript(self._transcript, text)
        self._transcript += delta
        await self._emit("response.output_audio_transcript.delta", delta=delta, **where)

    async def close_audio_item(self, status: str) -> None:
        if self._audio_item is None:
            return
        where, text = self._where(), self._transcript
        await self._emit("response.output_audio.done", **where)
        await self._emit("response.output_audio_transcript.done", transcript=text, **where)
        await self._emit("response.content_part.done", part=audio_part(text), **where)
        item = assistant_item(self._audio_item, status, text, self._wire.beta)
        await self._emit(
            "response.output_item.done", response_id=self.id, output_index=where["output_index"], item=item
        )
        self.output.append(item)
        self._audio_item = None

    async def function_call(self, call: ToolCallOut) -> None:
        """A complete function-call item: announced in progress, its arguments, then done."""
        await self.ensure_created()
        await self.close_audio_item("completed")
        item_id, idx, args = new_id("item"), len(self.output), json.dumps(call.arguments)
        added = function_call_item(item_id, "in_progress", call.call_id, call.name, "")
        await self._emit("response.output_item.added", response_id=self.id, output_index=idx, item=added)
        where = {"response_id": self.id, "item_id": item_id, "output_index": idx, "call_id": call.call_id}
        await self._emit("response.function_call_arguments.delta", delta=args, **where)
        named = {} if self._wire.beta else {"name": call.name}  # beta names the function in the items only
        await self._emit("response.function_call_arguments.done", arguments=args, **named, **where)
        item = function_call_item(item_id, "completed", call.call_id, call.name, args)
        await self._emit("response.output_item.done", response_id=self.id, output_index=idx, item=item)
        self.output.append(item)

    async def finish(self, status: str, reason: CancelReason | None = None) -> None:
        if self.done:
            return
        self.done = True
        await self.ensure_created()
        await self.close_audio_item("incomplete" if status == "cancelled" else "completed")
        await self._emit("response.done", response=self._wire.response(self.id, status, self.output, reason))
