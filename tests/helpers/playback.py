"""What the browser tests wait for when a page plays a clip.

A clip plays in real time inside headless Chromium; on a loaded machine (the parallel lane of `make
test` runs at low priority beside two other lanes) Chromium's media pipeline can be starved for
seconds before the first 0.2 s have played. These waits are liveness checks (the clip does play
from the keyboard), not timing claims, so they allow a minute."""

from __future__ import annotations

PLAYING = "() => { const a = document.getElementById('audio'); return !a.paused && a.currentTime > 0.2; }"
PAUSED = "() => document.getElementById('audio').paused"
PLAY_TIMEOUT_MS = 60_000
