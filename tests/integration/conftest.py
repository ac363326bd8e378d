"""Fixtures shared by the integration tests."""

from __future__ import annotations

from tests.helpers.pilot_cache import audio_cache

__all__ = ["audio_cache"]
