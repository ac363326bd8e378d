"""`rate` as a command: prints a tokenised loopback URL, serves it, stops cleanly on Ctrl-C."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.helpers.pilot_cache import home_with_session_cache

CAMPAIGN = """\
name: cli_rate
seed: 3
scenarios: [refund_duplicate_charge]
agents: [{name: scripted_ref, adapter: "voice_audit.agents.fakes.scripted:scripted"}]
pairs:
  - contrast: [wording]
    base: {voice_profile: female_adult, accent: us_general, affect: calm, disfluency: none}
    a: {wording: plain}
    b: {wording: urgency}
voices: 1
"""
# Ctrl-C at a terminal reaches a process whose SIGINT is handled. A test run started in the
# background of a non-interactive shell (CI, `make test &`) ignores SIGINT, and a child inherits
# that, so the child first takes back Python's own handler, as a foreground `voice-audit rate`
# has. faulthandler on SIGUSR1: if Ctrl-C still does not stop the server, the failure shows where
# it hangs.
MOUNT = (
    "import faulthandler, signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "faulthandler.register(signal.SIGUSR1, all_threads=True); "
    "import typer; from voice_audit.analysis.rating import rate_cmd; app = typer.Typer(); app.command('rate')(rate_cmd); app()"
)


def test_rate_command_serves_on_loopback_and_stops_on_ctrl_c(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # the run to rate: a private HOME (never the user's cache) but for the session's audio cache
    home = home_with_session_cache(tmp_path / "home", tmp_path_factory)
    (tmp_path / "c.yaml").write_text(CAMPAIGN)
    exe = Path(sys.executable).with_name("voice-audit")
    subprocess.run(
        [
            str(exe),
            "run",
            str(tmp_path / "c.yaml"),
            "--out",
            str(tmp_path),
            "--run-id",
            "r",
            "--quiet",
            "--no-stimulus-check",
        ],
        check=True,
        capture_output=True,
        timeout=300,
        env={**os.environ, "HOME": str(home)},
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", MOUNT, str(tmp_path / "r"), "--rater", "ann", "--task", "perceptibility"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 60
        url = None
        while url is None and time.monotonic() < deadline:
            line = proc.stdout.readline()
            m = re.match(r"open (http://127\.0\.0\.1:\d+/[A-Za-z0-9_-]{32}/\?rater=ann)$", line.strip())
            url = m.group(1) if m else None
        assert url, "no URL printed"
        with urllib.request.urlopen(url, timeout=10) as resp:
            assert resp.status == 200 and b"Blind rating" in resp.read()
        with urllib.request.urlopen(url.split("?")[0] + "api/next?rater=ann", timeout=10) as resp:
            assert b'"total": 2' in resp.read()
        bare = url.split("/")[0] + "//" + url.split("/")[2] + "/"
        try:
            urllib.request.urlopen(bare, timeout=10)
            raise AssertionError("served without the token")
        except urllib.error.HTTPError as exc:
            assert exc.code == 403
        proc.send_signal(signal.SIGINT)
        try:
            out, err = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGUSR1)
            time.sleep(1)
            proc.kill()
            _, err = proc.communicate()
            raise AssertionError(f"rate did not stop within 20 s of Ctrl-C; its stacks:\n{err}") from None
        assert proc.returncode == 0, err
        assert "stopped; labels are saved" in out
        assert (tmp_path / "r" / "ratings" / "items-perceptibility.json").exists()
    finally:
        if proc.poll() is None:
            proc.kill()
