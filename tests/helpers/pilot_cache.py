"""One content-addressed audio cache for a pytest session: synthesised speech and the stimulus pilot's
transcripts and measures, shared by the tests whose claim is not about a cold cache.

Every campaign renders its lines, and every `run` and `stimuli` reads each with the reference
recogniser first (the pilot): with a private cache each test pays that again for lines another
test of the session has already rendered and read. The product keys these caches by everything
that determines an entry (text, voice, engine and version; audio hash and model) and writes each
entry to a temporary file renamed into place (`voice_audit.scenarios.atomic`), so concurrent
writers of one key leave one whole entry and a hit is exact: a test reads what it would have
computed. The directory is under the session's base temporary folder, which the xdist workers of
one session share and every pytest session gets afresh: never the user's home cache, and never a
cache left by an earlier `make test`. `make test` gives its three lanes (three pytest sessions) one
fresh folder for all of them (`SHARED_CACHE_ENV`), as it gives them one folder of LLM states: a line
the parallel lane has rendered and read is not rendered and read again by the serial lane.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SHARED_CACHE_ENV = "VOICE_AUDIT_TEST_AUDIO_CACHE"
"""A folder that replaces the session's own (set by `make test` for all its lanes; empty at the start)."""
SHARED = ("tts", "stimuli-asr", "stimuli-measures")
"""The content-addressed folders of `~/.cache/voice-audit` (what `run` and `stimuli` use by default).
Its model weights and encoders stay in each test's own HOME, as before."""


def session_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The session's shared cache folder (the layout of `~/.cache/voice-audit`)."""
    given = os.environ.get(SHARED_CACHE_ENV)
    if given:
        path = Path(given)
    else:
        base = tmp_path_factory.getbasetemp()
        # an xdist worker's base is <session base>/<worker id>: the session's folder is its parent
        root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
        path = root / "shared-audio-cache"
    for name in SHARED:
        (path / name).mkdir(parents=True, exist_ok=True)
    return path


def home_with_session_cache(home: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`home` (created if missing), for a CLI's HOME: private, except that the audio caches under
    `.cache/voice-audit` are links to the session's."""
    cache = session_cache(tmp_path_factory)
    own = home / ".cache" / "voice-audit"
    own.mkdir(parents=True, exist_ok=True)
    for name in SHARED:
        link = own / name
        if not link.is_symlink():
            link.symlink_to(cache / name, target_is_directory=True)
    return home


@pytest.fixture(scope="session")
def audio_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The session's audio cache, for a test whose claim is not about synthesis or a cold cache (a
    test about those, or one a cache hit would hide a fault from, keeps a private cache)."""
    return session_cache(tmp_path_factory)
