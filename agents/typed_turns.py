"""Typed caller turns: text in, the agent's answer out, for a served agent whose client types.

A Gemini Live client may send a caller turn as text (`clientContent`) instead of audio. An
in-process agent that can take such a turn implements `TypedTurnSession`: the words go to its
dialogue as heard with full confidence (nothing was recognised), and the answer comes out as any
turn's does. A session without it cannot take typed turns, and the front end refuses them.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

__all__ = ["TypedTurnSession"]


@runtime_checkable
class TypedTurnSession(Protocol):
    async def typed_turn(self, text: str) -> None:
        """A whole caller turn given as text; the agent answers it as it answers `end_turn()`."""
