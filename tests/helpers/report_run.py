"""One analysed run for every report test in a pytest process: a bundled reference agent and a
"real system" (module:attr) that serves long (accented) callers worse and crashes on some,
with a secret URL, a token and an env-var-named secret planted in the campaign. The planted endpoint
is a listener on 127.0.0.1 held open while the campaign runs (the run checks that agent URLs connect);
its path carries the planted host name a redacted report must drop.

The vendor's bands rest on the first caller line's length under rate-matched eSpeak: us_general
f1 3054 ms, f2 3482 ms; l2_spanish f1 3297 ms (in the crash band), f2 3677 ms (long: a repair).
No us_general voice falls in either band, so the crashes and the repairs are all on side b.

Built once per process (about 8 s) and shared by the integration and browser tests through the
fixtures below (import them into a conftest); tests copy the run when they change it. The run's HOME is
private (never the user's `~/.cache/voice-audit`) but for the session's shared audio cache: no report
claim is about synthesis.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType

import pytest

from tests.helpers.pilot_cache import home_with_session_cache
from voice_audit.analysis.report import Built, build_report, write_report

HERE = Path(__file__).resolve().parent
SECRET_URL_KEY = "PLANTED-URL-KEY-7f3a"
SECRET_TOKEN = "PLANTED-TOKEN-91bd"
SECRET_ENV_NAME = "VA_REPORT_TEST_SECRET"
SECRET_ENV_VALUE = "ENV-SECRET-5c1e"
SECRET_HOST = "vendor-planted.example.com"
SECRETS = (SECRET_URL_KEY, SECRET_TOKEN, SECRET_ENV_VALUE, SECRET_HOST)
ENVIRON = {SECRET_ENV_NAME: SECRET_ENV_VALUE}
REFERENCE_LINE = "Thank you for calling. How can I help you today?"

CAMPAIGN = """\
name: report_fixture
description: Report tests with a planted bias, planted failures and planted secrets
seed: 7
scenarios: [refund_duplicate_charge]
agents:
  - name: reference
    adapter: scripted
    architecture: casc
    options:
      lines:
        - "{REFERENCE_LINE} Case {SECRET_ENV_VALUE}."
        - "I can help with that. What seems to be the problem?"
        - "Before I look into it, can you confirm your full name and the zip code on the account?"
        - "Thank you. Would you like me to refund the duplicate charge?"
        - "I have issued a refund of twenty four dollars and ninety nine cents. Is there anything else?"
  - name: vendor_x
    adapter: "report_agents:biased"
    url: "https://127.0.0.1:{port}/{SECRET_HOST}/voice?api_key={SECRET_URL_KEY}"
    architecture: hyb
    options:
      api_key: "{SECRET_TOKEN}"
      token_source: {SECRET_ENV_NAME}
      long_ms: 3600
      fail_lo_ms: 3250
      fail_hi_ms: 3350
      lines:
        - "Vendor desk, reference {SECRET_TOKEN}. How can I help you today?"
        - "I can help with that. What seems to be the problem?"
        - "Before I look into it, can you confirm your full name and the zip code on the account?"
        - "Thank you. Would you like me to refund the duplicate charge?"
        - "I have issued a refund of twenty four dollars and ninety nine cents. Is there anything else?"
pairs:
  - contrast: [accent]
    base: {{voice_profile: female_adult, affect: calm, disfluency: none, wording: plain}}
    a: {{accent: us_general}}
    b: {{accent: l2_spanish}}
voices: 2
replicates: 2
concurrency: 4
tts: {{name: espeak}}
"""

_cache: dict[str, Path] = {}
_factory: list[pytest.TempPathFactory] = []


def campaign(port: int) -> str:
    return CAMPAIGN.format(
        port=port,
        REFERENCE_LINE=REFERENCE_LINE,
        SECRET_ENV_VALUE=SECRET_ENV_VALUE,
        SECRET_HOST=SECRET_HOST,
        SECRET_URL_KEY=SECRET_URL_KEY,
        SECRET_TOKEN=SECRET_TOKEN,
        SECRET_ENV_NAME=SECRET_ENV_NAME,
    )


def analysed_run() -> Path:
    """Path of the shared analysed run (do not modify it; copy it first)."""
    if "run" in _cache:
        return _cache["run"]
    if not _factory:
        raise RuntimeError("request the `fx` or `run_dir` fixture first (it gives the session's cache)")
    parent = Path(tempfile.mkdtemp(prefix="va-report-fixture-"))
    home = home_with_session_cache(parent / "home", _factory[0])
    exe = Path(sys.executable).with_name("voice-audit")
    env = {
        **os.environ,
        "HOME": str(home),
        "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
    }
    with socket.create_server(("127.0.0.1", 0)) as endpoint:
        (parent / "c.yaml").write_text(campaign(endpoint.getsockname()[1]))
        subprocess.run(
            [
                str(exe),
                "run",
                str(parent / "c.yaml"),
                "--out",
                str(parent),
                "--run-id",
                "rep",
                "--quiet",
                "--no-stimulus-check",
            ],
            check=True,
            capture_output=True,
            timeout=300,
            env=env,
        )
    from voice_audit.analysis.pipeline import analyze

    run = parent / "rep"
    analyze(run, audio=False)
    _cache["run"] = run
    return run


@pytest.fixture(scope="session")
def fx(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    """This module: the planted secrets and environment the report tests check against."""
    _factory[:] = [tmp_path_factory]
    return sys.modules[__name__]


@pytest.fixture(scope="session")
def run_dir(fx: ModuleType) -> Path:
    return analysed_run()


@pytest.fixture(scope="session")
def full(run_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Built, Path]:
    built = build_report(run_dir, environ=ENVIRON)
    out = tmp_path_factory.mktemp("report-full")
    write_report(built, out)
    return built, out


@pytest.fixture(scope="session")
def redacted(run_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Built, Path]:
    built = build_report(run_dir, environ=ENVIRON, redact=True)
    out = tmp_path_factory.mktemp("report-redacted")
    write_report(built, out)
    return built, out
