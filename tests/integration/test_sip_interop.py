"""The SIP adapter against independent SIP user agents from Debian, all on 127.0.0.1.

- baresip auto-answers, plays a greeting and records what it hears: the harness hears the
  greeting, baresip hears the caller, DTMF digits arrive, PCMU and G.722 are negotiated as offered,
  and the OPTIONS probe finds it (and finds nothing on a dead port);
- a SIPp agent that puts the caller on hold and back with re-INVITEs, then hangs up: the call
  goes on through both re-offers (logged as signals) and ends as the agent's hang-up;
- through the runtime: SIPp endpoints that are busy (486) or ring forever (the caller's CANCEL ends
  them), and a baresip whose greeting ends in its BYE, end every call with the right failure kind
  and outcome, and the hang-up's recording holds the greeting.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

pytest.importorskip("pjsua2")

from tests.helpers.collect_scenarios import bundled
from tests.helpers.sip_peers import Baresip, Sipp, dominant_hz, free_port_pair, read_wav, tone
from voice_audit.agents.protocols.sip import sip_adapter
from voice_audit.agents.protocols.sip_wire import SIP_FORMAT
from voice_audit.harness.adapter import AgentError, AudioOut, CallInfo, ErrorOut, HangupOut, SignalOut
from voice_audit.harness.endpoints import unreachable_agents, url_problem
from voice_audit.harness.model.campaign import AgentSpec
from voice_audit.harness.planning import load_campaign
from voice_audit.harness.runlog import RunReader
from voice_audit.harness.runtime import CampaignRunner

pytestmark = [
    pytest.mark.slow,
    pytest.mark.serial,
]  # serial: real-time RTP pacing; answer and RTP timeouts decide the outcomes

FACTS = bundled("refund_duplicate_charge").facts


async def _call(
    url: str, codecs: list[str], digits: str, dtmf: str = "rfc4733"
) -> tuple[str, np.ndarray, list[object]]:
    """One call: stream a 1 kHz tone for 1.5 s, press `digits`, listen for 2.5 s, hang up."""
    options = {"codecs": codecs, "dtmf": dtmf}
    adapter = sip_adapter(AgentSpec(name="b", adapter="sip", url=url, options=options))
    session = await adapter.connect(CallInfo(facts=FACTS, scenario_id="refund_duplicate_charge"))
    assert session.session_id  # the SIP Call-ID
    heard: list[bytes] = []
    others: list[object] = []

    async def listen() -> None:
        async for ev in session.events():
            (heard.append(ev.pcm) if isinstance(ev, AudioOut) else others.append(ev))

    reader = asyncio.create_task(listen())
    caller = tone(1000, 1.5, rate=16000).tobytes()
    t0 = time.monotonic()
    for k in range(0, len(caller), 640):
        assert session.send_audio_nowait(caller[k : k + 640])
        await asyncio.sleep(max(0.0, t0 + (k // 640 + 1) * 0.02 - time.monotonic()))
    for d in digits:
        await session.send_dtmf(d)
        await asyncio.sleep(0.3)
    await asyncio.sleep(0.8)
    codec = session.codec
    await session.close("test over")
    await asyncio.wait_for(reader, 5)
    return codec, np.frombuffer(b"".join(heard), dtype="<i2"), others


def test_baresip_call_both_ways_with_dtmf_and_codecs(tmp_path: Path) -> None:
    greeting = tone(440, 1.2, pad_s=8.0)
    with Baresip(tmp_path / "bs", greeting) as peer:
        assert asyncio.run(sip_adapter.probe(peer.url, 3.0)) is None  # answers OPTIONS
        codec, heard, others = asyncio.run(_call(peer.url, ["PCMU", "PCMA", "G722"], "5#"))
        assert codec == "PCMU/8000"
        assert heard.size > SIP_FORMAT.sample_rate  # over a second of the greeting, speech-gated
        assert abs(dominant_hz(heard, SIP_FORMAT.sample_rate) - 440) < 15
        # The codec, first; no hang-up or error: the caller ended the call.
        assert others == [SignalOut("sip_codec", {"codec": "PCMU/8000", "media": "active"})]
        assert peer.wait_for("terminated")
        assert peer.wait_for("received event: '5'") and peer.wait_for("received event: '#'")
        x, rate = read_wav(peer.heard())
        assert abs(dominant_hz(x, rate) - 1000) < 15  # baresip's recording holds the caller
        codec, heard, _ = asyncio.run(_call(peer.url, ["G722"], "7", dtmf="info"))
        assert codec == "G722/16000"
        assert peer.wait_for("received DTMF: '7'")  # by SIP INFO
        assert abs(dominant_hz(heard, SIP_FORMAT.sample_rate) - 440) < 15
    dead = f"sip:bot@127.0.0.1:{free_port_pair()}"
    assert asyncio.run(unreachable_agents([AgentSpec(name="d", adapter="sip", url=dead)], 1.0)) == [
        f"cannot connect to agent 'd' at {dead} (no answer to OPTIONS within 1 s)"
    ]
    assert url_problem(dead) is None and "udp or tcp" in (url_problem(dead + ";transport=sctp") or "")


def test_the_callers_cancel_and_a_busy_endpoint(tmp_path: Path) -> None:
    """Adapter level: the kinds, and SIPp confirms each scenario ran to its end (ACK received)."""
    del tmp_path

    async def dial(url: str) -> AgentError:
        adapter = sip_adapter(AgentSpec(name="x", adapter="sip", url=url, options={"answer_timeout_s": 1.5}))
        with pytest.raises(AgentError) as err:
            await adapter.connect(CallInfo(facts=FACTS, scenario_id="x"))
        return err.value

    with Sipp("busy.xml") as busy, Sipp("no_answer.xml", calls=1) as ringing:
        e1 = asyncio.run(dial(busy.url))
        e2 = asyncio.run(dial(ringing.url))
        assert (e1.kind, e1.message) == ("connect_failed", "busy: SIP 486 Busy Here")
        assert e2.kind == "connect_failed" and e2.message.startswith("no answer") and "487" in e2.message
        assert busy.passed() and ringing.passed()


def test_digest_credentials_from_named_variables(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """SIPp challenges (401) and checks the digest: the right password gets past it (the agent then
    answers busy), a wrong one is refused (403), a harness-side failure; the password is never
    written (not in the error, not in any log record)."""
    monkeypatch.setenv("SIP_TEST_USER", "caller")
    options = {"auth_username_env": "SIP_TEST_USER", "auth_password_env": "SIP_TEST_PASSWORD"}

    async def dial(url: str, password: str) -> AgentError:
        monkeypatch.setenv("SIP_TEST_PASSWORD", password)
        adapter = sip_adapter(AgentSpec(name="x", adapter="sip", url=url, options=options))
        with pytest.raises(AgentError) as err:
            await adapter.connect(CallInfo(facts=FACTS, scenario_id="x"))
        return err.value

    caplog.set_level("DEBUG")
    with Sipp("auth.xml", calls=2) as agent:
        ok = asyncio.run(dial(agent.url, "s3cret-Pw"))
        refused = asyncio.run(dial(agent.url, "not-the-Pw"))
        assert agent.passed()
    assert (ok.kind, ok.message) == ("connect_failed", "busy: SIP 486 Busy Here")
    assert refused.kind == "harness_error" and refused.message.startswith("authentication refused: SIP 403")
    for secret in ("s3cret-Pw", "not-the-Pw"):
        assert secret not in caplog.text and secret not in ok.message + refused.message


async def _events_of(url: str, options: dict[str, object], limit_s: float = 15.0) -> list[object]:
    """One call, the caller sending silence until the agent side ends it; its events, in order."""
    adapter = sip_adapter(AgentSpec(name="x", adapter="sip", url=url, options=options))
    session = await adapter.connect(CallInfo(facts=FACTS, scenario_id="x"))

    async def talk() -> None:
        with contextlib.suppress(AgentError):
            while True:
                session.send_audio_nowait(bytes(640))
                await asyncio.sleep(0.02)

    sender = asyncio.create_task(talk())
    async with asyncio.timeout(limit_s):
        got = [ev async for ev in session.events()]
    sender.cancel()
    await session.close("over")
    return got


def test_early_media_is_heard_before_the_refusal() -> None:
    with Sipp("early_media.xml") as agent:
        events = asyncio.run(_events_of(agent.url, {}))
        assert agent.passed()
    audio = np.frombuffer(b"".join(e.pcm for e in events if isinstance(e, AudioOut)), dtype="<i2")
    others = [e for e in events if not isinstance(e, AudioOut)]
    assert others[:2] == [
        SignalOut("sip_codec", {"codec": "PCMU/8000", "media": "active"}),
        SignalOut("sip_early_media", {"codec": "PCMU/8000"}),
    ]
    assert others[2:] == [ErrorOut("connect_failed", "busy: SIP 486 Busy Here")]
    assert audio.size > SIP_FORMAT.sample_rate // 2  # most of the second of tone, before any answer
    assert abs(dominant_hz(audio, SIP_FORMAT.sample_rate) - 440) < 15


def test_rtp_that_never_flows_is_a_disconnect() -> None:
    with Sipp("silent.xml") as agent:
        events = asyncio.run(_events_of(agent.url, {"rtp_timeout_s": 1.0}))
        assert agent.passed()  # the harness hung up with BYE
    last = events[-1]
    assert isinstance(last, ErrorOut) and last.kind == "disconnect" and last.message.startswith("RTP stopped")
    assert not any(isinstance(e, AudioOut) for e in events)


def test_hold_and_resume_by_re_invite_then_the_agents_bye() -> None:
    with Sipp("reinvite.xml") as agent:
        events = [e for e in asyncio.run(_events_of(agent.url, {})) if not isinstance(e, AudioOut)]
        assert agent.passed()  # both re-INVITEs answered, the BYE answered
    assert events == [
        SignalOut("sip_codec", {"codec": "PCMU/8000", "media": "active"}),
        SignalOut("sip_media", {"codec": "PCMU/8000", "media": "hold"}),
        SignalOut("sip_media", {"codec": "PCMU/8000", "media": "active"}),
        HangupOut("agent hung up (BYE)"),
    ]


CAMPAIGN = """\
name: sip-endings
seed: 5
scenarios: [refund_duplicate_charge]
agents:
  - {{name: busy, adapter: sip, url: "{busy}"}}
  - {{name: ringing, adapter: sip, url: "{ringing}", options: {{answer_timeout_s: 1.5}}}}
  - {{name: bye, adapter: sip, url: "{bye}"}}
