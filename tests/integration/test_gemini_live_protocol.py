"""The gemini-live adapter against scripted Live servers on 127.0.0.1 whose messages are built from
the google-genai SDK's own types: everything the adapter writes is validated strictly as the SDK's
`LiveClientMessage`; tool calls, goAway without a handle, refusals and failures map to the
harness's events and failure kinds; whole campaigns keep a silent or failing agent as an outcome."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.server import ServerConnection
from websockets.asyncio.server import serve as ws_serve
from websockets.exceptions import ConnectionClosed

from tests.helpers.collect_imports import LazyModule, imported_before_tests
from voice_audit.agents.protocols import GeminiLiveAdapter
from voice_audit.harness.adapter import (
    AgentError,
    AgentEvent,
    AudioOut,
    CallInfo,
    ErrorOut,
    HangupOut,
    HeardOut,
    SignalOut,
    TextOut,
    ToolCallOut,
    ToolResultOut,
    TurnEnd,
    UsageOut,
)
from voice_audit.harness.model.campaign import AgentSpec
from voice_audit.harness.planning import load_campaign
from voice_audit.harness.runlog import RunReader
from voice_audit.harness.runtime import CampaignRunner
from voice_audit.scenarios import BUNDLED_LIBRARY, ScenarioLibrary

# the SDK is imported when the file's tests start, not when the file is collected
gt = LazyModule("google.genai.types")
_sdk_imported = imported_before_tests("google.genai.types")

Script = Callable[[ServerConnection, list["gt.LiveClientMessage"]], Awaitable[None]]


def out(msg: gt.LiveServerMessage) -> str:
    return msg.model_dump_json(by_alias=True, exclude_none=True)


async def take(ws: ServerConnection, seen: list[gt.LiveClientMessage]) -> gt.LiveClientMessage:
    """The next client message, validated strictly by the SDK's type (a failure fails the test)."""
    msg = gt.LiveClientMessage.model_validate_json(await ws.recv())
    seen.append(msg)
    return msg


async def drain(ws: ServerConnection, seen: list[gt.LiveClientMessage]) -> None:
    try:
        while True:
            await take(ws, seen)
    except ConnectionClosed:
        pass


