"""Listing the audio backends' names loads none of them: a fresh interpreter proves it, since this
process has loaded them already."""

from __future__ import annotations

import subprocess
import sys


def test_import_and_name_lookup_do_not_import_heavy_packages() -> None:
    code = (
        "import sys, voice_audit.harness.audio as a; a.tts_names(); a.asr_names();"
        "heavy = [m for m in ('faster_whisper', 'ctranslate2', 'torch', 'whisper', 'piper', 'TTS',"
        " 'pocketsphinx', 'librosa', 'aiohttp', 'parselmouth') if m in sys.modules];"
        "print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
