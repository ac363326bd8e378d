"""Compile, once, the numba kernels the test suite's processes load: librosa's (its vectorised
helpers, phase vocoder, Viterbi and PYIN, the references of the pitch tests and the time-scaling of
rate matching) and the project's PYIN loops.

numba keeps compiled kernels on disk beside their modules, but a fresh install has none, and every
process that reaches a kernel before the first has written it compiles it again (13 s of CPU for
librosa's helpers alone). `make test` runs this beside the lint step, before the test lanes start.
Run: `python -m tests.helpers.warm_numba`.
"""

from __future__ import annotations

import numpy as np


def main() -> None:
    import librosa

    from voice_audit.analysis.audio.pyin import warm_kernels
    from voice_audit.harness.audio.rate_match import warm_time_scale

    warm_kernels()
    warm_time_scale()
    rate = 16000
    t = np.arange(rate // 2) / rate
    y = (0.3 * np.sin(2 * np.pi * 150 * t)).astype(np.float32)
    librosa.pyin(y, fmin=60.0, fmax=400.0, sr=rate, frame_length=1024, hop_length=160)


if __name__ == "__main__":
    main()