class Server:
    """A Live server that runs `script` on each connection and keeps what clients sent."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.seen: list[gt.LiveClientMessage] = []
        self.headers: list[dict[str, str]] = []
        self.paths: list[str] = []
        self.url = ""

    async def handler(self, ws: ServerConnection) -> None:
        assert ws.request is not None
        self.headers.append({k.lower(): v for k, v in ws.request.headers.raw_items()})
        self.paths.append(ws.request.path)
        with contextlib.suppress(ConnectionClosed):
            await self.script(ws, self.seen)

    async def __aenter__(self) -> Server:
        self._cm = ws_serve(self.handler, "127.0.0.1", 0)
        srv = await self._cm.__aenter__()
        self.url = f"ws://127.0.0.1:{next(iter(srv.sockets)).getsockname()[1]}/ws/bidi"
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._cm.__aexit__(None, None, None)


def _call() -> CallInfo:
    facts = ScenarioLibrary(BUNDLED_LIBRARY).load_all()["refund_duplicate_charge"][1].facts
    return CallInfo(facts=facts, scenario_id="refund_duplicate_charge", call_id="CA" + "0" * 32)


async def _events(session: Any, limit_s: float = 10.0) -> list[AgentEvent]:
    got: list[AgentEvent] = []
    async with asyncio.timeout(limit_s):
        async for ev in session.events():
            got.append(ev)
    return got


PCM = b"\x01\x02" * 2400  # 100 ms at 24 kHz


async def a_turn_with_a_tool_call(ws: ServerConnection, seen: list[gt.LiveClientMessage]) -> None:
    setup = await take(ws, seen)
    assert setup.setup is not None
    await ws.send(out(gt.LiveServerMessage(setup_complete=gt.LiveServerSetupComplete(session_id="sess-42"))))
    await take(ws, seen)  # caller audio
    await ws.send(
        out(
            gt.LiveServerMessage(
                server_content=gt.LiveServerContent(
                    input_transcription=gt.Transcription(text="I was charged "), interrupted=None
                )
            )
        )
    )
    await ws.send(
        out(
            gt.LiveServerMessage(
                server_content=gt.LiveServerContent(input_transcription=gt.Transcription(text="twice"))
            )
        )
    )
    call = gt.FunctionCall(id="fc-1", name="issue_refund", args={"amount": "24.99"})
    bad = gt.FunctionCall(id="fc-2", name="crm_lookup", args=None)
    await ws.send(out(gt.LiveServerMessage(tool_call=gt.LiveServerToolCall(function_calls=[call, bad]))))
    answer = await take(ws, seen)
    while answer.tool_response is None:
        answer = await take(ws, seen)
    parts = [gt.Part(inline_data=gt.Blob(data=PCM, mime_type="audio/pcm;rate=24000"))]
    for text in ("I have issued", " the refund."):
        await ws.send(
            out(
                gt.LiveServerMessage(
                    server_content=gt.LiveServerContent(
                        model_turn=gt.Content(role="model", parts=parts),
                        output_transcription=gt.Transcription(text=text),
                    )
                )
            )
        )
    await ws.send(
        out(
            gt.LiveServerMessage(
                server_content=gt.LiveServerContent(turn_complete=True),
                usage_metadata=gt.UsageMetadata(prompt_token_count=7, response_token_count=9),
            )
        )
    )
    await ws.send(out(gt.LiveServerMessage(go_away=gt.LiveServerGoAway(time_left="0.2s"))))
    await asyncio.sleep(0.3)
    await ws.close(1000, "bye")
    await drain(ws, seen)


def test_a_turn_with_tool_calls_and_what_the_client_wrote(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEST_GEMINI_KEY", "k-123")

    async def run() -> tuple[Server, list[AgentEvent], str]:
        async with Server(a_turn_with_a_tool_call) as srv:
            spec = AgentSpec(
                name="g",
                adapter="gemini-live",
                url=srv.url,
                options={"api_key_env": "TEST_GEMINI_KEY", "voice": "Kore", "model": "gemini-x"},
            )
            adapter = GeminiLiveAdapter(spec)
            session = await adapter.connect(_call())
            await session.send_audio(b"\x00\x01" * 320)
            await session.send_dtmf("5")
            got = await _events(session)
            await adapter.aclose()
            return srv, got, session.session_id

    srv, got, session_id = asyncio.run(run())
    assert session_id == "sess-42"
    assert srv.headers[0]["x-goog-api-key"] == "k-123" and "k-123" not in srv.url
    setup = srv.seen[0].setup
    assert setup is not None and setup.model == "models/gemini-x"
    assert setup.generation_config and setup.generation_config.speech_config
    assert setup.generation_config.speech_config.voice_config
    assert setup.generation_config.speech_config.voice_config.prebuilt_voice_config
    assert setup.generation_config.speech_config.voice_config.prebuilt_voice_config.voice_name == "Kore"
    assert isinstance(setup.system_instruction, gt.Content) and setup.system_instruction.parts
    assert '<facts scenario="refund_duplicate_charge" call_id="CA' in (
        setup.system_instruction.parts[0].text or ""
    )
    assert setup.tools and setup.tools[0].function_declarations
    assert "issue_refund" in {d.name for d in setup.tools[0].function_declarations}
    audio = srv.seen[1].realtime_input
    assert audio and audio.audio and audio.audio.data == b"\x00\x01" * 320
    sent = [m for m in srv.seen if m.realtime_input and m.realtime_input.text]
    assert sent and sent[0].realtime_input and sent[0].realtime_input.text == "DTMF 5"
    answer = next(m.tool_response for m in srv.seen if m.tool_response)
    assert answer and answer.function_responses
    responses = {r.id: (r.name, r.response) for r in answer.function_responses}
    assert responses["fc-1"][0] == "issue_refund" and "output" in (responses["fc-1"][1] or {})
    assert responses["fc-2"][0] == "crm_lookup"
    kinds = [type(e).__name__ for e in got]
    assert kinds.index("HeardOut") < kinds.index("ToolCallOut") < kinds.index("AudioOut")
    assert [e for e in got if isinstance(e, HeardOut)] == [HeardOut("I was charged twice")]
    calls = [e for e in got if isinstance(e, ToolCallOut)]
    assert [(c.call_id, c.name, c.arguments) for c in calls] == [
        ("fc-1", "issue_refund", {"amount": "24.99"}),
        ("fc-2", "crm_lookup", {}),
    ]
    results = {e.call_id: e for e in got if isinstance(e, ToolResultOut)}
    assert results["fc-1"].ok and "refund_id" in results["fc-1"].result_keys
    audio_out = [e for e in got if isinstance(e, AudioOut)]
    assert len(audio_out) == 2 and all(e.sample_rate == 24000 and e.pcm == PCM for e in audio_out)
    assert [e for e in got if isinstance(e, TextOut)] == [TextOut("I have issued the refund.")]
    assert any(isinstance(e, TurnEnd) for e in got)
    usage = next(e for e in got if isinstance(e, UsageOut))
    assert dict(usage.quantities) == {"input_tokens": 7.0, "output_tokens": 9.0} and usage.model == "gemini-x"
    away = next(e for e in got if isinstance(e, SignalOut) and e.name == "go_away")
    assert away.detail == {"time_left_s": 0.2, "resumable": False}  # no handle: no reconnect
    assert len(srv.headers) == 1
    assert isinstance(got[-1], HangupOut)
    ends = [m for m in srv.seen if m.realtime_input and m.realtime_input.audio_stream_end]
    assert not ends  # the server ended the call, the client had nothing to end


async def refuse(ws: ServerConnection, seen: list[gt.LiveClientMessage]) -> None:
    await take(ws, seen)
    await ws.close(1008, "API key not valid. Please pass a valid API key.")


async def mute(ws: ServerConnection, seen: list[gt.LiveClientMessage]) -> None:
    await drain(ws, seen)  # takes the setup, never answers it


async def fail_then(
    ws: ServerConnection, seen: list[gt.LiveClientMessage], code: int, frame: str | None
) -> None:
    await take(ws, seen)
    await ws.send(out(gt.LiveServerMessage(setup_complete=gt.LiveServerSetupComplete())))
    await take(ws, seen)
    if frame is not None:
        await ws.send(frame)
        await drain(ws, seen)
    else:
        await ws.close(code, "Internal error encountered.")


@pytest.mark.parametrize(
    ("script", "kind", "words"),
    [
        (refuse, "connect_failed", "API key not valid"),
        (mute, "connect_failed", "setupComplete"),
    ],
)
def test_a_session_the_server_will_not_set_up_is_connect_failed(
    script: Script, kind: str, words: str
) -> None:
    async def run() -> AgentError:
        async with Server(script) as srv:
            adapter = GeminiLiveAdapter(
                AgentSpec(name="g", adapter="gemini-live", url=srv.url, options={"setup_timeout_s": 1})
            )
            with pytest.raises(AgentError) as info:
                await adapter.connect(_call())
            return info.value

    err = asyncio.run(run())
    assert err.kind == kind and words in err.message


@pytest.mark.parametrize(
    ("code", "frame", "kind"),
    [
        (1011, None, "agent_error"),
        (
            1000,
            '{"serverContent":{"modelTurn":{"parts":[{"inlineData":{"mimeType":"audio/pcm","data":"**"}}]}}}',
            "malformed_frame",
        ),
        (1000, "not json", "malformed_frame"),
        (1000, '{"serverContent":{"turnComplete":"yes"}}', "malformed_frame"),  # a field of the wrong type
    ],
)
def test_failures_after_setup_keep_their_kind(code: int, frame: str | None, kind: str) -> None:
    async def script(ws: ServerConnection, seen: list[gt.LiveClientMessage]) -> None:
        await fail_then(ws, seen, code, frame)

    async def run() -> list[AgentEvent]:
        async with Server(script) as srv:
            adapter = GeminiLiveAdapter(AgentSpec(name="g", adapter="gemini-live", url=srv.url))
            session = await adapter.connect(_call())
            await session.send_audio(b"\x00" * 640)
            return await _events(session)

    got = asyncio.run(run())
    assert isinstance(got[-1], ErrorOut) and got[-1].kind == kind, got


def test_the_key_comes_from_a_named_variable_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("UNSET_GEMINI_KEY", raising=False)
    adapter = GeminiLiveAdapter(
        AgentSpec(
            name="g",
            adapter="gemini-live",
            url="ws://127.0.0.1:9/x",
            options={"api_key_env": "UNSET_GEMINI_KEY"},
        )
    )
    with pytest.raises(AgentError) as info:
        asyncio.run(adapter.connect(_call()))
    assert info.value.kind == "connect_failed" and "UNSET_GEMINI_KEY" in info.value.message
    with pytest.raises(AgentError, match="names an environment variable"):
        GeminiLiveAdapter(
            AgentSpec(name="g", adapter="gemini-live", options={"api_key_env": "AIza-not-a-name"})
        )
    public = GeminiLiveAdapter(AgentSpec(name="g", adapter="gemini-live"))
    assert public.url.startswith("wss://generativelanguage.googleapis.com/ws/")
    assert public.url.endswith(".GenerativeService.BidiGenerateContent")


CAMPAIGN = """\
name: gemini-non-service
seed: 9
scenarios: [refund_duplicate_charge]
agents:
  - {{name: silent, adapter: gemini-live, url: "{silent}"}}
  - {{name: broken, adapter: gemini-live, url: "{broken}"}}
