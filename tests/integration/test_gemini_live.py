"""Gemini Live over real sockets on 127.0.0.1: the official google-genai SDK's live client against our
served agents, and whole campaigns over `adapter: gemini-live`.

- The SDK's `client.aio.live.connect` (its own setup, realtime input, receive path and tool
  response; a dummy key) completes a call with a function call against `agents serve --protocol
  gemini-live`. The SDK always dials wss://, so the test serves TLS with a certificate it makes.
- A scripted agent over gemini-live in a whole campaign: the caller barges in (the server's
  `interrupted` is the agent's clear), the server moves the session mid-call (`goAway`, resumed on a
  new connection with the last handle), tools run on the harness's fixture, ids are opaque and the
  disclosure identical for both calls of the pair.
- The cascaded reference agent served over gemini-live and the same agent in process, in one
  campaign: the same callers reach the same outcomes with the same tool calls.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import ipaddress
import ssl
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from websockets.asyncio.server import serve as ws_serve
from websockets.exceptions import ConnectionClosedOK

from tests.helpers.collect_imports import LazyModule, imported_before_tests
from voice_audit.agents.fakes import ScriptedAgent, tone
from voice_audit.agents.protocols import gemini_live_wire as gw
from voice_audit.agents.serve import ServeConfig, start_server
from voice_audit.agents.serve.gemini_live_server import gemini_live_handler
from voice_audit.harness.adapter import CallInfo
from voice_audit.harness.disclosure import disclose
from voice_audit.harness.planning import load_campaign
from voice_audit.harness.runlog import RunReader
from voice_audit.harness.runtime import CampaignRunner
from voice_audit.harness.tools import ToolFixture
from voice_audit.scenarios import BUNDLED_LIBRARY, ScenarioLibrary, canonical_json

# the SDK is imported when the file's tests start, not when the file is collected
genai = LazyModule("google.genai")
gt = LazyModule("google.genai.types")
_sdk_imported = imported_before_tests("google.genai")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.serial,
]  # serial: real-time calls; the yield to a barge-in is measured


def _tls(tmp_path: Path) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """A server context with a fresh self-signed certificate for 127.0.0.1, and a client context
    that trusts exactly that certificate."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False
        )
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(cert_file, key_file)
    client = ssl.create_default_context(cafile=str(cert_file))
    return server, client


def _refund_call() -> CallInfo:
    facts = ScenarioLibrary(BUNDLED_LIBRARY).load_all()["refund_duplicate_charge"][1].facts
    return CallInfo(facts=facts, scenario_id="refund_duplicate_charge")


async def _sdk_call(tmp_path: Path) -> tuple[list[gt.LiveServerMessage], dict[str, str], str | None]:
    server_ctx, client_ctx = _tls(tmp_path)
    call = _refund_call()
    headers: dict[str, str] = {}

    def remember(conn: Any, request: Any) -> None:
        headers.update({k.lower(): v for k, v in request.headers.raw_items()})

    agent = ScriptedAgent(speak=False, audio_ms=300)
    handler = gemini_live_handler(agent, ServeConfig(greeting_timeout_s=2.0))
    async with ws_serve(handler, "127.0.0.1", 0, ssl=server_ctx, process_request=remember) as srv:
        port = next(iter(srv.sockets)).getsockname()[1]
        client = genai.Client(
            api_key="dummy-key-for-a-local-server",
            http_options=gt.HttpOptions(
                base_url=f"https://127.0.0.1:{port}",
                api_version="v1beta",
                async_client_args={"ssl": client_ctx},
            ),
        )
        facts = canonical_json(disclose(call.facts, "full").facts)
        tools = [
            gt.Tool(function_declarations=[gt.FunctionDeclaration.model_validate(d) for d in decls])
            for decls in [gw.function_declarations(ToolFixture(call.facts).schemas())]
        ]
        config = gt.LiveConnectConfig(
            response_modalities=[gt.Modality.AUDIO],
            system_instruction=f'Be brief.\n<facts scenario="{call.scenario_id}" call_id="CA1">{facts}</facts>',
            tools=tools,  # type: ignore[arg-type]
            input_audio_transcription=gt.AudioTranscriptionConfig(),
            output_audio_transcription=gt.AudioTranscriptionConfig(),
            session_resumption=gt.SessionResumptionConfig(),
            speech_config=gt.SpeechConfig(
                voice_config=gt.VoiceConfig(prebuilt_voice_config=gt.PrebuiltVoiceConfig(voice_name="Puck"))
            ),
        )
        got: list[gt.LiveServerMessage] = []
        utterance = tone(400) + b"\x00" * 32000  # 0.4 s of "speech", then a second of silence at 16 kHz
        async with asyncio.timeout(60):
            async with client.aio.live.connect(
                model="gemini-live-2.5-flash-preview", config=config
            ) as session:
                session_id = session.session_id
                turns_done, answered = 0, False
                async for msg in _messages(session):
                    got.append(msg)
                    if msg.tool_call and msg.tool_call.function_calls:
                        fc = msg.tool_call.function_calls[0]
                        await session.send_tool_response(
                            function_responses=[
                                gt.FunctionResponse(
                                    id=fc.id, name=fc.name, response={"output": {"refund_id": "R1"}}
                                )
                            ]
                        )
                        answered = True
                    if msg.server_content and msg.server_content.turn_complete:
                        turns_done += 1
                        if answered:
                            break
                        for i in range(0, len(utterance), 640):
                            await session.send_realtime_input(
                                audio=gt.Blob(data=utterance[i : i + 640], mime_type="audio/pcm;rate=16000")
                            )
    return got, headers, session_id


