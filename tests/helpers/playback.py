"""What the browser tests wait for when a page plays a clip.

A clip plays in real time inside headless Chromium; on a loaded machine (the parallel lane of `make
test` runs at low priority beside two other lanes) Chromium's media pipeline can be starved for
seconds before the first 0.2 s have played. These waits are liveness checks (the clip does play
from the keyboard), not timing claims, so they allow a minute.

A short clip can also end between the test's check that it plays and its key press to pause it; the
key then starts it again, as it would for a rater, and the page counts a second play. So the tests do
not assume one play per clip: `play_then_pause` counts the `play` events the browser fired, and the
label's `plays` must equal that count."""

from __future__ import annotations

from typing import Any

PLAYING = "() => { const a = document.getElementById('audio'); return !a.paused && a.currentTime > 0.2; }"
PAUSED = "() => document.getElementById('audio').paused"
PLAY_TIMEOUT_MS = 60_000
_COUNT_PLAYS = """() => {
  const a = document.getElementById('audio');
  if (!a.__playsCounted) {
    a.__playsCounted = true;
    window.__plays = 0;
    a.addEventListener('play', () => { window.__plays += 1; });
  }
  return window.__plays;
}"""


async def play_then_pause(page: Any, key: str) -> int:
    """Press `key` to play the clip, wait until it plays, press it again and wait until the clip is
    paused (or has ended): the number of times the browser started playback meanwhile (1, or 2 when
    the clip ended before the second press)."""
    before = int(await page.evaluate(_COUNT_PLAYS))
    await page.keyboard.press(key)
    await page.wait_for_function(PLAYING, timeout=PLAY_TIMEOUT_MS)
    await page.keyboard.press(key)
    await page.wait_for_function(PAUSED, timeout=PLAY_TIMEOUT_MS)
    return int(await page.evaluate(_COUNT_PLAYS)) - before
