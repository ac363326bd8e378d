"""`voice_audit.harness.audio` names load lazily, and a name shared with a submodule is always the function."""

from __future__ import annotations

import subprocess
import sys


def test_names_shared_with_submodules_are_the_functions_whatever_was_imported_first() -> None:
    code = (
        "import voice_audit.harness.audio.wer, voice_audit.harness.audio.loudness, voice_audit.harness.audio.dsp\n"
        "from voice_audit.harness.audio import loudness, wer\n"
        "import inspect, sys\n"
        "assert inspect.isfunction(wer) and inspect.isfunction(loudness), (wer, loudness)\n"
        "assert 'voice_audit.harness.audio.tts_pool' not in sys.modules\n"
        "from voice_audit.harness.audio import TelephoneChannel\n"
        "print(TelephoneChannel.__module__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "voice_audit.harness.audio.channel"