async def _messages(session: Any) -> Any:
    """Every server message, across turns (the SDK's `receive()` stops at each turn's end)."""
    while True:
        async for msg in session.receive():
            yield msg


def test_the_official_sdk_live_client_completes_a_call_with_a_function_call(tmp_path: Path) -> None:
    got, headers, session_id = asyncio.run(_sdk_call(tmp_path))
    assert session_id and session_id.startswith("sess_")
    assert headers.get("x-goog-api-key") == "dummy-key-for-a-local-server"  # where the SDK sends a key
    audio = [
        p.inline_data
        for m in got
        if m.server_content and m.server_content.model_turn
        for p in m.server_content.model_turn.parts or []
        if p.inline_data
    ]
    assert audio and all(b.mime_type == "audio/pcm;rate=24000" and b.data for b in audio)
    said = "".join(
        m.server_content.output_transcription.text or ""
        for m in got
        if m.server_content and m.server_content.output_transcription
    )
    assert said.startswith("Thank you for calling.") and "I have issued a refund" in said
    calls = [fc for m in got if m.tool_call for fc in m.tool_call.function_calls or []]
    assert [(c.name, c.args) for c in calls] == [("issue_refund", {"amount": "24.99"})]
    # the turn with the function call went on after the SDK's toolResponse, to its own end
    i = next(i for i, m in enumerate(got) if m.tool_call)
    rest = got[i + 1 :]
    assert any(m.server_content and m.server_content.output_transcription for m in rest)
    assert rest[-1].server_content and rest[-1].server_content.turn_complete
    assert any(m.usage_metadata and m.usage_metadata.total_token_count for m in got)
    assert any(m.session_resumption_update and m.session_resumption_update.new_handle for m in got)


SCRIPTED = """\
name: gemini-scripted
seed: 5
scenarios: [refund_duplicate_charge]
agents:
  - {{name: live, adapter: gemini-live, url: "{url}", options: {{voice: Puck, model: gemini-test}}}}
pairs:
  - contrast: [accent]
    base: {{voice_profile: male_adult, affect: calm, disfluency: none, wording: plain}}
    a: {{accent: us_general}}
    b: {{accent: gb_rp}}
voices: 1
concurrency: 2
pacing: realtime
asr: {{name: pocketsphinx}}
interruptions: {{at_ms: 500, reason: correction, turns: [1]}}
tts: {{name: espeak}}
"""
TONE_MS = 1500
LIFETIME_S = 9.0


