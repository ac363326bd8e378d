"""A real run folder (scripted agent, real eSpeak callers) made once per session by the CLI, shared by the
rating and browser tests through the fixtures below (import them into a conftest). The run's HOME is
private (never the user's `~/.cache/voice-audit`) but for the session's shared audio cache: no rating
claim is about synthesis."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.pilot_cache import home_with_session_cache

CAMPAIGN = """\
name: matched_audit_7
seed: 11
scenarios: [refund_duplicate_charge]
agents: [{name: scripted_ref, adapter: "voice_audit.agents.fakes.scripted:scripted"}]
pairs:
  - contrast: [accent]
    base: {voice_profile: female_adult, affect: calm, disfluency: none, wording: plain}
    a: {accent: us_general}
    b: {accent: l2_spanish}
  - contrast: [affect]
    base: {voice_profile: male_adult, accent: gb_southern, disfluency: none, wording: plain}
    a: {affect: calm}
    b: {affect: frustrated}
voices: 2
concurrency: 4
tts: {name: espeak}
"""


def make_run(parent: Path, home: Path) -> Path:
    """Run the campaign through the real command line, with `home` as HOME; about five seconds."""
    (parent / "c.yaml").write_text(CAMPAIGN)
    exe = Path(sys.executable).with_name("voice-audit")
    subprocess.run(
        [
            str(exe),
            "run",
            str(parent / "c.yaml"),
            "--out",
            str(parent),
            "--run-id",
            "rate-run",
            "--quiet",
            "--no-stimulus-check",
        ],
        check=True,
        capture_output=True,
        timeout=300,
        env={**os.environ, "HOME": str(home)},
    )
    return parent / "rate-run"


@pytest.fixture(scope="session")
def pristine_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    parent = tmp_path_factory.mktemp("rating-run")
    return make_run(parent, home_with_session_cache(parent / "home", tmp_path_factory))


@pytest.fixture
def run_dir(pristine_run: Path, tmp_path: Path) -> Path:
    """A private copy, so labels written by one test never reach another."""
    return Path(shutil.copytree(pristine_run, tmp_path / "run"))