pairs:
  - contrast: [accent]
    base: {{voice_profile: male_adult, affect: calm, disfluency: none, wording: plain}}
    a: {{accent: us_general}}
    b: {{accent: gb_rp}}
voices: 1
concurrency: 4
pacing: realtime
asr: {{name: pocketsphinx}}
patience: {{prompt_after_s: 1.5, prompts_before_human: 1, hang_up_after_s: 6}}
tts: {{name: espeak}}
"""


async def silent(ws: ServerConnection, seen: list[gt.LiveClientMessage]) -> None:
    await take(ws, seen)
    await ws.send(out(gt.LiveServerMessage(setup_complete=gt.LiveServerSetupComplete())))
    await drain(ws, seen)


async def broken(ws: ServerConnection, seen: list[gt.LiveClientMessage]) -> None:
    await take(ws, seen)
    await ws.send(out(gt.LiveServerMessage(setup_complete=gt.LiveServerSetupComplete())))
    for _ in range(100):  # two seconds of caller audio, then the service fails
        await take(ws, seen)
    await ws.close(1011, "Internal error encountered.")


@pytest.mark.serial  # real-time timing is asserted
def test_a_silent_or_failing_live_agent_is_an_outcome_with_its_pair_kept(
    tmp_path: Path, audio_cache: Path
) -> None:
    async def run() -> RunReader:
        async with Server(silent) as quiet, Server(broken) as failing:
            path = tmp_path / "c.yaml"
            path.write_text(CAMPAIGN.format(silent=quiet.url, broken=failing.url))
            runner = CampaignRunner(
                load_campaign(path),
                tmp_path / "run",
                cache_dir=audio_cache,
                progress=False,
                tts_pool_size=1,
            )
            summary = await runner.run()
            assert summary.statuses == {"completed": 4}, (summary.statuses, summary.failures)
            assert all(m.realtime_input or m.setup for m in quiet.seen + failing.seen)
        return RunReader(tmp_path / "run")

    reader = asyncio.run(run())
    flags = {}
    for rec in reader.records():
        assert rec.outcome.terminal_outcome == "unresolved"
        non = next(e for e in reader.events(rec.header.episode_id) if e.type == "non_service")
        flags.setdefault(rec.header.agent, set()).add((non.reason, non.kind))
    assert flags == {
        "silent": {("agent_unresponsive", None)},
        "broken": {("agent_error_event", "agent_error")},
    }


def test_each_go_away_moves_the_session_with_its_latest_handle() -> None:
    connections: list[str | None] = []

    async def moving(ws: ServerConnection, seen: list[gt.LiveClientMessage]) -> None:
        setup = (await take(ws, seen)).setup
        assert setup is not None and setup.session_resumption is not None
        connections.append(setup.session_resumption.handle)
        n = len(connections)
        await ws.send(
            out(gt.LiveServerMessage(setup_complete=gt.LiveServerSetupComplete(session_id=f"s{n}")))
        )
        update = gt.LiveServerSessionResumptionUpdate(new_handle=f"h{n}", resumable=True)
        await ws.send(out(gt.LiveServerMessage(session_resumption_update=update)))
        if n < 3:
            await ws.send(out(gt.LiveServerMessage(go_away=gt.LiveServerGoAway(time_left="5s"))))
            await drain(ws, seen)  # until the client leaves for its new connection
            return
        parts = [gt.Part(inline_data=gt.Blob(data=PCM, mime_type="audio/pcm;rate=24000"))]
        await ws.send(
            out(gt.LiveServerMessage(server_content=gt.LiveServerContent(model_turn=gt.Content(parts=parts))))
        )
        await ws.close(1000, "done")

    async def run() -> list[AgentEvent]:
        async with Server(moving) as srv:
            adapter = GeminiLiveAdapter(AgentSpec(name="g", adapter="gemini-live", url=srv.url))
            session = await adapter.connect(_call())
            return await _events(session)

    got = asyncio.run(run())
    assert connections == [None, "h1", "h2"]  # each new connection resumes from the latest handle
    resumed = [e for e in got if isinstance(e, SignalOut) and e.name == "session_resumed"]
    assert [e.detail["resumptions"] for e in resumed] == [1, 2]
    assert [e.detail["session_id"] for e in resumed] == ["s2", "s3"]
    assert any(isinstance(e, AudioOut) for e in got) and isinstance(got[-1], HangupOut)