async def _scripted_run(tmp_path: Path, cache: Path) -> RunReader:
    agent = ScriptedAgent(audio_ms=TONE_MS)
    handler = gemini_live_handler(agent, ServeConfig(), session_lifetime_s=LIFETIME_S)
    async with ws_serve(handler, "127.0.0.1", 0) as srv:
        port = next(iter(srv.sockets)).getsockname()[1]
        path = tmp_path / "c.yaml"
        path.write_text(SCRIPTED.format(url=f"ws://127.0.0.1:{port}/ws/bidi"))
        runner = CampaignRunner(
            load_campaign(path),
            tmp_path / "run",
            cache_dir=cache,
            progress=False,
            tts_pool_size=1,
        )
        summary = await runner.run()
        assert summary.statuses == {"completed": 2}, (summary.statuses, summary.failures)
    return RunReader(tmp_path / "run")


def test_a_scripted_agent_over_gemini_live_barged_in_and_moved_mid_call(
    tmp_path: Path, audio_cache: Path
) -> None:
    reader = asyncio.run(_scripted_run(tmp_path, audio_cache))
    ids, disclosed = set(), set()
    for rec in reader.records():
        events = reader.events(rec.header.episode_id)
        assert rec.outcome.terminal_outcome == "refund_issued", rec.outcome
        started = next(e for e in events if e.type == "call_started")
        assert started.protocol == "gemini-live" and started.agent_session_id
        assert started.call_id and "us_general" not in started.call_id and "gb_rp" not in started.call_id
        ids.add(started.call_id)
        disclosed.add(next(e.disclosed_sha256 for e in events if e.type == "facts_provisioned"))
        # the caller barged in at turn 1; the server heard it and stopped itself (`interrupted`)
        barge = next(e for e in events if e.type == "barge_in" and e.by == "caller")
        assert barge.turn == 1 and barge.played_ms is not None and 500 <= barge.played_ms < 800
        after = events[events.index(barge) :]
        clear = next(e for e in after if e.type == "agent_clear")
        assert clear.source == "response_cancel"
        assert any(e.type == "agent_signal" and e.name == "interrupted" for e in after)
        yielded = next(e for e in after if e.type == "agent_yield")
        assert yielded.cleared and yielded.stop_latency_ms is not None and yielded.stop_latency_ms < TONE_MS
        # the server said goAway mid-call; the client resumed on a new connection and went on
        signals = [e for e in events if e.type == "agent_signal"]
        away = next(e for e in signals if e.name == "go_away")
        assert away.detail["resumable"] is True and away.detail["time_left_s"] == 5.0
        resumed = next(e for e in signals if e.name == "session_resumed")
        assert resumed.t_ms >= away.t_ms and resumed.detail["resumptions"] == 1
        assert any(e.type == "agent_transcript" and e.t_ms > resumed.t_ms for e in events)
        assert any(e.name == "turn_complete" for e in signals)
        # the tool ran on the harness's fixture; usage as the server reported it
        results = [(e.name, e.ok) for e in events if e.type == "tool_result"]
        assert results == [("issue_refund", True)]
        usage = [e for e in events if e.type == "usage"]
        assert usage and all(e.source == "gemini.usageMetadata" and e.model == "gemini-test" for e in usage)
        assert sum(e.quantities["input_audio_tokens"] for e in usage) > 0
    assert len(ids) == 2 and len(disclosed) == 1


REFERENCE = """\
name: gemini-reference
seed: 11
scenarios: [account_verification]
agents:
  - {{name: inproc, adapter: cascaded}}
  - {{name: live, adapter: gemini-live, url: "{url}"}}
pairs:
  - contrast: [accent]
    base: {{voice_profile: female_adult, affect: calm, disfluency: none, wording: plain}}
    a: {{accent: us_general}}
    b: {{accent: gb_rp}}
voices: 1
concurrency: 4
pacing: realtime
channel: {{telephone: false}}
# Four real-time calls with Whisper on a shared machine: an answer can take several seconds, and a
# patience prompt spoken over a pending answer would interrupt it (as on the real service).
patience: {{prompt_after_s: 30, hang_up_after_s: 90}}
timeouts: {{turn_s: 120, call_s: 400}}
tts: {{name: espeak}}
"""


