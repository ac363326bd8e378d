"""Compile, once, the numba kernels the test suite's processes load: librosa's (its vectorised
helpers, phase vocoder, Viterbi and PYIN, the references of the pitch tests and the time-scaling of
rate matching), the project's PYIN loops and its loudness pass (for each sample type it measures).

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
    from voice_audit.harness.audio.dsp import block_energies_compiled
    from voice_audit.harness.audio.rate_match import warm_time_scale

    warm_kernels()
    warm_time_scale()
    rate = 16000
    t = np.arange(rate // 2) / rate
    y = (0.3 * np.sin(2 * np.pi * 150 * t)).astype(np.float32)
    librosa.pyin(y, fmin=60.0, fmax=400.0, sr=rate, frame_length=1024, hop_length=160)
    # Viterbi over a writable probability matrix (PYIN's own is read-only: another specialisation)
    librosa.sequence.viterbi(np.full((3, 8), 1 / 3), librosa.sequence.transition_uniform(3))
    # the loudness pass compiles once per sample type: float32 and float64 audio, int16 samples,
    # and int16 samples read straight from a file's bytes (read-only)
    second = np.concatenate([y, y])
    pcm = (second * 32767).astype(np.int16)
    readonly = np.frombuffer(pcm.tobytes(), dtype=np.int16)
    for x in (second, second.astype(np.float64), pcm, readonly):
        block_energies_compiled([x], rate)


if __name__ == "__main__":
    main()
