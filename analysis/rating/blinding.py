"""Opaque tokens: the session's access token and one random clip token per item.

Clip tokens come from ``secrets`` and are kept only in memory, so they are not a function of the
episode id (no hash a rater could recompute) and change every time the server starts.
"""

from __future__ import annotations

import hmac
import re
import secrets

TOKEN_BYTES = 24
CLIP_BYTES = 18
RATER_RE = re.compile(r"^[A-Za-z0-9_.-]{1,40}$")
TOKEN_RE = re.compile(r"^[A-Za-z0-9_-]{16,64}$")


def new_token(nbytes: int = TOKEN_BYTES) -> str:
    return secrets.token_urlsafe(nbytes)


def same_token(given: str, expected: str) -> bool:
    """Constant-time comparison, so the token cannot be guessed byte by byte from timing."""
    return hmac.compare_digest(given.encode(), expected.encode())


class ClipRegistry:
    """item key <-> clip token, both ways, for one server session."""

    def __init__(self) -> None:
        self._by_item: dict[str, str] = {}
        self._by_token: dict[str, str] = {}

    def token_for(self, item_key: str) -> str:
        token = self._by_item.get(item_key)
        if token is None:
            token = new_token(CLIP_BYTES)
            while token in self._by_token:  # pragma: no cover - 144 random bits
                token = new_token(CLIP_BYTES)
            self._by_item[item_key] = token
            self._by_token[token] = item_key
        return token

    def item_for(self, token: str) -> str | None:
        return self._by_token.get(token) if TOKEN_RE.match(token) else None
