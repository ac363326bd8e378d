"""Preloaded by the audio pass's fork server (`voice_audit.analysis.audio.measures.pool.PRELOAD`):
importing it loads the compiled loops of a worker once (`voice_audit.analysis.audio.recording.warm_compiled`), so
every worker forked from the server starts with them instead of loading them itself. A failure
here must not stop the server: the workers then load the loops themselves."""

import contextlib

from voice_audit.analysis.audio.recording import warm_compiled

with contextlib.suppress(Exception):
    warm_compiled()
