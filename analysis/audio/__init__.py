"""Audio of a run: every recording read once and measured for the gates and the speech metrics.

- `recording`: one recording's measures; what a pool worker imports (no pandas, no metrics).
- `measures`: the audio pass over a run's files (`measure_files`), its cache and pool, and the
  per-gate reference functions the pass is tested against.
- `run_pass`: the pass as the gates use it (`measure_audio` -> `AudioPass`), files sampled per cell.
- `acoustics`: F0 trackers (Praat, PYIN, CREPE) and their agreement, timing, rate, SNR.
- `pyin`: librosa's PYIN at a fraction of its cost; `onsets`: energy onsets for the sync check.
- `warm`: preloaded by the pass's fork server so workers start with the compiled loops.

The names below load their modules on first use, so a worker importing `recording` loads nothing
else of the package.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "AudioPass": "voice_audit.analysis.audio.run_pass",
    "measure_audio": "voice_audit.analysis.audio.run_pass",
    "AudioParams": "voice_audit.analysis.audio.measures",
    "FileMeasures": "voice_audit.analysis.audio.measures",
    "measure_files": "voice_audit.analysis.audio.measures",
    "F0Track": "voice_audit.analysis.audio.acoustics",
    "agreement": "voice_audit.analysis.audio.acoustics",
    "praat_f0": "voice_audit.analysis.audio.acoustics",
    "pyin_f0": "voice_audit.analysis.audio.acoustics",
    "onset_offsets": "voice_audit.analysis.audio.onsets",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
