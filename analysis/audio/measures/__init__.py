"""Audio-side measurements for three gates and the agent F0 metric; every file is normalised first.

* codec: each channel of call.wav -> `voice_audit.harness.audio.dsp.normalise` (mono int16, declared rate,
  -23 LUFS, resampling path logged); the gate checks format and the loudness reached.
* acoustic validity: Praat vs PYIN F0 on the agent channel of up to N files per condition cell;
  the cell passes on the per-file minimum r (`voice_audit.analysis.audio.acoustics.cell_agreement`).
* F0 metric: median Praat F0 of the agent channel, reported only for cells that passed.
* sync: logged speech starts vs energy onsets (`voice_audit.analysis.audio.onsets`).
* voice-to-voice latency: energy activity on each channel (`voice_audit.analysis.metrics.voice_latency`).

`measure_files` (`measure`) is the one audio pass of an analysis: each file is read once (in
`voice_audit.analysis.audio.recording`, which pool workers import without pandas), its agent channel normalised
once and shared by the codec check and the F0 trackers, the activity and onsets of both channels
kept as compact frame lists, files spread over a process pool (`pool`), and every result cached in
the run folder (`cache`: AUDIO_CACHE, `runlog.AUDIO_MEASURES_JSON`) under the file's sha256, the measure version and the
parameters, so a re-analysis reads the cache instead of the audio. The per-gate functions
(`reference`: `codec_check`, `agent_speech`, `f0_pair_r`, `sync_offsets`) measure one file on its
own; the tests hold the pass to them. What is measured and with what is in `model`.
"""

from voice_audit.analysis.audio.measures.cache import CACHE_SCHEMA, MEASURE_VERSION
from voice_audit.analysis.audio.measures.measure import (
    measure_files,
    nan_to_none,
    nearest_onsets,
    requests_for,
)
from voice_audit.analysis.audio.measures.model import (
    AGENT_RATE,
    AudioParams,
    CodecCheck,
    FileMeasures,
)
from voice_audit.analysis.audio.measures.pool import POOL_MIN_FILES, pool_workers
from voice_audit.analysis.audio.measures.reference import (
    agent_speech,
    codec_check,
    f0_pair_r,
    praat_median,
    read_call,
    sync_offsets,
)
from voice_audit.harness.runlog import AUDIO_MEASURES_JSON as AUDIO_CACHE

__all__ = [
    "AGENT_RATE",
    "AUDIO_CACHE",
    "CACHE_SCHEMA",
    "MEASURE_VERSION",
    "POOL_MIN_FILES",
    "AudioParams",
    "CodecCheck",
    "FileMeasures",
    "agent_speech",
    "codec_check",
    "f0_pair_r",
    "measure_files",
    "nan_to_none",
    "nearest_onsets",
    "pool_workers",
    "praat_median",
    "read_call",
    "requests_for",
    "sync_offsets",
]
