"""The stimulus pilot and pre-screen on real voices: eSpeak's Spanish voice reading English spelling
is refused before any call, a Flite dialect contrast passes, and a cell run under an override
carries its failure through analysis and every report format (the redacted one naming no level).
No claim here is about a cold cache: the CLI runs with a private HOME whose audio caches are the
test session's (`tests.helpers.pilot_cache`), so the pilot's renderings, transcripts and measures are
computed once per session and line (the espeak cell's by the first test to run it) and read from the
cache after that; the analysis uses the safety metrics' rule reader (no safety event is asserted here)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.helpers.pilot_cache import home_with_session_cache

pytestmark = pytest.mark.slow

CLI = [sys.executable, "-m", "voice_audit.harness.cli"]
ESPEAK_CELL = {
    "name": "stim-espeak",
    "description": "General American vs Spanish L1 callers on eSpeak",
    "seed": 20261130,
    "scenarios": ["retention_cancel"],  # the library's fewest caller words: the pilot reads them all
    "agents": [{"name": "hybrid", "adapter": "hybrid"}],
    "pairs": [
        {
            "name": "accent: General American vs Spanish L1",
            "contrast": ["accent"],
            "base": {
                "voice_profile": "female_adult",
                "affect": "calm",
                "disfluency": "none",
                "wording": "plain",
            },
            "a": {"accent": "us_general"},
            "b": {"accent": "l2_spanish"},
        }
    ],
    "voices": 1,
    "replicates": 1,
    "tts": {"name": "espeak"},
    "channel": {"telephone": True, "snr_db": 30, "packet_loss": 0.01},
}
FLITE_CELL = {
    **ESPEAK_CELL,
    "name": "stim-flite",
    "description": "General American vs Scottish English callers on Flite",
    "pairs": [
        {
            "name": "accent: General American vs Scottish English",
            "contrast": ["accent"],
            "base": {
                "voice_profile": "male_adult",
                "affect": "calm",
                "disfluency": "none",
                "wording": "plain",
            },
            "a": {"accent": "us_general"},
            "b": {"accent": "gb_scottish"},
        }
    ],
    "tts": {"name": "flite"},
}


def _write(path: Path, doc: dict[str, object]) -> Path:
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path


def _cli(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "HOME": str(home), **env},
    )


@pytest.fixture
def home(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This test's HOME, its audio caches the session's (never the user's own)."""
    return home_with_session_cache(tmp_path / "home", tmp_path_factory)


def test_espeak_second_language_voice_is_refused_before_any_call(tmp_path: Path, home: Path) -> None:
    cfile = _write(tmp_path / "c.yaml", ESPEAK_CELL)
    pilot = _cli(home, "stimuli", str(cfile), "-o", str(tmp_path / "stim"))
    assert pilot.returncode == 1, pilot.stderr
    record = json.loads((tmp_path / "stim" / "stimuli.json").read_text())
    (cell,) = record["cells"]
    assert cell["verdict"] == "fail"
    assert cell["b"]["wer"] > record["thresholds"]["max_wer"]  # no recogniser follows it
    assert cell["b"]["wer"] > cell["a"]["wer"]
    assert (tmp_path / "stim" / "index.html").read_text().count("<audio") == len(record["lines"])
    assert all((tmp_path / "stim" / line["file"]).is_file() for line in record["lines"])

    run = _cli(home, "run", str(cfile), "--out", str(tmp_path / "runs"), "--run-id", "r", "--quiet")
    assert run.returncode == 2
    err = run.stderr.strip().splitlines()
    assert len(err) == 1 and "stimulus pre-screen failed" in err[0]
    assert (
        "accent: General American vs Spanish L1" in err[0] and "l2_spanish" in err[0] and "override" in err[0]
    )
    assert not (tmp_path / "runs" / "r").exists()  # no call placed, nothing half-written


def test_a_dialect_contrast_of_recorded_speakers_passes(tmp_path: Path, home: Path) -> None:
    cfile = _write(tmp_path / "c.yaml", FLITE_CELL)
    pilot = _cli(home, "stimuli", str(cfile), "-o", str(tmp_path / "stim"))
    assert pilot.returncode == 0, pilot.stdout + pilot.stderr
    (cell,) = json.loads((tmp_path / "stim" / "stimuli.json").read_text())["cells"]
    assert cell["verdict"] == "pass"
    assert cell["a"]["wer"] < 0.5 and cell["b"]["wer"] < 0.5
    assert cell["a"]["f0_median_hz"] and cell["b"]["f0_median_hz"] and cell["a"]["rate_wps"]


def test_an_overridden_cell_carries_its_failure_into_every_report(tmp_path: Path, home: Path) -> None:
    doc = {
        **ESPEAK_CELL,
        "stimulus": {"override": [ESPEAK_CELL["pairs"][0]["name"]], "reason": "report demo"},
    }  # type: ignore[index]
    cfile = _write(tmp_path / "c.yaml", doc)
    run_dir = tmp_path / "runs" / "r"
    run = _cli(home, "run", str(cfile), "--out", str(tmp_path / "runs"), "--run-id", "r", "--quiet")
    assert run.returncode == 0, run.stderr
    assert (run_dir / "stimuli" / "stimuli.json").is_file()
    # `report --analyze` analyses the run (as `voice-audit analyze` does) and reports it, in one
    # process; with the safety metrics' rule reader, as no safety event is read here and loading the
    # turn model's encoder costs seconds of CPU
    rep = _cli(
        home,
        "report",
        str(run_dir),
        "-o",
        str(tmp_path / "rep"),
        "--analyze",
        VOICE_AUDIT_SAFETY_READER="rules",
    )
    assert rep.returncode == 0, rep.stderr
    gate = next(
        g
        for g in json.loads((run_dir / "gates.json").read_text())["gates"]
        if g["gate"] == "stimulus_prescreen"
    )
    assert gate["verdict"] == "fail" and gate["details"]["cells"][0]["overridden"]

    report = json.loads((tmp_path / "rep" / "report.json").read_text())
    assert report["stimuli"]["screened"] and report["stimuli"]["cells"][0]["verdict"] == "fail"
    ranked = report["findings"]["ranked"]
    assert ranked and all("STIMULUS FAILED" in f["status"] for f in ranked)
    md = (tmp_path / "rep" / "report.md").read_text()
    html = (tmp_path / "rep" / "index.html").read_text()
    assert "## Stimuli" in md and "Stimulus pre-screen failed" in md
    assert 'id="stimuli"' in html and "<audio" in html.split('id="stimuli"')[1].split("</details>")[0]

    assert _cli(home, "report", str(run_dir), "-o", str(tmp_path / "red"), "--redact").returncode == 0
    planted = ["us_general", "l2_spanish", "General American", "Spanish", "Spanish (Spain) L1"]
    for f in (tmp_path / "red").rglob("*"):
        if f.is_file() and f.suffix in (".json", ".md", ".html"):
            text = f.read_text(encoding="utf-8")
            assert not [p for p in planted if p in text], f
    assert not list((tmp_path / "red").rglob("*.wav"))