pairs:
  - contrast: [accent]
    base: {{voice_profile: male_adult, affect: calm, disfluency: none, wording: plain}}
    a: {{accent: us_general}}
    b: {{accent: gb_southern}}
stimulus: {{override: ["accent: us_general vs gb_southern"], reason: "SIP endings: the words do not matter"}}
voices: 1
concurrency: 4
pacing: realtime
asr: {{name: pocketsphinx}}
timeouts: {{turn_s: 60, call_s: 120}}
tts: {{name: espeak}}
"""


def test_busy_unanswered_and_hung_up_calls_are_outcomes(tmp_path: Path, audio_cache: Path) -> None:
    greeting = tone(440, 1.0)  # baresip hangs up when its greeting file ends
    with (
        Sipp("busy.xml", calls=2) as busy,
        Sipp("no_answer.xml", calls=2) as ringing,
        Baresip(tmp_path / "bs", greeting) as bye,
    ):
        path = tmp_path / "c.yaml"
        path.write_text(CAMPAIGN.format(busy=busy.url, ringing=ringing.url, bye=bye.url))
        runner = CampaignRunner(
            load_campaign(path),
            tmp_path / "run",
            cache_dir=audio_cache,
            progress=False,
            tts_pool_size=1,
            check_agents=False,  # SIPp scenarios take INVITEs only, not the OPTIONS ping
        )
        summary = asyncio.run(runner.run())
        assert summary.statuses == {"completed": 6}, (summary.statuses, summary.failures)
    reader = RunReader(tmp_path / "run")
    seen = set()
    for rec in reader.records():
        o, agent = rec.outcome, rec.header.agent
        seen.add(agent)
        assert o.terminal_outcome == "unresolved", o
        if agent == "busy":
            assert (o.failure_kind, o.outcome_flags) == ("connect_failed", ("agent_unreachable",))
            assert "busy: SIP 486" in o.termination
        elif agent == "ringing":
            assert (o.failure_kind, o.outcome_flags) == ("connect_failed", ("agent_unreachable",))
            assert o.termination.startswith("no answer")
        else:
            assert o.failure_kind is None and o.outcome_flags == ("agent_hung_up",), o
            events = reader.events(rec.header.episode_id)
            started = next(e for e in events if e.type == "call_started")
            assert started.protocol == "sip" and started.agent_session_id
            codec = next(e for e in events if e.type == "agent_signal")  # the first thing on the clock
            assert (codec.name, codec.detail["codec"]) == ("sip_codec", "PCMU/8000")
            assert rec.header.exposure is not None and not rec.header.exposure.transcripts
            audio, rate = sf.read(reader.audio_path(rec.header.episode_id), dtype="int16")
            assert abs(dominant_hz(audio[:, 1], rate) - 440) < 15  # the greeting, on the call clock
    assert seen == {"busy", "ringing", "bye"}
