"""The TTS process pool must not outlive its parent, even when the parent is killed with SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.serial  # worker exit within a wall-clock deadline is asserted

CHILD = """
import asyncio
from voice_audit.harness.audio import SpeechSynthesizer
from voice_audit.personas import SpeechParams

async def main():
    s = SpeechSynthesizer("espeak", pool_size=2)
    await s.speak("hello there", None, SpeechParams(voice="en-us"))
    print("ready", flush=True)
    await asyncio.sleep(60)

asyncio.run(main())
"""


def test_pool_workers_exit_when_the_parent_is_killed() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    kids = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
    assert kids, "the synthesiser should have started pool processes"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(os.path.exists(f"/proc/{k}") for k in kids):
        time.sleep(0.2)
    assert not [k for k in kids if os.path.exists(f"/proc/{k}")], "orphaned pool processes"
