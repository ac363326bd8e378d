"""A whole campaign over SIP against our own served agents (`voice-audit agents serve ... --protocol sip`).

One campaign, the same callers for every agent:
- `phone`: the cascaded reference agent served over SIP in another process, heard through G.722
  and the campaign's own recogniser (SIP carries audio only): every call completes, with the
  outcome the same agent in process reaches for the same caller (the same campaign with the
  in-process adapter, accelerated);
- `hangs-up`: a planted non-service agent over SIP (it greets, hears one caller turn and hangs up):
  its calls complete as `unresolved` with `agent_hung_up`, and every pair stays in the deltas.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("pjsua2")

from tests.helpers.sip_peers import free_port_pair
from voice_audit.analysis.pipeline import analyze
from voice_audit.harness.planning import load_campaign
from voice_audit.harness.runlog import RunReader
from voice_audit.harness.runtime import CampaignRunner

pytestmark = [pytest.mark.slow, pytest.mark.serial]  # serial: a real-time SIP campaign under call timeouts

CAMPAIGN = """\
name: sip-campaign
seed: 13
scenarios: [refund_duplicate_charge]
agents:
  - {{name: phone, adapter: sip, url: "{phone}", options: {{codecs: [G722], {guards}}}}}
  - {{name: hangs-up, adapter: sip, url: "{tone}", options: {{{guards}}}}}
pairs:
  - contrast: [accent]
    base: {{voice_profile: female_adult, affect: calm, disfluency: none, wording: plain}}
    a: {{accent: us_general}}
    b: {{accent: gb_rp}}
voices: 1
concurrency: 2
pacing: realtime
channel: {{telephone: false}}
patience: {{prompt_after_s: 60, hang_up_after_s: 240}}
timeouts: {{connect_s: 120, turn_s: 300, call_s: 900}}
tts: {{name: espeak}}
"""
# What is compared is where each caller ends up, not how fast the agents answer: the guards that end
# a call on a slow agent are set far above a loaded machine's worst case (the served agents load
# their engines at the first call and share the CPU with this process), where the defaults (an
# answer within 8 s, no RTP for 10 s, "are you still there?" after 8 s of silence) would end or
# derail a call whose agent is merely slow.
GUARDS = "answer_timeout_s: 120, rtp_timeout_s: 120"
# Two calls in flight, not four: with four (both phone calls and both tone calls) beside the other
# real-time tests of the serial lane, the served cascaded agent's endpointing twice took late RTP
# frames on a starved machine for the end of the caller's turn and answered over it, so the caller
# heard no words and asked for a human: the load decided the outcome, which is not what is compared.


def _serve(name: str, port: int, *options: str) -> subprocess.Popen[str]:
    args = [
        sys.executable,
        "-m",
        "voice_audit.harness.cli",
        "agents",
        "serve",
        name,
        "--protocol",
        "sip",
        "--port",
        str(port),
    ]
    for opt in options:
        args += ["-o", opt]
    proc = subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=dict(os.environ)
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith("serving ") and line.rstrip().endswith(
        f"over sip at sip:agent@127.0.0.1:{port}"
    ), line
    return proc


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory, audio_cache: Path) -> Iterator[Path]:
    tmp = tmp_path_factory.mktemp("sip-campaign")
    phone_port, tone_port = free_port_pair(), free_port_pair()
    servers = [
        _serve("cascaded", phone_port),
        _serve("voice_audit.agents.fakes.tone_agent:tone_agent", tone_port, "hangup_after=1", "tool="),
    ]
    try:
        path = tmp / "c.yaml"
        path.write_text(
            CAMPAIGN.format(
                phone=f"sip:agent@127.0.0.1:{phone_port}",
                tone=f"sip:agent@127.0.0.1:{tone_port}",
                guards=GUARDS,
            )
        )
        runner = CampaignRunner(
            load_campaign(path), tmp / "run", cache_dir=audio_cache, progress=False, tts_pool_size=1
        )
        summary = asyncio.run(runner.run())  # the pre-run check pings both servers with OPTIONS
        assert summary.statuses == {"completed": 4}, (summary.statuses, summary.failures)
    finally:
        for proc in servers:
            proc.terminate()
            proc.wait(10)
    yield tmp / "run"


def _in_process_outcomes(tmp: Path, cache: Path) -> dict[str, str | None]:
    """The same callers against the same agent in process (accelerated), by side."""
    text = CAMPAIGN.format(phone="x", tone="x", guards=GUARDS).replace(
        "pacing: realtime", "pacing: accelerated"
    )
    lines = [ln for ln in text.splitlines() if "adapter: sip" not in ln or "phone" in ln]
    text = (
        "\n".join(lines).replace(
            'adapter: sip, url: "x", options: {codecs: [G722], ' + GUARDS + "}", "adapter: cascaded"
        )
        + "\n"
    )
    path = tmp / "inproc.yaml"
    path.write_text(text)
    runner = CampaignRunner(
        load_campaign(path), tmp / "inproc", cache_dir=cache, progress=False, tts_pool_size=1
    )
    summary = asyncio.run(runner.run())
    assert summary.statuses == {"completed": 2}, (summary.statuses, summary.failures)
    return {rec.header.side: rec.outcome.terminal_outcome for rec in RunReader(tmp / "inproc").records()}


def test_served_over_sip_reaches_the_in_process_outcomes(run_dir: Path, audio_cache: Path) -> None:
    reader = RunReader(run_dir)
    outcome: dict[str, str | None] = {}
    for rec in reader.records():
        if rec.header.agent != "phone":
            continue
        outcome[rec.header.side] = rec.outcome.terminal_outcome
        assert rec.outcome.status == "completed" and not rec.outcome.outcome_flags, rec.outcome
        exposure = rec.header.exposure
        assert exposure is not None and exposure.protocol == "sip"
        assert not exposure.transcripts and not exposure.tool_trace
        events = reader.events(rec.header.episode_id)
        started = next(e for e in events if e.type == "call_started")
        assert started.agent_session_id  # the SIP Call-ID
        codecs = [e.detail["codec"] for e in events if e.type == "agent_signal" and e.name == "sip_codec"]
        assert codecs == ["G722/16000"]  # offered alone, negotiated, logged on the call clock
        assert any(e.type == "agent_transcript" and e.source == "harness_asr" for e in events)
    expected = _in_process_outcomes(run_dir.parent, audio_cache)
    assert expected == {"a": "refund_issued", "b": "refund_issued"}
    assert outcome == expected


def test_a_non_service_agent_over_sip_keeps_every_pair(run_dir: Path) -> None:
    reader = RunReader(run_dir)
    for rec in reader.records():
        if rec.header.agent == "hangs-up":
            o = rec.outcome
            assert (o.status, o.terminal_outcome, o.outcome_flags) == (
                "completed",
                "unresolved",
                ("agent_hung_up",),
            )
    res = analyze(run_dir, audio=False)
    cells = {c["cell"]["agent"]: c for c in res.deltas["cells"]}
    for agent in ("phone", "hangs-up"):
        cell = cells[agent]
        assert cell["n_pairs_total"] == cell["n_pairs"] == 1 and cell["n_pairs_excluded"] == 0, cell
