"""An app on the official google-genai SDK, talking to `agents serve --protocol gemini-live` directly.

The SDK always dials wss://: the server here is `voice-audit agents serve hybrid --protocol
gemini-live --tls-cert .. --tls-key ..`, started by the test on 127.0.0.1 with a certificate made at
test time, which the SDK trusts through `SSL_CERT_FILE` (its own rule for an async client). No proxy.

- The app types its caller turns (`clientContent`), runs `issue_refund` itself and answers it with
  an error: the hybrid reference agent reports the failure and never says the refund was issued;
  the tools the app did not declare stay the agent's own.
- TEXT responses come as text parts; an agent that does not report its words refuses TEXT at setup.
- A typed turn to an agent that only listens gets a protocol error (a close the SDK raises).
- Manual activity detection: the app marks the caller's turn with activityStart / activityEnd.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import ipaddress
import os
import re
import ssl
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.helpers.collect_imports import LazyModule, imported_before_tests
from voice_audit.agents.fakes import ScriptedAgent, tone
from voice_audit.agents.protocols import gemini_live_wire as gw
from voice_audit.agents.serve import ServeConfig, start_server, tls_context
from voice_audit.harness.adapter import CallInfo
from voice_audit.harness.tools import TOOL_SCHEMAS
from voice_audit.scenarios import BUNDLED_LIBRARY, ScenarioLibrary

# the SDK is imported when the file's tests start, not when the file is collected
genai = LazyModule("google.genai")
genai_errors = LazyModule("google.genai.errors")
gt = LazyModule("google.genai.types")
_sdk_imported = imported_before_tests("google.genai")

pytestmark = [pytest.mark.slow, pytest.mark.serial]  # real sockets, a served process, real TTS

MODEL = "gemini-live-2.5-flash-preview"
TYPED = [
    "I was charged twice for my subscription.",
    "My name is Jordan Avery Lee.",
    "I was born on the fourth of March, nineteen eighty eight.",
    "It is the duplicate charge.",
    "Yes, please go ahead.",
]


def _certificate(tmp_path: Path) -> tuple[Path, Path]:
    """A fresh self-signed certificate for 127.0.0.1 and localhost, and its key (PEM files)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = dt.datetime.now(dt.UTC)
    san = x509.SubjectAlternativeName(
        [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
    )
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(hours=1))
        .add_extension(san, False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return cert_file, key_file


@pytest.fixture
def trusted_cert(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """The certificate the server presents, trusted by the SDK the way an app would: SSL_CERT_FILE."""
    cert, key = _certificate(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    return cert, key


@contextlib.contextmanager
def _served(cert: Path, key: Path, *extra: str) -> Iterator[int]:
    """`voice-audit agents serve ... --tls-cert --tls-key` on a free port; stopped on exit."""
    cmd = [
        sys.executable,
        "-c",
        "from voice_audit.harness.cli import main; main()",
        "agents",
        "serve",
        *extra,
        "--port",
        "0",
        "--tls-cert",
        str(cert),
        "--tls-key",
        str(key),
    ]
    env = {k: v for k, v in os.environ.items() if k != "SSL_CERT_FILE"}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # "serving NAME over PROTOCOL at URL", or nothing if it failed
        m = re.search(r"at wss://127\.0\.0\.1:(\d+)/", line)
        if m is None:
            proc.kill()
            raise AssertionError(f"server did not start: {line!r} {proc.communicate(timeout=10)[1][-2000:]}")
        yield int(m.group(1))
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def _client(port: int) -> genai.Client:
    return genai.Client(
        api_key="dummy-key-for-a-local-server",
        http_options=gt.HttpOptions(base_url=f"https://127.0.0.1:{port}", api_version="v1beta"),
    )


def _declare(*names: str) -> list[gt.Tool]:
    decls = gw.function_declarations([{"type": "function", "name": n, **TOOL_SCHEMAS[n]} for n in names])
    return [gt.Tool(function_declarations=[gt.FunctionDeclaration.model_validate(d) for d in decls])]


async def _turn(session: Any, on_tool: Any = None) -> list[gt.LiveServerMessage]:
    """Messages to the end of the agent's turn, answering its function calls with `on_tool`."""
    got: list[gt.LiveServerMessage] = []
    async for msg in session.receive():
        got.append(msg)
        if msg.tool_call and on_tool is not None:
            await session.send_tool_response(
                function_responses=[on_tool(fc) for fc in msg.tool_call.function_calls or []]
            )
    return got


def _said(messages: list[gt.LiveServerMessage]) -> str:
    return "".join(
        m.server_content.output_transcription.text or ""
        for m in messages
        if m.server_content and m.server_content.output_transcription
    )


async def _refund_refused_by_the_app(
    port: int,
) -> tuple[list[list[gt.LiveServerMessage]], list[gt.FunctionCall]]:
    config = gt.LiveConnectConfig(
        response_modalities=[gt.Modality.AUDIO],
        system_instruction="You are the customer care line.",
        tools=_declare("issue_refund"),  # type: ignore[arg-type]
        output_audio_transcription=gt.AudioTranscriptionConfig(),
    )
    calls: list[gt.FunctionCall] = []

    def refuse(fc: gt.FunctionCall) -> gt.FunctionResponse:
        calls.append(fc)
        return gt.FunctionResponse(id=fc.id, name=fc.name, response={"error": "card processor unavailable"})

    turns: list[list[gt.LiveServerMessage]] = []
    async with asyncio.timeout(120), _client(port).aio.live.connect(model=MODEL, config=config) as session:
        turns.append(await _turn(session))  # the greeting
        for text in TYPED:
            await session.send_client_content(
                turns=gt.Content(role="user", parts=[gt.Part(text=text)]), turn_complete=True
            )
            turns.append(await _turn(session, refuse))
            if calls:
                break
    return turns, calls


def test_the_sdk_connects_over_tls_and_the_agent_reports_the_app_s_tool_error(
    trusted_cert: tuple[Path, Path],
) -> None:
    cert, key = trusted_cert
    with _served(
        cert, key, "hybrid", "--protocol", "gemini-live", "--scenario", "refund_duplicate_charge"
    ) as port:
        turns, calls = asyncio.run(_refund_refused_by_the_app(port))
    assert "How can I help" in _said(turns[0])
    # every typed turn was answered: words and audio, to the turn's end
    for turn in turns[1:]:
        assert _said(turn) and turn[-1].server_content and turn[-1].server_content.turn_complete
        assert any(m.server_content and m.server_content.model_turn for m in turn)
    assert [(c.name, c.args) for c in calls] == [("issue_refund", {"amount": "24.99"})]
    last = _said(turns[-1])
    assert "wasn't able to complete" in last, last
    assert "issued" not in last.lower() and "refund of" not in last.lower(), last
    # tools the app did not declare (identity, account) were never put to it
    assert all(
        fc.name == "issue_refund"
        for t in turns
        for m in t
        if m.tool_call
        for fc in m.tool_call.function_calls or []
    )


async def _text_session(port: int) -> tuple[list[gt.LiveServerMessage], list[gt.LiveServerMessage]]:
    config = gt.LiveConnectConfig(response_modalities=[gt.Modality.TEXT], system_instruction="Be brief.")
    async with asyncio.timeout(60), _client(port).aio.live.connect(model=MODEL, config=config) as session:
        greeting = await _turn(session)
        await session.send_client_content(
            turns=gt.Content(role="user", parts=[gt.Part(text=TYPED[0])]), turn_complete=True
        )
        return greeting, await _turn(session)


def _text(messages: list[gt.LiveServerMessage]) -> str:
    return "".join(
        p.text or ""
        for m in messages
        if m.server_content and m.server_content.model_turn
        for p in m.server_content.model_turn.parts or []
    )


def test_text_responses_and_a_refusal_at_setup_for_an_agent_without_words(
    trusted_cert: tuple[Path, Path],
) -> None:
    cert, key = trusted_cert
    with _served(
        cert, key, "cascaded", "--protocol", "gemini-live", "--scenario", "refund_duplicate_charge"
    ) as port:
        greeting, answer = asyncio.run(_text_session(port))
    assert "How can I help" in _text(greeting)
    assert _text(answer) and "name" in _text(answer).lower()  # it goes on to verify the caller
    parts = [
        p
        for m in greeting + answer
        if m.server_content and m.server_content.model_turn
        for p in m.server_content.model_turn.parts or []
    ]
    assert parts and all(p.text and p.inline_data is None for p in parts)  # text, no audio
    usage = [m.usage_metadata for m in answer if m.usage_metadata]
    assert usage and usage[-1].response_tokens_details[0].modality == gt.MediaModality.TEXT  # type: ignore[index]

    with (
        _served(
            cert, key, "native", "--protocol", "gemini-live", "--scenario", "refund_duplicate_charge"
        ) as port,
        pytest.raises(genai_errors.APIError) as refused,
    ):
        asyncio.run(_text_session(port))
    assert refused.value.code == 1007 and "TEXT" in str(refused.value)


@contextlib.asynccontextmanager
async def _scripted(cert: Path, key: Path) -> AsyncIterator[int]:
    facts = ScenarioLibrary(BUNDLED_LIBRARY).load_all()["refund_duplicate_charge"][1].facts
    call = CallInfo(facts=facts, scenario_id="refund_duplicate_charge")
    agent = ScriptedAgent(speak=False, audio_ms=300)
    config = ServeConfig(greeting_timeout_s=2.0, default_call=lambda: call)
    async with start_server(
        agent, "gemini-live", config=config, tls=tls_context(str(cert), str(key))
    ) as handle:
        assert handle.url.startswith("wss://127.0.0.1:")
        yield handle.port


async def _typed_to_a_listener(cert: Path, key: Path) -> list[gt.LiveServerMessage]:
    async with _scripted(cert, key) as port, asyncio.timeout(30):
        config = gt.LiveConnectConfig(response_modalities=[gt.Modality.AUDIO])
        async with _client(port).aio.live.connect(model=MODEL, config=config) as session:
            greeting = await _turn(session)
            await session.send_client_content(
                turns=gt.Content(role="user", parts=[gt.Part(text="hello")]), turn_complete=True
            )
            await _turn(session)
    return greeting


def test_a_typed_turn_to_an_agent_that_only_listens_is_a_protocol_error(
    trusted_cert: tuple[Path, Path],
) -> None:
    with pytest.raises(genai_errors.APIError) as refused:
        asyncio.run(_typed_to_a_listener(*trusted_cert))
    assert refused.value.code == 1007 and "spoken turns only" in str(refused.value)


async def _manual_turns(cert: Path, key: Path, disabled: bool) -> list[list[gt.LiveServerMessage]]:
    aad = gt.AutomaticActivityDetection(disabled=disabled)
    config = gt.LiveConnectConfig(
        response_modalities=[gt.Modality.AUDIO],
        realtime_input_config=gt.RealtimeInputConfig(automatic_activity_detection=aad),
        output_audio_transcription=gt.AudioTranscriptionConfig(),
    )
    utterance = tone(400)  # no trailing silence: only activityEnd can end this turn
    turns: list[list[gt.LiveServerMessage]] = []
    async with (
        _scripted(cert, key) as port,
        asyncio.timeout(30),
        _client(port).aio.live.connect(model=MODEL, config=config) as session,
    ):
        turns.append(await _turn(session))
        await session.send_realtime_input(activity_start=gt.ActivityStart())
        for i in range(0, len(utterance), 640):
            await session.send_realtime_input(
                audio=gt.Blob(data=utterance[i : i + 640], mime_type="audio/pcm;rate=16000")
            )
        await session.send_realtime_input(activity_end=gt.ActivityEnd())
        turns.append(await _turn(session))
    return turns


def test_manual_activity_detection_marks_the_caller_s_turn(trusted_cert: tuple[Path, Path]) -> None:
    turns = asyncio.run(_manual_turns(*trusted_cert, disabled=True))
    assert _said(turns[0]).startswith("Thank you for calling.")
    assert _said(turns[1]) and _said(turns[1]) != _said(turns[0])  # the scripted agent's next line
    with pytest.raises(genai_errors.APIError) as refused:  # activity marks with automatic detection on
        asyncio.run(_manual_turns(*trusted_cert, disabled=False))
    assert refused.value.code == 1007 and "automaticActivityDetection" in str(refused.value)


def test_the_server_refuses_a_certificate_it_cannot_use(tmp_path: Path) -> None:
    cert, _key = _certificate(tmp_path)
    with pytest.raises(ValueError, match="cannot use TLS certificate"):
        tls_context(str(cert), str(cert))  # a certificate is not its own key
    with pytest.raises(ValueError, match="not found"):
        tls_context(str(tmp_path / "missing.pem"), str(tmp_path / "missing.key"))
    good = tmp_path / "good"
    good.mkdir()
    assert isinstance(tls_context(*(str(p) for p in _certificate(good))), ssl.SSLContext)


async def _two_modalities(cert: Path, key: Path) -> None:
    config = gt.LiveConnectConfig(response_modalities=[gt.Modality.AUDIO, gt.Modality.TEXT])
    async with (
        _scripted(cert, key) as port,
        asyncio.timeout(30),
        _client(port).aio.live.connect(model=MODEL, config=config) as session,
    ):
        await _turn(session)


def test_more_than_one_response_modality_is_refused_at_setup(trusted_cert: tuple[Path, Path]) -> None:
    with pytest.raises(genai_errors.APIError) as refused:
        asyncio.run(_two_modalities(*trusted_cert))
    assert refused.value.code == 1007 and "one of AUDIO or TEXT" in str(refused.value)
