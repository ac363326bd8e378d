"""`voice-audit run` refuses an agent nobody answers for before it pilots the stimuli: the probe
is a TCP connection, the pilot renders and reads every line (tens of seconds on a cold cache).

The time the refusal takes is printed (run with `-s` to see it); the bound asserted is generous,
far above the probe and far below a cold pilot, so it holds on a loaded machine.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

# serial: the refusal's time is measured on the wall clock, which the parallel lane's load (and the
# cpu_bound lane beside it) stretched past the bound at load 30 (a cold interpreter and its imports)
pytestmark = pytest.mark.serial

CAMPAIGN = """\
name: bot
scenarios: [refund_duplicate_charge]
agents:
  - {{name: voice-bot, adapter: ws, url: "ws://127.0.0.1:{port}/call"}}
pairs:
  - contrast: [accent]
    base: {{voice_profile: male_adult, affect: calm, disfluency: none, wording: plain}}
    a: {{accent: us_general}}
    b: {{accent: gb_scottish}}
"""


def _closed_port() -> int:
    """A loopback port nobody listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_an_unreachable_agent_is_refused_before_the_stimulus_pilot(tmp_path: Path) -> None:
    port = _closed_port()
    cfile = tmp_path / "bot.yaml"
    cfile.write_text(CAMPAIGN.format(port=port))
    home = tmp_path / "home"  # a cold stimulus cache: the pilot's cache lives under ~/.cache
    home.mkdir()
    env = {**os.environ, "HOME": str(home)}
    t0 = time.monotonic()
    res = subprocess.run(
        [sys.executable, "-m", "voice_audit.harness.cli", "run", str(cfile), "--out", str(tmp_path / "runs")],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    elapsed = time.monotonic() - t0
    print(f"unreachable agent refused in {elapsed:.2f} s (cold stimulus cache)")
    assert res.returncode == 2, res.stdout + res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert f"agent 'voice-bot' at ws://127.0.0.1:{port}/call" in lines[0], lines[0]
    assert "connection refused" in lines[0] and "bot.yaml" in lines[0], lines[0]
    # Nothing was rendered or recognised, and no run folder was started.
    rendered = [p for p in home.rglob("*") if p.is_file()]
    assert not rendered, rendered[:5]
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
    assert elapsed < 30, f"took {elapsed:.1f} s: the pilot ran before the probe?"
