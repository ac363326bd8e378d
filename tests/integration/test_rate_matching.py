"""The stimulus pilot on real voices, rate matching and the pilot's cache.

Rate matching: Flite's rms (General American) and awb (Scottish English) speak at their own paces,
about 15% apart; the pilot names that gap as a confound of an accent cell when rate matching is
off, and names none with it on (the default), which the record says.

The cache: a second pilot of a campaign (what every `voice-audit run` pays before its first call)
synthesises, recognises and measures nothing: the lines, their transcripts and their acoustic
measures all come from the cache, and the report is the same. The cold pilot measures each
distinct line once, however many cells or conditions say it.

One cold pilot with rate matching on serves both tests (the module's `matched` fixture): it is the
"after" of the first and the cold pilot of the second, so the file pays for two cold pilots, not
three. The pilot with matching off has a cache of its own, so the cold pilot starts from nothing.

The reference recogniser is faster-whisper's offline tiny.en (real): the measures of the rate test are
acoustic (script words over measured speech time), and the word error of the lines is not what it
looks at. Most of the file's CPU goes to reading the lines, so the recogniser is the cheapest real one
per line (this file, every process counted: 94 s of CPU with PocketSphinx, 39 s with faster-whisper)
and the campaign says the library scenario with the fewest words (retention_cancel: 17
lines a side, 127 words; measured gaps 19% off, 4% on, either side of the 6% threshold)."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from voice_audit.harness.audio import SpeechRecognizer
from voice_audit.harness.planning import load_campaign
from voice_audit.harness.stimuli import run_pilot
from voice_audit.harness.stimuli.pilot import PilotResult

pytestmark = [pytest.mark.slow, pytest.mark.cpu_bound]
pytest.importorskip("faster_whisper", reason="needs the offline extra: pip install 'voice-audit[offline]'")
if shutil.which("flite") is None:
    pytest.skip("needs Debian's flite (make system-deps)", allow_module_level=True)

CAMPAIGN = """\
name: rate-{name}
seed: 20261130
scenarios: [retention_cancel]
agents: [{{name: hybrid, adapter: hybrid}}]
pairs:
  - name: "accent: General American vs Scottish English"
    contrast: [accent]
    base: {{voice_profile: male_adult, affect: calm, disfluency: none, wording: plain}}
    a: {{accent: us_general}}
    b: {{accent: gb_scottish}}
voices: 1
tts: {{name: flite{options}}}
channel: {{telephone: true, snr_db: 30, packet_loss: 0.01}}
"""


def _pilot(directory: Path, name: str, options: str) -> PilotResult:
    """A pilot of the campaign in `directory`, with its synthesis, transcript and measure caches there."""
    path = directory / f"{name}.yaml"
    path.write_text(CAMPAIGN.format(name=name, options=options), encoding="utf-8")
    asr = SpeechRecognizer("faster-whisper", cache_dir=directory / "cache" / "stimuli-asr")
    try:
        return asyncio.run(run_pilot(load_campaign(path), cache_dir=directory / "cache", recogniser=asr))
    finally:
        asr.close()


@pytest.fixture(scope="module")
def matched(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, PilotResult]:
    """The cold pilot with rate matching on (the default), and the directory of its caches."""
    directory = tmp_path_factory.mktemp("matched")
    return directory, _pilot(directory, "on", "")


def test_the_pilot_names_the_rate_gap_before_matching_and_none_after(
    tmp_path: Path, matched: tuple[Path, PilotResult]
) -> None:
    before = _pilot(tmp_path, "off", ", options: {match_rate: false}").report
    (cell,) = before.cells
    rate = [c for c in cell.confounds if c.property == "rate"]
    assert len(rate) == 1, cell.confounds
    assert rate[0].b > rate[0].a and rate[0].gap > before.thresholds.max_rate_gap  # awb is the faster
    assert f"a {cell.a.rate_wps:.2f}, b {cell.b.rate_wps:.2f} words/s" in rate[0].text
    assert before.rate_matching["flite"].startswith("off")

    after = matched[1].report
    (cell,) = after.cells
    assert [c for c in cell.confounds if c.property == "rate"] == []
    assert cell.a.rate_wps is not None and cell.b.rate_wps is not None
    gap = abs(cell.b.rate_wps - cell.a.rate_wps) / ((cell.a.rate_wps + cell.b.rate_wps) / 2)
    assert gap < after.thresholds.max_rate_gap < rate[0].gap
    assert after.rate_matching["flite"].startswith("on")


def test_a_second_pilot_takes_lines_transcripts_and_measures_from_the_cache(
    matched: tuple[Path, PilotResult],
) -> None:
    directory, cold = matched
    distinct = {line.key for line in cold.report.lines}
    assert cold.synthesized > 0 and cold.measured == len(distinct) > 0
    assert cold.recognised == len(distinct)
    assert any((directory / "cache" / "stimuli-measures").rglob("*.json"))

    warm = _pilot(directory, "on", "")
    assert (warm.synthesized, warm.recognised, warm.measured) == (0, 0, 0)
    assert warm.report.model_dump() == cold.report.model_dump()