async def _reference_run(tmp_path: Path, cache: Path) -> RunReader:
    from voice_audit.agents.reference import CascadedAgent

    async with start_server(CascadedAgent({}, name="cascaded"), "gemini-live") as handle:
        path = tmp_path / "c.yaml"
        path.write_text(REFERENCE.format(url=handle.url))
        runner = CampaignRunner(
            load_campaign(path),
            tmp_path / "run",
            cache_dir=cache,
            progress=False,
            tts_pool_size=1,
        )
        summary = await runner.run()
        assert summary.statuses == {"completed": 4}, (summary.statuses, summary.failures)
    return RunReader(tmp_path / "run")


def test_a_served_reference_agent_reaches_the_in_process_outcomes(tmp_path: Path, audio_cache: Path) -> None:
    reader = asyncio.run(_reference_run(tmp_path, audio_cache))
    outcome: dict[tuple[str, str, str], tuple[str | None, tuple[str, ...]]] = {}
    for rec in reader.records():
        events = reader.events(rec.header.episode_id)
        tools = tuple(e.name for e in events if e.type == "tool_result" and e.ok)
        key = (rec.header.agent, rec.header.caller_id, rec.header.side)  # the same caller calls both agents
        outcome[key] = (rec.outcome.terminal_outcome, tools)
    callers = {(c, s) for _a, c, s in outcome}
    assert len(callers) == 2 and len(outcome) == 4
    for c, s in callers:
        assert outcome[("live", c, s)] == outcome[("inproc", c, s)], (c, s, outcome)
    assert {o for o, _t in outcome.values()} == {"account_unlocked"}, outcome


async def _raw_session(lifetime_s: float) -> list[str]:
    """A call over a plain WebSocket client: every frame the served agent sends, as sent."""
    from websockets.asyncio.client import connect

    call = _refund_call()
    facts = canonical_json(disclose(call.facts, "full").facts)
    setup = gw.setup(
        model="m",
        instructions=f'<facts scenario="{call.scenario_id}" call_id="CA2">{facts}</facts>',
        tools=gw.function_declarations(ToolFixture(call.facts).schemas()),
    )
    frames: list[str] = []
    agent = ScriptedAgent(speak=False, audio_ms=1000)
    handler = gemini_live_handler(agent, ServeConfig(greeting_timeout_s=2.0), session_lifetime_s=lifetime_s)
    utterance = tone(400) + b"\x00" * 32000
    async with ws_serve(handler, "127.0.0.1", 0) as srv, asyncio.timeout(30):
        port = next(iter(srv.sockets)).getsockname()[1]
        async with connect(f"ws://127.0.0.1:{port}/ws/x") as ws:
            await ws.send(gw.dumps(setup))
            async for raw in ws:  # to the agent's hang-up (sent faster than real time: under a second)
                assert isinstance(raw, str)
                frames.append(raw)
                msg = gw.parse_server(raw)
                if msg.tool_call is not None:
                    fc = msg.tool_call.function_calls[0]
                    await ws.send(gw.dumps(gw.tool_response([(fc.id or "", fc.name or "", {"output": {}})])))
                if msg.server_content is not None and msg.server_content.turn_complete:
                    await asyncio.sleep(0.15)  # the goAway comes mid-call
                    with contextlib.suppress(ConnectionClosedOK):  # the agent may have hung up
                        for i in range(0, len(utterance), 640):  # over the agent's audio still playing
                            await ws.send(gw.realtime_audio(utterance[i : i + 640]))
    return frames


def test_every_message_the_served_agent_sends_validates_strictly() -> None:
    frames = asyncio.run(_raw_session(lifetime_s=0.2))
    parsed = [gt.LiveServerMessage.model_validate_json(f) for f in frames]  # strict: extra="forbid"
    seen = {
        name for m in parsed for name, value in m.model_dump(exclude_none=True).items() if value is not None
    }
    content = {
        name for m in parsed if m.server_content for name in m.server_content.model_dump(exclude_none=True)
    }
    assert {"setup_complete", "server_content", "tool_call", "usage_metadata", "go_away"} <= seen
    assert "session_resumption_update" in seen
    assert {
        "model_turn",
        "output_transcription",
        "turn_complete",
        "generation_complete",
        "interrupted",
    } <= content
